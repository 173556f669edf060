"""Bytes on the worker's pipe end neither ``streambench run`` nor ``streambench ab`` with ``error:
Expecting value: line 1 column 1`` (nor, unframed, with a wait forever): ``run`` records that stream's
failure and goes on; ``ab``, whose every round must run, stops with one clear error naming the adapter,
the stream, the frame and the invalid reply (adapters/faulty.py plants the bytes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.adapters.faulty import stream_fingerprint
from streambench.harness.cli import app
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams

pytestmark = pytest.mark.slow  # sealed workers, restarted after each invalid reply

SMALL = ["--streams", "3", "--duration", "2", "--seed", "0", "--warmup-frames", "10", "--no-progress"]
SECOND = make_streams(SyntheticConfig(num_streams=3, duration_s=2.0, seed=0))[1]
"""The stream to fault on, named by its first frame: every worker, restarted or not, faults on it."""


@pytest.mark.parametrize("fault", ["garbage", "raw"])
def test_run_records_the_invalid_reply_as_one_streams_failure(tmp_path: Path, fault: str) -> None:
    chosen = f"stream_fingerprint={stream_fingerprint(next(iter(SECOND.frames())))}"
    options = ["--option", f"fault={fault}", "--option", chosen, "--option", "at_frame=4"]
    args = ["run", "--adapter", "faulty", *options, "--output-dir", str(tmp_path), "--run-id", "r", *SMALL]
    result = CliRunner().invoke(app, [*args, "--no-report", "--json"], env={"COLUMNS": "200"})
    assert result.exit_code == 1, result.output  # a failed stream
    assert "Expecting value" not in result.output
    document = json.loads(result.output)
    assert document["exit_code"] == 1
    saved = json.loads((tmp_path / "r" / "result.json").read_text())
    (failure,) = saved["failures"]
    assert failure["stream_id"] == SECOND.stream_id and failure["frame"] == 4
    assert failure["error_type"] == "AdapterWorkerError"
    assert "the worker's reply was not valid" in failure["message"]
    assert saved["status"] == "complete" and saved["scored"]["scored_streams"] == 2


@pytest.mark.parametrize("fault", ["garbage", "raw"])
def test_ab_stops_with_one_clear_error(fault: str) -> None:
    side = ["--base-adapter", "faulty", "--base-option", f"fault={fault}", "--base-option", "stream_index=1"]
    args = ["ab", *side, "--base-option", "at_frame=3", "--rounds", "2", "--restart-every", "0"]
    result = CliRunner().invoke(app, [*args, "--streams-per-round", "1", *SMALL], env={"COLUMNS": "300"})
    assert result.exit_code == 2, result.output
    assert "Expecting value" not in result.output and "Traceback" not in result.output
    assert "adapter 'faulty', stream 'syn-0000', frame 3: the worker's reply was not valid" in result.output
