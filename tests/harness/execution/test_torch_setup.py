"""A worker seeds and sizes torch when, and only if, the model imports it (harness/execution/torch_setup.py):
a numpy model's worker never loads torch, and a torch model's worker still builds it with the run's seed and
threads in force. Each check runs in a fresh interpreter, where torch is not yet imported."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.worker_process import WorkerCommand, default_pythonpath

ROOT = Path(__file__).resolve().parents[3]


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.processes
def test_torch_is_configured_right_after_its_first_import_and_not_imported_before() -> None:
    # intra_op = cores + 1 is never torch's default, so the thread count read back proves it was applied
    printed = _fresh(
        """
        import importlib.util, os, sys
        from streambench.harness.execution.torch_setup import configure_torch_when_imported
        from streambench.harness.instruments.threads import ThreadConfig
        threads = os.cpu_count() + 1
        config = ThreadConfig(intra_op=threads, env={"SB_TEST_VAR": "set"})
        check = configure_torch_when_imported(config, 1234)
        print("torch" in sys.modules, os.environ["SB_TEST_VAR"])
        assert importlib.util.find_spec("torch") is not None  # a probe ("is torch installed?") first
        import torch.nn  # then a submodule: torch itself is configured all the same
        check()
        finders = [f for f in sys.meta_path if type(f).__name__ == "_AfterImport"]
        print(torch.initial_seed(), torch.get_num_threads() == threads, len(finders))
        """
    )
    assert printed.splitlines() == ["False set", "1234 True 0"]


@pytest.mark.processes
def test_a_torch_imported_behind_the_hooks_back_is_reported() -> None:
    # a loader the hook cannot wrap (here: the finder taken out by hand) leaves torch unseeded: the check
    # the worker runs after building the model says so instead of measuring an unseeded model
    printed = _fresh(
        """
        import sys
        from streambench.harness.execution.torch_setup import configure_torch_when_imported
        from streambench.harness.instruments.threads import ThreadConfig
        check = configure_torch_when_imported(ThreadConfig(), 1)
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_AfterImport"]
        import torch
        try:
            check()
        except RuntimeError as exc:
            print(exc)
        """
    )
    assert "torch was imported without the run's seed" in printed


@pytest.mark.processes
def test_an_imported_torch_is_configured_at_once() -> None:
    printed = _fresh(
        """
        import torch
        torch.manual_seed(5)
        from streambench.harness.execution.torch_setup import configure_torch_when_imported
        from streambench.harness.instruments.threads import ThreadConfig
        configure_torch_when_imported(ThreadConfig(), 99)
        print(torch.initial_seed())
        """
    )
    assert printed == "99"


ADAPTER = """
import sys

from streambench.adapters.null import NullAdapter


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


@pytest.mark.processes
def test_a_worker_loads_torch_only_for_a_model_that_does_and_seeds_it(tmp_path: Path) -> None:
    import torch

    (tmp_path / "torch_probe.py").write_text(ADAPTER)
    data = SyntheticConfig(seed=0, num_streams=1, duration_s=1.0)
    config = RunConfig(
        adapter="torch_probe:TorchProbe", data=data, engine=EngineConfig(warmup_frames=2), torch_seed=77
    )
    command = WorkerCommand(pythonpath=[str(tmp_path), *default_pythonpath()])
    with IsolatedEngine(config, IsolationConfig(sealed=False), command=command) as engine:
        engine.warm_up()
        name = engine.info.name
    generator = torch.Generator().manual_seed(77)
    expected = float(torch.rand(1, generator=generator))
    assert name == f"before=False seed=77 w={expected:.6f}"


@pytest.mark.slow
def test_the_check_reads_the_models_threads_and_modules_once_built() -> None:
    # issue 27: an adapter that sets its own thread count while it is built keeps it, and the check says so;
    # the modules the build loaded (torch here) are told apart from those loaded before
    printed = _fresh(
        """
        import json
        from streambench.harness.execution.torch_setup import configure_torch_when_imported
        from streambench.harness.instruments.threads import ThreadConfig
        check = configure_torch_when_imported(ThreadConfig(), 1)
        import torch  # the model's import: the run's single thread is applied here
        applied = torch.get_num_threads()
        torch.set_num_threads(3)  # the model's own choice, in its constructor
        seen = check()
        print(json.dumps([applied, seen.model_dump(mode="json")]))
        """
    )
    applied, seen = json.loads(printed.splitlines()[-1])
    assert applied == 1
    assert seen["threads"]["torch_imported"] is True and seen["threads"]["process"] == "worker"
    assert (seen["threads"]["intra_op"], seen["threads"]["applied_intra_op"]) == (3, 1)
    assert "torch" in seen["new_modules"] and "torch" in seen["modules"]
    assert "streambench" in seen["modules"] and "streambench" not in seen["new_modules"]
    assert not {"json", "sys", "os"} & set(seen["modules"])  # the standard library is left out


@pytest.mark.slow
def test_a_model_without_torch_is_reported_without_it() -> None:
    printed = _fresh(
        """
        import json
        from streambench.harness.execution.torch_setup import configure_torch_when_imported
        from streambench.harness.instruments.threads import ThreadConfig
        check = configure_torch_when_imported(ThreadConfig(), 1)
        import numpy  # the model's only library
        print(json.dumps(check().model_dump(mode="json")))
        """
    )
    seen = json.loads(printed.splitlines()[-1])
    assert seen["threads"]["torch_imported"] is False and seen["threads"]["intra_op"] is None
    assert "torch" not in seen["modules"]
