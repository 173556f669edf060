"""Issue 7: an adapter failure is recorded with its stream, frame and traceback; --on-error continue
scores every other stream, stop ends the run with a partial result; each finished stream is in the event
log before the next one starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.event_log import EVENTS_FILE, read_events
from streambench.harness.execution.executor import NothingScoredError
from streambench.harness.results.files import load_recordings, load_result
from streambench.harness.runs.session import execute_run

ADAPTER = "tests.support:FailAtAdapter"


def config(tmp_path: Path, run_id: str = "run", **overrides: Any) -> RunConfig:
    base: dict[str, Any] = {
        "adapter": ADAPTER,
        "data": {"num_streams": 4, "duration_s": 5.0, "seed": 0},
        "engine": {"warmup_frames": 0},
        # the planted faults count the streams they are fed: the session audit's copies would shift them
        "protocol": {"bootstrap_resamples": 20, "audit": {"share": 0, "minimum": 0}},
        "output_dir": tmp_path,
        "run_id": run_id,
    }
    base.update(overrides)
    return RunConfig.model_validate(base)


@pytest.mark.processes
@pytest.mark.parametrize(
    ("fault", "error_type", "message"),
    [
        ("raise", "AdapterCallError", "predict() raised RuntimeError: planted failure at frame 7"),
        ("nan", "AdapterOutputError", "scores contain NaN or Inf"),
        ("shape", "AdapterOutputError", "scores have shape (1,), expected (29,)"),
    ],
)
def test_continue_records_the_failure_and_scores_every_other_stream(
    tmp_path: Path, fault: str, error_type: str, message: str
) -> None:
    options = {"stream": 1, "frame": 7, "fault": fault}
    result, recordings, run_dir = execute_run(config(tmp_path, adapter_options=options))
    assert result.status == "complete"
    (failure,) = result.failures
    assert (failure.stream_id, failure.frame, failure.error_type) == ("syn-0001", 7, error_type)
    assert message in failure.message
    if fault == "raise":
        assert "RuntimeError: planted failure at frame 7" in failure.traceback
        assert "tests/support.py" in failure.traceback  # the adapter's own frame is in it
    assert [r.stream_id for r in recordings] == ["syn-0000", "syn-0002", "syn-0003"]
    assert result.scored.model_dump() == {
        "planned_streams": 4,
        "scored_streams": 3,
        "scored_frames": 375,
        "failed_streams": 1,
        "failed_frames": 125,
        "failure_rule": "wrong",
        "predictions_beyond_end": 0,
    }
    # the failed stream is in the figures, as answered wrongly on its 125 frames (issue 24 item 5)
    assert result.metrics.overall.accuracy.num_frames == 500
    assert [(f.stream_id, f.frame) for f in result.metrics.failed] == [("syn-0001", 7)]
    assert [s.stream_id for s in result.metrics.streams] == ["syn-0000", "syn-0002", "syn-0003"]
    assert load_result(run_dir) == result
    assert [r.stream_id for r in load_recordings(run_dir)] == ["syn-0000", "syn-0002", "syn-0003"]
    log = read_events(run_dir)
    assert [r.stream_id for r in log.recordings] == ["syn-0000", "syn-0002", "syn-0003"]
    assert [f.stream_id for f in log.failures] == ["syn-0001"] and not log.torn_tail


@pytest.mark.processes
def test_stop_ends_the_run_and_keeps_what_was_measured(tmp_path: Path) -> None:
    options = {"stream": 2, "frame": 0}
    result, recordings, run_dir = execute_run(config(tmp_path, adapter_options=options, on_error="stop"))
    assert result.status == "incomplete"
    assert result.incomplete_reason is not None and "--on-error stop" in result.incomplete_reason
    assert [r.stream_id for r in recordings] == ["syn-0000", "syn-0001"]
    assert result.failures[0].stream_id == "syn-0002" and result.failures[0].frame == 0
    assert result.scored.scored_streams == 2 and result.scored.planned_streams == 4
    assert result.resources.flops_reason is not None and "not counted" in result.resources.flops_reason
    assert load_result(run_dir).status == "incomplete"


@pytest.mark.processes
def test_nothing_scored_is_a_clear_error_and_the_log_keeps_the_failures(tmp_path: Path) -> None:
    with pytest.raises(NothingScoredError, match=r"no test stream was scored \(stopped at the first"):
        execute_run(config(tmp_path, adapter_options={"stream": 0, "frame": 3}, on_error="stop"))
    log = read_events(tmp_path / "run")
    assert [(f.stream_id, f.frame) for f in log.failures] == [("syn-0000", 3)]
    assert not (tmp_path / "run" / "result.json").exists()


@pytest.mark.processes
def test_streams_are_logged_as_they_finish(tmp_path: Path) -> None:
    """The event log holds stream k before stream k + 1 starts: checked from inside the run."""
    seen: list[int] = []

    def progress(done: int, total: int, stream_id: str) -> None:
        lines = (tmp_path / "run" / EVENTS_FILE).read_text().splitlines()
        kinds = [json.loads(line)["kind"] for line in lines]
        seen.append(kinds.count("stream"))

    execute_run(config(tmp_path, adapter="reference"), progress)
    assert seen == [1, 2, 3, 4]


@pytest.mark.processes
def test_an_existing_run_id_is_refused(tmp_path: Path) -> None:
    execute_run(config(tmp_path, adapter="reference"))
    with pytest.raises(ValueError, match=r"a run with this id exists already; resume it with --resume"):
        execute_run(config(tmp_path, adapter="reference"))


@pytest.mark.processes
def test_cli_exit_codes_and_failure_summary(tmp_path: Path) -> None:
    args = ["run", "--adapter", ADAPTER, "--option", "stream=1", "--option", "frame=4", "--streams", "3"]
    args += ["--duration", "5", "--warmup-frames", "0", "--output-dir", str(tmp_path), "--no-progress"]
    args += ["--in-process"]  # FailAtAdapter counts the streams it is fed (the session audit adds copies)
    res = CliRunner().invoke(app, [*args, "--run-id", "cont"])
    assert res.exit_code == 1, res.output
    assert "syn-0001" in res.output and "frame 4" in res.output
    res = CliRunner().invoke(app, [*args, "--run-id", "stop", "--on-error", "stop"])
    assert res.exit_code == 1, res.output  # README: 1 when anything failed; 130 is Ctrl-C's (issue 18)
    assert "--resume" in res.output
    res = CliRunner().invoke(app, [*args, "--run-id", "bad", "--on-error", "sometimes"])
    assert res.exit_code == 2 and "on_error" in res.output
    scores = np.stack([r.scores for r in load_recordings(tmp_path / "cont")])
    assert scores.shape[0] == 2


def _first_frame_fingerprint(stream_id: str, cfg: RunConfig) -> str:
    from streambench.adapters.faulty import stream_fingerprint
    from streambench.harness.datasets.synthetic import make_streams

    stream = next(s for s in make_streams(cfg.data) if s.stream_id == stream_id)
    return stream_fingerprint(next(iter(stream.frames())))


@pytest.mark.processes
@pytest.mark.parametrize(
    ("fault", "error_type", "words"),
    [
        ("segv", "AdapterCrashError", "SIGSEGV"),
        ("exit", "AdapterCrashError", "exit"),
        ("hang", "AdapterTimeoutError", ""),
    ],
)
def test_isolated_run_survives_a_crash_or_hang_and_scores_the_rest(
    tmp_path: Path, fault: str, error_type: str, words: str
) -> None:
    cfg = config(tmp_path, adapter="faulty", isolate=True, isolation={"frame_timeout_s": 2.0})
    options = {"fault": fault, "at_frame": 9, "stream_fingerprint": _first_frame_fingerprint("syn-0002", cfg)}
    result, recordings, _ = execute_run(cfg.model_copy(update={"adapter_options": options}))
    assert result.execution.mode == "sealed" and result.status == "complete"  # the default worker
    (failure,) = result.failures
    assert (failure.stream_id, failure.frame, failure.error_type) == ("syn-0002", 9, error_type)
    assert words in failure.message
    assert [r.stream_id for r in recordings] == ["syn-0000", "syn-0001", "syn-0003"]
    assert "isolated worker" in result.resources.memory.peak_rss_method


@pytest.mark.processes
def test_isolated_and_in_process_runs_record_the_same_predictions(tmp_path: Path) -> None:
    inside, rec_in, _ = execute_run(config(tmp_path, "in", adapter="reference", isolate=False))
    unsealed = {"sealed": False}
    isolated, rec_iso, _ = execute_run(config(tmp_path, "iso", adapter="reference", isolation=unsealed))
    assert isolated.execution.mode == "isolated" and inside.execution.mode == "in-process"
    for a, b in zip(rec_in, rec_iso, strict=True):
        assert a.stream_id == b.stream_id
        np.testing.assert_array_equal(a.scores, b.scores)
        np.testing.assert_array_equal(a.refers_to, b.refers_to)
    a, b = inside.metrics.overall.accuracy, isolated.metrics.overall.accuracy
    assert a.curves["frame"] == b.curves["frame"] and a.curves["segment"] == b.curves["segment"]
    assert a.frame_accuracy == b.frame_accuracy
    assert isolated.resources.flops_per_frame == inside.resources.flops_per_frame


def test_options_of_the_online_protocol_only_are_refused_elsewhere() -> None:
    refused = [("causality", ["--in-process"]), ("hysteresis", ["--on-error", "stop"])]
    refused.append(("robustness", ["--on-error", "stop"]))
    for protocol, flags in refused:
        res = CliRunner().invoke(app, ["run", "--protocol", protocol, *flags, "--no-progress"])
        assert res.exit_code == 2 and f"do not apply to --protocol {protocol}" in res.output
