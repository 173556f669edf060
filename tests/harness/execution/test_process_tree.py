"""Issue 25, items 8, 10 and 11: what an adapter starts or leaves behind ends with the run, and the
command's own output stays the command's.

* item 8: a model that starts a helper process, or forks, leaves nothing running after ``streambench
  run`` — in process, in an isolated worker (``--no-sealed``) and in a sealed one — nor after the harness
  is killed (SIGKILL) mid-run; the result names what had to be ended.
* item 10: a model that leaves a non-daemon thread running does not keep ``streambench run`` (in process)
  from exiting once its result is written; the warning names the thread.
* item 11: a model that prints (``print`` and straight to file descriptor 1) does not corrupt
  ``streambench run --json``: stdout parses as JSON in every mode, and the model's lines are on stderr.

Every run is a real CLI process in a session of its own: "no process left" is "no process of that
session alive" (the test ends any it finds, so a failure leaves nothing either).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from streambench.harness.execution.event_log import EVENTS_FILE, read_events

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)

ROOT = Path(__file__).resolve().parents[3]
MODES = {"in-process": ["--in-process"], "isolated": ["--isolate", "--no-sealed"], "sealed": ["--isolate"]}
SMALL = ["--streams", "2", "--duration", "1", "--warmup-frames", "5", "--seed", "1"]
QUIET = ["--no-progress", "--no-report"]
STARTERS = {"helper": "offender-helper-process", "fork": "offender-forker"}


def _members(session: int) -> list[psutil.Process]:
    """The live processes of a session (zombies are gone: only their exit status is left)."""
    found = []
    for pid in psutil.pids():
        try:
            if os.getsid(pid) != session:
                continue
            process = psutil.Process(pid)
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except (OSError, psutil.Error):
            continue
    return found


def _tagged(tag: str) -> list[psutil.Process]:
    """Live processes whose name (comm) or command line carries ``tag``, wherever they went."""
    found = []
    for process in psutil.process_iter(["name", "cmdline", "status"]):
        info = process.info
        if info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if tag in (info["name"] or "") or tag in " ".join(info["cmdline"] or []):
            found.append(process)
    return found


def _left(session: int, tag: str, within_s: float = 0.0) -> list[str]:
    """What is still running of the run's session, or carries the adapter's tag, after ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        left = {p.pid: p for p in [*_members(session), *_tagged(tag)]}
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    described = []
    for process in left.values():
        with contextlib.suppress(psutil.Error):
            described.append(f"{process.pid} {process.name()} {' '.join(process.cmdline())}")
    return described


def _end_all(session: int, tag: str) -> None:
    for process in [*_members(session), *_tagged(tag)]:
        with contextlib.suppress(psutil.Error):
            process.kill()


@contextlib.contextmanager
def _cli(args: list[str], tag: str, outputs: Path) -> Iterator[subprocess.Popen[str]]:
    """``streambench ARGS`` in a session of its own, its stdout and stderr in files under ``outputs`` (a
    process it leaves behind would hold a pipe open); whatever is left of it is ended afterwards."""
    outputs.mkdir(parents=True, exist_ok=True)
    with (outputs / "stdout").open("w") as out, (outputs / "stderr").open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-c", "from streambench.harness.cli import main; main()", *args],
            stdout=out,
            stderr=err,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        _end_all(proc.pid, tag)


def _run(
    args: list[str], tag: str, tmp_path: Path, timeout_s: float = 120
) -> tuple[int, str, str, list[str]]:
    """(exit code, stdout, stderr, what was left running at its exit) of a CLI run into ``tmp_path``."""
    outputs = tmp_path / "cli"
    with _cli([*args, "--output-dir", str(tmp_path / "store")], tag, outputs) as proc:
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            left = _left(proc.pid, tag)
            pytest.fail(f"streambench did not exit within {timeout_s} s; running: {left}")
        left = _left(proc.pid, tag, within_s=2.0)
    return proc.returncode, (outputs / "stdout").read_text(), (outputs / "stderr").read_text(), left


def _document(stdout: str) -> dict[str, Any]:
    try:
        return dict(json.loads(stdout))
    except json.JSONDecodeError as exc:
        pytest.fail(f"stdout is not JSON ({exc}): {stdout[:400]!r}")


# -- item 8: processes the adapter starts ------------------------------------------------------------------


