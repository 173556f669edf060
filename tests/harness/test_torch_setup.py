"""A worker seeds and sizes torch when, and only if, the model imports it (harness/execution/torch_setup.py):
a numpy model's worker never loads torch, and a torch model's worker still builds it with the run's seed and
threads in force. Each check runs in a fresh interpreter, where torch is not yet imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from harness.datasets.synthetic import SyntheticConfig
from harness.execution.config import IsolationConfig, RunConfig
from harness.execution.engine import EngineConfig
from harness.execution.isolation import IsolatedEngine
from harness.execution.worker_process import WorkerCommand, default_pythonpath

ROOT = Path(__file__).resolve().parents[2]


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_torch_is_configured_right_after_its_first_import_and_not_imported_before() -> None:
    printed = _fresh(
        """
        import sys
        from harness.execution.torch_setup import configure_torch_when_imported
        from harness.instruments.threads import ThreadConfig
        configure_torch_when_imported(ThreadConfig(intra_op=1, env={"SB_TEST_VAR": "set"}), 1234)
        import os
        print("torch" in sys.modules, os.environ["SB_TEST_VAR"])
        import torch.nn  # a submodule first: torch itself is configured all the same
        finders = [f for f in sys.meta_path if type(f).__name__ == "_AfterImport"]
        print(torch.initial_seed(), torch.get_num_threads(), len(finders))
        """
    )
    assert printed.splitlines() == ["False set", "1234 1 0"]


def test_an_imported_torch_is_configured_at_once() -> None:
    printed = _fresh(
        """
        import torch
        torch.manual_seed(5)
        from harness.execution.torch_setup import configure_torch_when_imported
        from harness.instruments.threads import ThreadConfig
        configure_torch_when_imported(ThreadConfig(), 99)
        print(torch.initial_seed())
        """
    )
    assert printed == "99"


ADAPTER = """
import sys

from adapters.null import NullAdapter


class TorchProbe(NullAdapter):
    NAME = "probe"

    def __init__(self, options=None):
        super().__init__(options)
        loaded_before = "torch" in sys.modules
        import torch  # as a model that imports torch lazily, then draws random weights

        weight = float(torch.rand(1))
        self._info = self._info.model_copy(
            update={"name": f"before={loaded_before} seed={torch.initial_seed()} w={weight:.6f}"}
        )
"""


def test_a_worker_loads_torch_only_for_a_model_that_does_and_seeds_it(tmp_path: Path) -> None:
    import torch

    (tmp_path / "torch_probe.py").write_text(ADAPTER)
    data = SyntheticConfig(num_streams=1, duration_s=1.0)
    config = RunConfig(
        adapter="torch_probe:TorchProbe", data=data, engine=EngineConfig(warmup_frames=2), torch_seed=77
    )
    command = WorkerCommand(pythonpath=[str(tmp_path), *default_pythonpath()])
    with IsolatedEngine(config, IsolationConfig(), command=command) as engine:
        engine.warm_up()
        name = engine.info.name
    generator = torch.Generator().manual_seed(77)
    expected = float(torch.rand(1, generator=generator))
    assert name == f"before=False seed=77 w={expected:.6f}"
