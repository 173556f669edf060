"""Issue 18, "Two writers, one run directory": a run directory is held by one process (an exclusive lock,
:class:`streambench.harness.execution.event_log.RunLock`); a second run of the same id or a second resume
fails at once naming the holder; a log with a stream twice counts it once; resuming a finished run changes
nothing and says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.event_log import (
    EVENTS_FILE,
    LOCK_FILE,
    RunLock,
    RunLockedError,
    read_events,
)
from streambench.harness.results.files import RESULT_FILE, load_result
from streambench.harness.runs.session import execute_run, resume_run

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)


def config(tmp_path: Path, run_id: str, streams: int = 4) -> RunConfig:
    return RunConfig.model_validate(
        {
            "data": {"num_streams": streams, "duration_s": 5.0},
            "engine": {"warmup_frames": 0},
            "protocol": {"bootstrap_resamples": 20},
            "output_dir": tmp_path,
            "run_id": run_id,
        }
    )


def interrupt_after_two(done: int, total: int, stream_id: str) -> None:
    if done == 2:
        raise KeyboardInterrupt


def test_a_second_writer_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    holder = rf"held by another streambench process \(pid {os.getpid()} on"
    with RunLock(tmp_path / "twin"), pytest.raises(RunLockedError, match=holder):  # the first writer
        execute_run(config(tmp_path, "twin"))
    assert not (tmp_path / "twin").exists()  # the holder wrote nothing; released, it leaves no trace
    result, _, run_dir = execute_run(config(tmp_path, "twin"))  # free again once released
    assert result.scored.scored_streams == 4 and (run_dir / LOCK_FILE).is_file()


def test_a_second_resume_fails_at_once_and_a_duplicated_stream_counts_once(tmp_path: Path) -> None:
    _, _, run_dir = execute_run(config(tmp_path, "cut"), interrupt_after_two)
    with RunLock(run_dir), pytest.raises(RunLockedError, match="held by another"):
        resume_run(run_dir)
    # what two unlocked writers left behind: every finished stream's line twice
    log = run_dir / EVENTS_FILE
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines) + b"".join(x for x in lines if b'"kind":"stream"' in x))
    assert read_events(run_dir).duplicates == 2 and len(read_events(run_dir).recordings) == 2
    resumed, recordings, _ = resume_run(run_dir)
    assert resumed.scored.scored_streams == resumed.scored.planned_streams == 4
    assert sorted(r.stream_id for r in recordings) == [f"syn-{k:04d}" for k in range(4)]


def test_two_cli_runs_of_one_id_at_the_same_time_leave_one_run(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-c",
        "from streambench.harness.cli import main; main()",
        "run",
        "--streams",
        "30",
    ]
    command += ["--duration", "5", "--warmup-frames", "0", "--output-dir", str(tmp_path), "--run-id", "twin"]
    command += ["--no-progress", "--no-report"]
    procs = [
        subprocess.Popen(
            [*command, "--seed", str(seed)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for seed in (7, 8)
    ]
    try:
        outputs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outputs
    loser = outputs[[p.returncode for p in procs].index(2)][1]
    assert "held by another streambench process" in loser or "exists already" in loser
    log = read_events(tmp_path / "twin")
    assert log.duplicates == 0 and len(log.recordings) == 30
    assert load_result(tmp_path / "twin").scored.scored_streams == 30


def test_resuming_a_finished_run_is_a_no_op_that_says_so(tmp_path: Path) -> None:
    _, _, run_dir = execute_run(config(tmp_path, "done", streams=2))
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    res = CliRunner().invoke(app, ["run", "--resume", str(run_dir), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "nothing to resume" in res.output and "is complete" in res.output
    after = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    assert after == before  # result.json (environment, execution, resources), the log: as they were
    again, _, _ = resume_run(run_dir)
    assert again.execution.sessions == 1 and (run_dir / RESULT_FILE).read_bytes() == before[RESULT_FILE]
