"""A sealed worker's import path (harness/execution/worker_paths.py): the side's own directories first,
no start-up hook before the sandbox, the site directories' .pth files after it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution import worker_paths as paths_module
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.sandbox import landlock_abi
from streambench.harness.execution.worker_paths import (
    WorkerPaths,
    harness_root,
    pth_dirs,
    start_hooks,
    worker_paths,
)
from streambench.harness.execution.worker_process import WorkerCommand

ABI, WHY = landlock_abi()


def test_a_sides_own_directories_are_all_its_adapter_searches(tmp_path: Path) -> None:
    own = worker_paths([str(tmp_path)])
    assert own.adapter == [str(tmp_path)]
    assert own.harness[0] == harness_root() and set(own.site) <= set(own.harness)


def test_without_its_own_directories_the_working_directory_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    found = worker_paths()
    assert found.adapter[0] == str(tmp_path)  # as python -m looks
    assert all(os.path.isdir(p) for p in found.adapter)


def test_start_up_hooks_on_the_path_are_named(tmp_path: Path) -> None:
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "sitecustomize.py").write_text("")
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "paths.pth").write_text("/some/dir\n")  # a path line: no code
    (tmp_path / "site" / "hook.pth").write_text("import os; os.getpid()\n")
    found = start_hooks(
        WorkerPaths(harness=[], site=[str(tmp_path / "site")], adapter=[str(tmp_path / "own")])
    )
    assert found == [str(tmp_path / "own" / "sitecustomize.py"), str(tmp_path / "site" / "hook.pth")]


def test_directories_a_pth_file_names_are_on_the_harness_path_without_running_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment that keeps its dependencies elsewhere (a .pth path line, as a borrowed or editable
    install does) still imports the harness before the sandbox; the file's import line does not run."""
    site_dir, borrowed, relative = tmp_path / "site", tmp_path / "borrowed", tmp_path / "site" / "rel"
    for directory in (site_dir, borrowed, relative):
        directory.mkdir(parents=True, exist_ok=True)
    (site_dir / "a.pth").write_text(f"# a comment\n{borrowed}\nrel\n{tmp_path / 'missing'}\nimport nothing\n")
    assert pth_dirs(str(site_dir)) == [str(borrowed), str(relative)]
    monkeypatch.setattr(paths_module, "site_dirs", lambda: [str(site_dir)])
    found = worker_paths([str(tmp_path)])
    assert str(borrowed) in found.harness and str(relative) in found.harness
    assert found.site == [str(site_dir)]


PROBE = """
import sys

from streambench.adapters.null import NullAdapter


class Probe(NullAdapter):
    def __init__(self, options=None):
        import pth_added  # importable only through the .pth file's path line

        hook = sys.modules.get("pth_hook")
        type(self).NAME = f"probe:{pth_added.VALUE}:{getattr(hook, 'OUTCOME', 'no hook')}"
        super().__init__(options)
"""

HOOK = """
OUTCOME = "wrote outside"
try:
    with open({outside!r}, "w") as marker:
        marker.write("a .pth file ran outside the sandbox")
except OSError as exc:
    OUTCOME = type(exc).__name__
"""


@pytest.mark.processes
@pytest.mark.skipif(ABI < 1, reason=f"Landlock is unavailable on this machine: {WHY}")
def test_no_start_up_hook_of_the_models_directory_runs_before_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: a sitecustomize.py beside the model (run by ``site`` at start-up, before the sandbox,
    when the directory is on the worker's path) and a .pth file in a site directory (run by ``site`` too).
    Neither may run unconfined: the first never runs, the second runs inside the sandbox, where it cannot
    write outside, and its path line still works."""
    outside = tmp_path / "outside"
    outside.mkdir()
    model = tmp_path / "model"
    model.mkdir()
    (model / "hook_probe.py").write_text(PROBE)
    (model / "sitecustomize.py").write_text(
        f"open({str(outside / 'sitecustomize-ran')!r}, 'w').write('before the sandbox')\n"
    )
    extra, site_dir = tmp_path / "extra", tmp_path / "site"
    extra.mkdir()
    site_dir.mkdir()
    (extra / "pth_added.py").write_text("VALUE = 'found'\n")
    (extra / "pth_hook.py").write_text(HOOK.format(outside=str(outside / "pth-ran")))
    (site_dir / "probe.pth").write_text(f"{extra}\nimport pth_hook\n")
    real_site_dirs = paths_module.site_dirs
    monkeypatch.setattr(paths_module, "site_dirs", lambda: [*real_site_dirs(), str(site_dir)])
    monkeypatch.syspath_prepend(str(model))  # on this process's path too: an old worker inherited it
    monkeypatch.syspath_prepend(str(extra))  # as this process's own site processing added it
    config = RunConfig(
        adapter="hook_probe:Probe",
        data=SyntheticConfig(seed=1, num_streams=1, duration_s=1.0),
        engine=EngineConfig(warmup_frames=5),
        isolation=IsolationConfig(sealed=True),
    )
    with IsolatedEngine(config, config.isolation, command=WorkerCommand(pythonpath=[str(model)])) as worker:
        worker.warm_up()
        name = worker.info.name
        hooks = worker.start_hooks
        assert worker.sandbox is not None and worker.sandbox.status == "sandboxed"
    assert not (outside / "sitecustomize-ran").exists()  # never ran
    assert not (outside / "pth-ran").exists()  # ran confined
    assert name == "probe:found:PermissionError"
    assert str(model / "sitecustomize.py") in hooks and str(site_dir / "probe.pth") in hooks
