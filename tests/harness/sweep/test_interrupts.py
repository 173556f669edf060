"""Issue 25 items 9 and 15: a signal to ``streambench sweep`` ends it at once, in each mode, with one line
and the shell's exit code (130 for SIGINT, 143 for SIGTERM), no traceback, no process and no
``streambench-sweep-*`` directory left behind, and no advice to resume a directory that is gone.

Each sweep here runs one run whose model hangs in its first stream (a frame timeout of ten minutes):
before, SIGTERM of an isolated sweep waited for that timeout, and SIGKILL left multiprocessing's
resource tracker (and the pool's worker) running; an in-process sweep (``--no-isolate``) exited 1 with a
traceback and the advice to ``--resume`` the temporary directory it had just deleted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from streambench.harness.execution.event_log import EVENTS_FILE
from streambench.harness.runs.catalog import list_runs
from streambench.harness.sweep.driver import run_sweep
from streambench.harness.sweep.executors import LocalExecutor
from streambench.harness.sweep.measure import ATTEMPT_PREFIX, clear_stale
from streambench.harness.sweep.spec import SweepFile
from tests.harness.sweep.sweep_helpers import small_sweep

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)

ROOT = Path(__file__).resolve().parents[3]
HANG = {"adapter": "faulty", "label": "hangs", "options": {"fault": "hang", "stream_index": 0, "at_frame": 3}}


def _sweep_file(tmp_path: Path, model_in_process: bool) -> Path:
    """One run whose model hangs at frame 3 of its first stream; no retries."""
    tree = small_sweep(tmp_path / "results", adapters=[HANG], protocols={"online": {}})
    tree["sweep"].update(baseline=None, retries=0)
    run = {**tree["run"], "engine": {"warmup_frames": 0}, "isolation": {"frame_timeout_s": 600.0}}
    tree["run"] = {**run, "isolate": not model_in_process}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(tree))
    return path


def _start_hung_sweep(
    tmp_path: Path, *args: str, model_in_process: bool = False
) -> tuple[subprocess.Popen[str], list[psutil.Process]]:
    """The sweep (its temporary folder ``tmp_path/tmp``), returned once its run is in the hung stream,
    with every process it had then."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    command = [sys.executable, "-c", "from streambench.harness.cli import main; main()", "sweep"]
    proc = subprocess.Popen(
        [*command, str(_sweep_file(tmp_path, model_in_process)), "--no-progress", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temp)},
        start_new_session=True,
    )
    deadline = time.monotonic() + 180
    while not list(temp.glob(f"{ATTEMPT_PREFIX}*/**/{EVENTS_FILE}")):  # the run has begun measuring
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"the sweep did not start its run: {proc.communicate()}")
        time.sleep(0.05)
    time.sleep(1.0)  # into the first stream, where the model hangs
    return proc, psutil.Process(proc.pid).children(recursive=True)


def _alive(processes: list[psutil.Process], within_s: float) -> list[str]:
    _, alive = psutil.wait_procs(processes, timeout=within_s)
    return [
        " ".join(p.cmdline())[:120] for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ]


def _stop(proc: subprocess.Popen[str], how: int, group: bool = False) -> tuple[str, float]:
    """Send ``how`` (to the process group: Ctrl-C at a terminal); stderr and the seconds to exit."""
    (os.killpg if group else os.kill)(proc.pid, how)
    sent = time.monotonic()
    try:
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return stderr, time.monotonic() - sent


def _check_interrupted(tmp_path: Path, proc: subprocess.Popen[str], stderr: str, name: str) -> None:
    assert proc.returncode == 128 + signal.Signals[name], stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"interrupted ({name}): sweep small stopped"), stderr
    assert "discarded (not finished): faulty-online-" in stderr and "--resume" not in stderr
    assert "Traceback" not in stderr
    assert not list((tmp_path / "tmp").glob(f"{ATTEMPT_PREFIX}*"))  # the attempt's directory is gone
    assert list_runs(tmp_path / "results") == []


