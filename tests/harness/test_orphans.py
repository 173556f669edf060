"""Issue 18, "Orphaned workers": the (sealed, by default) worker dies with its parent. A parent killed with
SIGKILL while its adapter hangs leaves no process behind (neither the worker nor multiprocessing's
resource tracker); Ctrl-C to the process group prints no worker traceback and the parent reports."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.execution.event_log import EVENTS_FILE

ROOT = Path(__file__).resolve().parents[2]
HANG = ["run", "--isolate", "--adapter", "faulty", "--option", "fault=hang", "--option", "stream_index=0"]
HANG += ["--option", "at_frame=3", "--streams", "2", "--duration", "5", "--warmup-frames", "0"]
HANG += ["--frame-timeout", "600", "--no-progress", "--no-report"]


def _start_hung_run(tmp_path: Path) -> tuple[subprocess.Popen[str], list[psutil.Process]]:
    """A CLI run whose worker hangs in predict(); returned once the worker serves the first stream."""
    command = [sys.executable, "-c", "from harness.cli import main; main()", *HANG]
    proc = subprocess.Popen(
        [*command, "--output-dir", str(tmp_path), "--run-id", "hung"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not (tmp_path / "hung" / EVENTS_FILE).exists():  # written once the worker is ready
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"the run did not start: {proc.communicate()}")
        time.sleep(0.05)
    time.sleep(0.5)  # the worker goes from "ready" into the first stream, where it hangs
    return proc, psutil.Process(proc.pid).children(recursive=True)


def _gone(processes: list[psutil.Process], within_s: float) -> list[psutil.Process]:
    """The processes still alive after ``within_s`` seconds (zombies count as gone)."""
    _, alive = psutil.wait_procs(processes, timeout=within_s)
    return [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_a_killed_parent_leaves_no_worker_behind(tmp_path: Path) -> None:
    proc, descendants = _start_hung_run(tmp_path)
    try:
        workers = [p for p in descendants if "sealed_main" in " ".join(p.cmdline())]  # the default worker
        assert workers, [p.cmdline() for p in descendants]  # the adapter's worker is running
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        left = _gone(descendants, within_s=15)
        assert not left, [(p.pid, p.cmdline()) for p in left]
    finally:
        for p in descendants:
            if p.is_running():
                p.kill()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_ctrl_c_to_the_group_prints_no_worker_traceback(tmp_path: Path) -> None:
    proc, descendants = _start_hung_run(tmp_path)
    try:
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 130, stderr
        assert "Traceback" not in stderr and "streambench-adapter" not in stderr  # no worker traceback
        assert "--resume" in stderr  # the parent reports the interruption and how to finish
        assert not _gone(descendants, within_s=15)
    finally:
        for p in descendants:
            if p.is_running():
                p.kill()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
