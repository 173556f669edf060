"""Issue 7: an interrupted run writes a partial result marked incomplete; ``--resume`` finishes it with
the same configuration and seeds and gets the metrics an uninterrupted run gets; the same configuration
gives byte-identical metric sections (timings aside)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.event_log import EVENTS_FILE, EventLogError, read_events
from streambench.harness.results.files import RunResult, load_result
from streambench.harness.runs.session import execute_run, resume_run

TIMING_CURVES = ("frame_replay", "frame_paced")


def timing_free(result: RunResult) -> str:
    """The metric section without what depends on the clock: latency, RTF, compute-aware curves, and the
    event figures (scored on the computation-aware clock: a detection counts from its completion)."""
    metrics: dict[str, Any] = result.metrics.model_dump(mode="json")
    metrics.pop("events", None)
    for key in ("mean_latency_ms", "rtf", "latency_spread", "warnings"):
        metrics["headline"].pop(key)
    for score in (metrics["overall"], *metrics["streams"]):
        score.pop("speed")
        for unit in TIMING_CURVES:
            score["accuracy"]["curves"].pop(unit, None)
    return json.dumps(metrics, sort_keys=True)


def config(
    tmp_path: Path,
    run_id: str,
    streams: int = 6,
    resamples: int = 50,
    seed: int | None = 0,
    duration_s: float = 5.0,
) -> RunConfig:
    return RunConfig.model_validate(
        {
            "data": {"num_streams": streams, "duration_s": duration_s, "seed": seed},
            "engine": {"warmup_frames": 20},
            "protocol": {"bootstrap_resamples": resamples},
            "output_dir": tmp_path,
            "run_id": run_id,
        }
    )


@pytest.mark.processes
def test_same_configuration_gives_identical_metrics(tmp_path: Path) -> None:
    first, _, _ = execute_run(config(tmp_path, "a", streams=3))
    second, _, _ = execute_run(config(tmp_path, "b", streams=3))
    assert timing_free(first) == timing_free(second)
    assert first.metrics.overall.speed != second.metrics.overall.speed  # timings do differ


@pytest.mark.processes
def test_interrupt_then_resume_equals_an_uninterrupted_run(tmp_path: Path) -> None:
    whole, _, _ = execute_run(config(tmp_path, "whole"))

    def interrupt_after_two(done: int, total: int, stream_id: str) -> None:
        if done == 2:
            raise KeyboardInterrupt

    partial, recordings, run_dir = execute_run(config(tmp_path, "cut"), interrupt_after_two)
    assert partial.status == "incomplete" and partial.incomplete_reason == "interrupted (KeyboardInterrupt)"
    assert [r.stream_id for r in recordings] == ["syn-0000", "syn-0001"]
    assert load_result(run_dir).scored.scored_streams == 2

    resumed, recordings, _ = resume_run(run_dir)
    assert resumed.status == "complete" and resumed.execution.sessions == 2
    assert [r.stream_id for r in recordings] == [f"syn-{k:04d}" for k in range(6)]
    assert resumed.created_at == partial.created_at and resumed.run_id == "cut"
    assert resumed.resources.frames_measured == 4 * 125  # this session's window only
    assert timing_free(resumed) == timing_free(whole)
    log = read_events(run_dir)
    assert [s.resumed for s in log.sessions] == [False, True] and log.sessions[1].streams_done == 2
    # resuming a finished run runs nothing and rewrites nothing (issue 18): the result as it stands
    again, _, _ = resume_run(run_dir)
    assert again == resumed and again.execution.sessions == 2


@pytest.mark.slow
def test_sigterm_from_outside_then_cli_resume(tmp_path: Path) -> None:
    """A real signal: the run (a subprocess) is sent SIGTERM once two streams are in its event log."""
    run_dir = tmp_path / "sig"
    command = [
        sys.executable,
        "-c",
        "from streambench.harness.cli import main; main()",
        "run",
        "--streams",
        "40",
    ]
    command += ["--duration", "2", "--warmup-frames", "20", "--output-dir", str(tmp_path), "--run-id", "sig"]
    command += ["--no-progress"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = run_dir / EVENTS_FILE
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if log.exists() and log.read_text().count('"kind":"stream"') >= 2:
            break
        if proc.poll() is not None:
            pytest.fail(f"the run ended before it could be interrupted: {proc.communicate()}")
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr
    partial = load_result(run_dir)
    assert partial.status == "incomplete" and partial.incomplete_reason == "interrupted (signal SIGTERM)"
    assert 2 <= partial.scored.scored_streams < 40

    res = CliRunner().invoke(app, ["run", "--resume", str(run_dir), "--no-progress"])
    assert res.exit_code == 0, res.output
    resumed = load_result(run_dir)
    assert resumed.status == "complete" and resumed.scored.scored_streams == 40
    # the run drew a secret seed (no --seed): the resume rebuilt its streams, and --seed rebuilds them
    assert resumed.seeds.dataset_seed_kind == "secret" and resumed.seeds.dataset == partial.seeds.dataset
    secret = resumed.seeds.dataset
    whole, _, _ = execute_run(
        config(tmp_path, "whole40", streams=40, resamples=1000, seed=secret, duration_s=2.0)
    )
    assert timing_free(resumed) == timing_free(whole)


def test_resume_refuses_other_options_and_bad_logs(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["run", "--resume", str(tmp_path), "--streams", "3"])
    assert res.exit_code == 2 and "--resume takes no other run options" in res.output
    res = CliRunner().invoke(app, ["run", "--resume", str(tmp_path / "nope"), "--no-progress"])
    assert res.exit_code == 2 and "no such event log" in res.output
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / EVENTS_FILE).write_text('{"kind": "start"}\n')
    with pytest.raises(EventLogError, match=r"events\.jsonl: line 1: not a valid event"):
        resume_run(bad)


@pytest.mark.processes
def test_resume_after_a_torn_last_line_keeps_the_log_readable(tmp_path: Path) -> None:
    """A session killed while writing a stream's line: resume runs that stream again, and the log stays
    readable (a second resume works)."""

    def interrupt_after_two(done: int, total: int, stream_id: str) -> None:
        if done == 2:
            raise KeyboardInterrupt

    _, _, run_dir = execute_run(config(tmp_path, "torn", streams=4), interrupt_after_two)
    log = run_dir / EVENTS_FILE
    lines = log.read_bytes().split(b"\n")
    last_stream = max(i for i, line in enumerate(lines) if b'"kind":"stream"' in line)
    log.write_bytes(b"\n".join(lines[:last_stream]) + b"\n" + lines[last_stream][:40])  # cut mid-line
    assert read_events(run_dir).torn_tail
    resumed, recordings, _ = resume_run(run_dir)
    assert resumed.status == "complete" and len(recordings) == 4
    again, _, _ = resume_run(run_dir)
    assert timing_free(again) == timing_free(resumed) and not read_events(run_dir).torn_tail


@pytest.mark.processes
def test_resume_refuses_another_environment(tmp_path: Path) -> None:
    def interrupt_after_one(done: int, total: int, stream_id: str) -> None:
        raise KeyboardInterrupt

    _, _, run_dir = execute_run(config(tmp_path, "env", streams=3), interrupt_after_one)
    log = run_dir / EVENTS_FILE
    lines = log.read_text().splitlines()
    start = json.loads(lines[0])
    assert start["fingerprint"] and start["data_hash"]
    start["fingerprint"] = "another-machine"
    log.write_text("\n".join([json.dumps(start), *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match="started with environment fingerprint another-machine"):
        resume_run(run_dir)


@pytest.mark.processes
def test_a_resumed_run_keeps_its_secret_seed(tmp_path: Path) -> None:
    """Issue 24: an unset seed is drawn once per run; the event log holds it, so a resume rebuilds the
    same streams (and the seed stays secret); ``--seed`` with it rebuilds them afterwards (public)."""

    def interrupt_after_one(done: int, total: int, stream_id: str) -> None:
        if done == 1:
            raise KeyboardInterrupt

    partial, _, run_dir = execute_run(config(tmp_path, "cut", streams=3, seed=None), interrupt_after_one)
    start = read_events(run_dir).start
    secret = start.config["data"]["seed"]
    assert isinstance(secret, int) and start.dataset_seed_kind == "secret"
    assert partial.seeds.dataset == secret and partial.seeds.dataset_seed_kind == "secret"
    resumed, _, _ = resume_run(run_dir)
    assert resumed.status == "complete" and resumed.execution.sessions == 2
    assert (resumed.seeds.dataset, resumed.seeds.dataset_seed_kind) == (secret, "secret")
    assert resumed.environment.data_hash.value == start.data_hash  # the same streams
    again, _, _ = execute_run(config(tmp_path, "again", streams=3, seed=secret))
    assert (again.seeds.dataset, again.seeds.dataset_seed_kind) == (secret, "public")
    assert again.environment.data_hash.value == start.data_hash
    assert timing_free(again) == timing_free(resumed)


@pytest.mark.processes
@pytest.mark.parametrize(
    "isolate", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["in-process", "sealed"]
)
def test_a_refers_to_no_int64_holds_is_one_failed_stream_and_the_run_resumes(
    tmp_path: Path, isolate: bool
) -> None:
    """A prediction labelling frame 2**80 on the third of four streams: before, an OverflowError ended
    the run (in a worker: "isolated worker failed"), and ``--resume`` of the two streams logged ended
    the same way, so no result was ever written. Now it is that stream's failure, and a run interrupted
    before it resumes to a complete result."""
    from streambench.adapters.faulty import stream_fingerprint
    from streambench.harness.datasets.catalog import make_streams

    base = config(tmp_path, "huge", streams=4, duration_s=2.0)
    third = make_streams(base.data)[2]
    planted = {"fault": "huge_ref", "stream_fingerprint": stream_fingerprint(next(iter(third.frames())))}
    run = base.model_copy(
        update={"adapter": "faulty", "adapter_options": {**planted, "at_frame": 7}, "isolate": isolate}
    )

    def interrupt_after_two(done: int, total: int, stream_id: str) -> None:
        if done == 2:
            raise KeyboardInterrupt

    partial, recordings, run_dir = execute_run(run, interrupt_after_two)
    assert partial.status == "incomplete" and [r.stream_id for r in recordings] == ["syn-0000", "syn-0001"]
    resumed, recordings, _ = resume_run(run_dir)
    assert resumed.status == "complete" and [r.stream_id for r in recordings] == [
        "syn-0000",
        "syn-0001",
        "syn-0003",
    ]
    (failure,) = resumed.failures
    assert (failure.stream_id, failure.frame, failure.error_type) == ("syn-0002", 7, "AdapterOutputError")
    assert "refers_to=1208925819614629174706176 does not fit the recorded frame index" in failure.message
    assert load_result(run_dir).scored.failed_streams == 1
