"""The FLOPs count of an isolated run (harness/execution/isolation.py, ``IsolatedEngine.count_flops``), taken
after the last stream: a worker that dies while counting leaves the figure null with the reason, as a
model failing in process does (``Engine.count_flops``), and never ends the run: its streams were measured,
and their result is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app

SMALL = ["--streams", "2", "--duration", "1", "--seed", "0", "--warmup-frames", "10", "--no-progress"]


@pytest.mark.processes
def test_a_worker_that_dies_while_counting_flops_leaves_them_null_and_the_result_written(
    tmp_path: Path,
) -> None:
    adapter = "tests.harness.execution.flops_crash_adapter:FlopsCrashAdapter"
    args = ["run", "--adapter", adapter, "--output-dir", str(tmp_path), "--run-id", "r", *SMALL]
    result = CliRunner().invoke(app, [*args, "--no-report"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "r" / "result.json").read_text())
    assert saved["failures"] == [] and saved["scored"]["scored_streams"] == 2
    assert saved["resources"]["flops_per_frame"] is None
    reason = saved["resources"]["flops_reason"]
    assert reason.startswith("not counted: "), reason
    assert "killed by SIGSEGV" in reason, reason
