"""Issue 18, "Orphaned workers": the (sealed, by default) worker dies with its parent. A parent killed with
SIGKILL while its adapter hangs leaves no process behind (neither the worker nor multiprocessing's
resource tracker); Ctrl-C to the process group prints no worker traceback and the parent reports."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from streambench.harness.execution.event_log import EVENTS_FILE

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)

ROOT = Path(__file__).resolve().parents[3]
HANG = ["run", "--isolate", "--adapter", "faulty", "--option", "fault=hang", "--option", "stream_index=0"]
HANG += ["--option", "at_frame=3", "--streams", "2", "--duration", "5", "--warmup-frames", "0"]
HANG += ["--frame-timeout", "600", "--no-progress", "--no-report"]


def _start_hung_run(tmp_path: Path) -> tuple[subprocess.Popen[str], list[psutil.Process]]:
    """A CLI run whose worker hangs in predict(); returned once the worker serves the first stream."""
    command = [sys.executable, "-c", "from streambench.harness.cli import main; main()", *HANG]
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


SHORT = ["run", "--streams", "2", "--duration", "2", "--warmup-frames", "20", "--no-progress", "--no-report"]


def _interrupt_at(
    tmp_path: Path, at_s: float
) -> tuple[subprocess.Popen[str], str, float, list[psutil.Process]]:
    """A short sealed run, Ctrl-C to its process group ``at_s`` seconds after it started: the process,
    its stderr, the seconds it took to exit after the signal, and every descendant it had."""
    command = [sys.executable, "-c", "from streambench.harness.cli import main; main()", *SHORT]
    proc = subprocess.Popen(
        [*command, "--output-dir", str(tmp_path), "--run-id", "r"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )
    seen: dict[int, psutil.Process] = {}
    started = time.monotonic()
    while time.monotonic() - started < at_s and proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            seen.update((p.pid, p) for p in psutil.Process(proc.pid).children(recursive=True))
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    sent = time.monotonic()
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc, stderr, time.monotonic() - sent, list(seen.values())


def test_ctrl_c_at_random_instants_of_a_run_ends_it_promptly_and_cleanly(tmp_path: Path) -> None:
    """Issue 25 item 7: whatever phase Ctrl-C lands in — start-up and imports, the worker's start (the
    pipe's floor, the model's warm-up), the session's set-up, a stream, between streams, scoring and
    writing — the run exits within seconds with 130 and a word (or has finished: its result complete),
    prints no traceback, leaves no process behind, and advises --resume exactly when a resumable run
    is left. Five instants, one in each fifth of the first six seconds (a short run takes about five
    on a quiet machine, three times that under load), drawn afresh each time: the seed is in the
    message of a failure."""
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    for k in range(5):
        at_s = rng.uniform(0.1 + 1.2 * k, 0.1 + 1.2 * (k + 1))
        where = tmp_path / str(k)
        proc, stderr, took_s, descendants = _interrupt_at(where, at_s)
        context = (
            f"seed {seed}, Ctrl-C at {at_s:.2f} s: exit {proc.returncode} after {took_s:.1f} s; {stderr}"
        )
        run_dir = where / "r"
        complete = (run_dir / "result.json").is_file() and json.loads(
            (run_dir / "result.json").read_text()
        ).get("status") == "complete"
        assert took_s < 30, context
        assert proc.returncode == 130 or (complete and proc.returncode in (0, -signal.SIGINT)), context
        assert "Traceback" not in stderr, context
        if proc.returncode == 130:
            assert "interrupted" in stderr, context
        resumable = (run_dir / EVENTS_FILE).is_file() and not complete
        assert ("--resume" in stderr) == resumable, context
        assert not _gone(descendants, within_s=15), context