def test_sigterm_ends_an_isolated_sweep_whose_model_hangs_with_its_processes(tmp_path: Path) -> None:
    proc, descendants = _start_hung_sweep(tmp_path)
    assert not any("resource_tracker" in " ".join(p.cmdline()) for p in descendants)  # none started
    stderr, took_s = _stop(proc, signal.SIGTERM)
    assert took_s < 20, stderr  # was: the frame timeout (600 s)
    _check_interrupted(tmp_path, proc, stderr, "SIGTERM")
    assert not _alive(descendants, within_s=15)


def test_ctrl_c_ends_an_isolated_sweep_with_a_word(tmp_path: Path) -> None:
    proc, descendants = _start_hung_sweep(tmp_path)
    stderr, took_s = _stop(proc, signal.SIGINT, group=True)
    assert took_s < 20, stderr
    _check_interrupted(tmp_path, proc, stderr, "SIGINT")  # was: 130 and not a word
    assert not _alive(descendants, within_s=15)


@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT"])
def test_a_signal_ends_an_in_process_sweep_with_a_word_and_no_traceback(tmp_path: Path, name: str) -> None:
    proc, descendants = _start_hung_sweep(tmp_path, "--no-isolate", model_in_process=True)
    stderr, took_s = _stop(proc, signal.Signals[name], group=name == "SIGINT")
    assert took_s < 20, stderr
    _check_interrupted(tmp_path, proc, stderr, name)  # was: exit 1, a traceback, --resume of a deleted dir
    assert not _alive(descendants, within_s=15)


def test_sigkill_of_a_sweep_leaves_no_process_and_the_next_sweep_clears_its_directory(tmp_path: Path) -> None:
    proc, descendants = _start_hung_sweep(tmp_path)
    assert descendants
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert not _alive(descendants, within_s=15)  # was: the resource tracker and the pool's worker
    left = list((tmp_path / "tmp").glob(f"{ATTEMPT_PREFIX}*"))
    assert len(left) == 1  # nothing of a killed process cleans up; the next sweep does
    assert clear_stale(tmp_path / "tmp") == left and not left[0].exists()


def test_a_lost_attempt_leaves_no_directory_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies mid-run (``os._exit``) is a failed attempt, recorded; its directory is removed
    (was: every failed or exited attempt left a ``streambench-sweep-*`` directory)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # this process's temporary folder
    monkeypatch.setenv("TMPDIR", str(temp))  # and its children's
    exiting = {"adapter": "faulty", "label": "exits", "options": {"fault": "exit", "at_frame": 3}}
    tree = small_sweep(tmp_path / "results", adapters=[exiting], protocols={"online": {}})
    tree["sweep"].update(baseline=None, retries=0)
    tree["run"] = {**tree["run"], "isolate": False}  # the model in the attempt's process: it ends that
    outcome = run_sweep(SweepFile.model_validate(tree), LocalExecutor(retries=0, isolate=True))
    (record,) = outcome.records
    assert record.status == "failed" and "worker process lost" in (record.attempts[0].error or "")
    assert not list(temp.glob(f"{ATTEMPT_PREFIX}*"))


def test_a_signal_waits_for_a_held_block_then_stops_the_sweep() -> None:
    """A run being committed to the store is committed first (:func:`held`); elsewhere a signal stops the
    sweep at once; the exit code is the shell's."""
    from streambench.harness.sweep.interrupts import SweepInterrupted, held, sweep_signals

    before = signal.getsignal(signal.SIGTERM)
    steps: list[str] = []
    with pytest.raises(SweepInterrupted) as raised, sweep_signals():
        with held():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)
            steps.append("committed")
        steps.append("after")  # never reached: the signal is raised as the held block ends
    assert steps == ["committed"] and raised.value.signal_name == "SIGTERM" and raised.value.exit_code == 143
    with pytest.raises(SweepInterrupted) as again, sweep_signals():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)
    assert again.value.exit_code == 130
    assert signal.getsignal(signal.SIGTERM) is before  # the handlers before are back
