"""What the light commands import (harness/cli/__init__.py: each command imports its machinery inside the
command): ``--help``, ``runs``, ``show`` of an indexed run, ``adapters`` and ``data`` start without torch,
the engine, the run session, the online protocol's scoring or the result files' models. Which modules, not
how long: the time is benchmarks/test_cli_startup.py's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import quick_run

HEAVY = (
    "torch",
    "scipy",
    "matplotlib",
    "streambench.harness.execution.engine",
    "streambench.harness.runs.session",
    "streambench.harness.runs.online",
    "streambench.protocols.online",
    "streambench.harness.results.files",
    "streambench.adapters.offenders",
)
"""What no light command imports."""


def imported(argv: list[str], cwd: Path) -> set[str]:
    """The modules the ``streambench`` command ``argv`` imports (``python -X importtime``, a fresh
    interpreter), after checking it succeeds."""
    code = "from streambench.harness.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {line.rsplit("|", 1)[1].strip() for line in lines[1:]}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run, indexed as ``run`` indexes it."""
    root = tmp_path_factory.mktemp("startup") / "results"
    quick_run(root, "listed")
    return root


HELP = {"streambench.harness", "streambench.harness.io", "streambench.harness.io.safe_text"} | {
    "streambench.harness.runs",
    "streambench.harness.runs.registry",
}
"""What ``--help`` imports of ours besides the command line: the commands' names and options."""
LISTING = {
    "streambench.harness",
    "streambench.harness.datasets",
    "streambench.harness.datasets.provenance",  # the headline's framing
    "streambench.harness.io",
    "streambench.harness.io.safe_text",
    "streambench.harness.io.store_layout",
    "streambench.harness.results",
    "streambench.harness.results.headline",
    "streambench.harness.results.markdown",
    "streambench.harness.results.quality",
    "streambench.harness.results.store",
    "streambench.harness.runs",
    "streambench.harness.runs.catalog",
    "streambench.harness.runs.listing",
    "streambench.harness.runs.registry",
}
"""What ``runs`` and ``show`` of an indexed run import of ours besides the command line: the index and the
headline's models (no data set reader, no protocol, no result file's model)."""


@pytest.mark.processes
@pytest.mark.parametrize(
    ("argv", "ours"),
    [
        (["--help"], HELP),
        (["runs"], LISTING),
        (["show", "listed"], LISTING),
        (["adapters"], None),
        (["data"], None),
    ],
    ids=["--help", "runs", "show", "adapters", "data"],
)
def test_a_light_command_imports_no_machinery(
    argv: list[str], ours: set[str] | None, results: Path, tmp_path: Path
) -> None:
    """None of :data:`HEAVY`; and for ``--help`` (no numpy either), ``runs`` and ``show``, of ours exactly
    what they need."""
    if argv[0] in ("runs", "show"):
        argv = [*argv, "--results-dir", str(results)]
    modules = imported(argv, tmp_path)
    assert "streambench.harness.cli" in modules  # the check sees the command's imports
    assert sorted(set(HEAVY) & modules) == []
    if ours is not None:
        assert {m for m in modules if m.startswith("streambench.") and ".cli" not in m} == ours
    assert argv[0] != "--help" or "numpy" not in modules