@pytest.mark.parametrize("how", sorted(STARTERS))
@pytest.mark.parametrize("mode", ["in-process", "isolated"])
def test_what_the_adapter_starts_ends_with_the_run_and_is_named(tmp_path: Path, mode: str, how: str) -> None:
    tag = f"sbleft{uuid.uuid4().hex[:8]}"
    args = ["run", *MODES[mode], "--adapter", STARTERS[how], "--option", f"tag={tag}", *SMALL, *QUIET]
    code, out, err, left = _run([*args, "--json"], tag, tmp_path)
    assert code == 0, err
    assert not left, left  # nothing of the run's session is running, nothing the adapter started
    document = _document(out)
    result = json.loads(Path(document["result_file"]).read_text())
    named = result["execution"]["leftover_processes"]
    assert any(tag in p["name"] or tag in p["command"] for p in named), named
    assert all(isinstance(p["pid"], int) for p in named)
    notes = " ".join(document["headline"]["warnings"])
    assert "left" in notes and tag in notes, notes  # the run's notes say it too


@pytest.mark.parametrize("how", sorted(STARTERS))
def test_a_sealed_worker_refuses_the_process_a_model_starts(tmp_path: Path, how: str) -> None:
    """Untrusted from its first instruction: a sealed worker may start no process (its CPU would escape the
    parent's account of the worker's), so the model that starts one fails to build, with the reason, and
    nothing is left running."""
    tag = f"sbref{uuid.uuid4().hex[:8]}"
    args = ["run", *MODES["sealed"], "--adapter", STARTERS[how], "--option", f"tag={tag}", *SMALL, *QUIET]
    code, _out, err, left = _run(args, tag, tmp_path)
    assert code == 2 and "PermissionError: [Errno 1] Operation not permitted" in err, err
    assert not left, left


@pytest.mark.parametrize("how", sorted(STARTERS))
def test_a_killed_harness_leaves_nothing_the_adapter_started(tmp_path: Path, how: str) -> None:
    """Each kind of process an unsealed worker may start (the guard that ends the worker's group is the
    same for both)."""
    mode = "isolated"
    tag = f"sbkill{uuid.uuid4().hex[:8]}"
    args = ["run", *MODES[mode], "--adapter", STARTERS[how], "--option", f"tag={tag}"]
    args += ["--option", "frame_sleep_ms=20", "--streams", "2", "--duration", "60", "--warmup-frames", "0"]
    args += [*QUIET, "--output-dir", str(tmp_path / "store"), "--run-id", "killed"]
    with _cli(args, tag, tmp_path / "cli") as proc:
        deadline = time.monotonic() + 120
        while not ((tmp_path / "store" / "killed" / EVENTS_FILE).exists() and _tagged(tag)):  # helper up
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the run did not start: {(tmp_path / 'cli' / 'stderr').read_text()}")
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
        left = _left(proc.pid, tag, within_s=15.0)
        assert not left, left
    assert read_events(tmp_path / "store" / "killed").start.run_id == "killed"  # its log is intact


# -- item 10: a non-daemon thread ------------------------------------------------------------------------


def test_a_lingering_thread_does_not_keep_the_command_from_exiting(tmp_path: Path) -> None:
    args = ["run", "--in-process", "--adapter", "offender-lingering-thread", *SMALL, *QUIET, "--json"]
    code, out, err, left = _run(args, "offender-lingering", tmp_path, timeout_s=90)
    assert code == 0, err
    document = _document(out)
    assert Path(document["result_file"]).is_file()  # written, then the command exited
    assert "offender-lingering" in err and "thread" in err, err  # the warning names the thread
    assert not left, left


# -- item 11: a model that prints ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_printing_model_does_not_corrupt_json_output(tmp_path: Path, mode: str) -> None:
    args = ["run", *MODES[mode], "--adapter", "offender-printer", *SMALL, *QUIET, "--json"]
    code, out, err, left = _run(args, "offender-printer", tmp_path)
    assert code == 0, err
    document = _document(out)
    assert document["exit_code"] == 0 and Path(document["result_file"]).is_file()
    for line in ("printer: built {", "printer: fd 1 [", "printer: frame 0", "printer: frame 0 on fd 1"):
        assert line in err, line  # nothing the model printed is lost: it went to stderr
    assert not left, left
