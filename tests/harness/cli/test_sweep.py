"""``streambench sweep`` (harness/cli/sweep.py): a bad file named; each run in its own process, so a
crash costs that run only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.runs.catalog import list_runs
from tests.harness.sweep.sweep_helpers import small_sweep
from tests.harness.sweep.test_spec import _write_toml

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)


def test_cli_names_the_file_of_a_bad_sweep(tmp_path: Path) -> None:
    path = _write_toml(tmp_path / "bad.toml", "[[adapters]]\nadapter = 'null'\n[protocols.offline]\n")
    result = CliRunner().invoke(app, ["sweep", str(path)])
    assert result.exit_code == 2
    assert "bad.toml" in result.output and "protocols.offline" in result.output
    good = _write_toml(tmp_path / "good.toml", "[[adapters]]\nadapter = 'null'\n[protocols.online]\n")
    wrong = CliRunner().invoke(app, ["sweep", str(good), "--executor", "slurm"])
    assert wrong.exit_code == 2 and "--executor 'slurm': expected local or ray" in wrong.output


def test_cli_sweep_runs_each_run_in_its_own_process_so_a_crash_costs_that_run_only(tmp_path: Path) -> None:
    """Issue 18: an adapter that ends its process (``os._exit``) in a plain (in-process) run: by default
    the sweep loses that run only; the runs after it are attempted and stored, the failure is reported."""
    import signal
    import subprocess
    import sys

    results = tmp_path / "results"
    exiting = {"adapter": "faulty", "label": "exits", "options": {"fault": "exit", "at_frame": 3}}
    tree = small_sweep(
        results,
        adapters=[
            exiting,
            {"adapter": "null", "label": "after-1"},
            {"adapter": "reference", "label": "after-2"},
        ],
        protocols={"online": {}},
    )
    tree["sweep"].update(baseline=None, retries=0)
    # a plain run is an in-process one since issue 24 (a sealed worker's death would not end the sweep's)
    tree["run"] = {**tree["run"], "isolate": False}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(tree))
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from streambench.harness.cli import main; main()",
            "sweep",
            str(path),
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, (out, err)
    assert "3 runs, 0 already in the store, 2 run now, 1 failed" in " ".join(out.split())
    assert "worker process lost" in err
    runs = {h.adapter for h in list_runs(results)}
    assert runs == {"null", "reference"}
