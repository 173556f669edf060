"""``streambench ab``'s rounds (harness/execution/rounds.py) when a side's adapter fails: the error names the
side it happened on first, since both sides often run one adapter (``faulty`` against ``faulty``), whose
name, stream and frame alone do not say which side failed."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app

SMALL = ["--base-adapter", "faulty", "--streams", "2", "--duration", "1", "--warmup-frames", "10",
         "--rounds", "2", "--streams-per-round", "1", "--budget-s", "0", "--no-progress"]  # fmt: skip
FAULT = ("fault=raise", "stream_index=1", "at_frame=5")


def error_line(*args: str) -> str:
    result = CliRunner().invoke(app, ["ab", *SMALL, *args], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.processes
@pytest.mark.parametrize("side", ["head", "base"])
def test_a_failing_side_is_named_before_the_adapter_stream_and_frame(side: str) -> None:
    planted = [arg for option in FAULT for arg in (f"--{side}-option", option)]
    line = error_line(*planted)
    assert line.startswith(f"error: {side}: adapter 'faulty', stream "), line
    assert "frame 5: predict() raised RuntimeError" in line
