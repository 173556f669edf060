"""Issue 18: what a signal does outside the measured window. SIGTERM while ``streambench`` imports its
modules ends it with a word and exit code 130 (not a silent death); a signal while scoring waits for the
result (all streams are logged: ``result.json`` is written complete), and a second one ends it at once
with the resume hint, the event log intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from streambench.harness.execution.event_log import read_events
from streambench.harness.results.files import RESULT_FILE, load_result

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)

ROOT = Path(__file__).resolve().parents[3]


def _start(code: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[str], timeout: float = 180) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_sigterm_while_the_cli_imports_ends_it_with_a_word(tmp_path: Path) -> None:
    """The child holds its import of typer (the first module streambench.harness.cli imports after its
    handler) until the signal comes, so the signal lands mid-import every time."""
    proc = _start(
        """
        import os, sys, time
        class Hold:
            def find_spec(self, name, path=None, target=None):
                if name == "typer":
                    os.write(1, b"importing\\n")
                    time.sleep(60)
                return None
        sys.meta_path.insert(0, Hold())
        from streambench.harness.cli import main
        main()
        """,
        "run",
        "--output-dir",
        str(tmp_path),
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "importing\n"
    os.kill(proc.pid, signal.SIGTERM)
    _, stderr = _finish(proc, timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted (SIGTERM) while starting up; nothing was run or written" in stderr
    assert "Traceback" not in stderr and not any(tmp_path.iterdir())


SCORING = """
import os, signal, sys
import streambench.harness.runs.session as session
score = session.online.score
def score_under_fire(*args, **kwargs):
    for _ in range({signals}):
        os.kill(os.getpid(), signal.SIGTERM)  # while scoring: every stream is logged by now
    return score(*args, **kwargs)
session.online.score = score_under_fire
from streambench.harness.cli import main
main()
"""
RUN = ["run", "--streams", "3", "--duration", "5", "--warmup-frames", "0", "--no-progress", "--no-report"]


def test_a_signal_while_scoring_waits_for_the_result(tmp_path: Path) -> None:
    proc = _start(SCORING.format(signals=1), *RUN, "--output-dir", str(tmp_path), "--run-id", "one")
    _, stderr = _finish(proc)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "SIGTERM while scoring" in stderr and "Traceback" not in stderr
    result = load_result(tmp_path / "one")
    assert result.status == "complete" and result.scored.scored_streams == 3


def test_a_second_signal_while_scoring_ends_it_with_the_resume_hint(tmp_path: Path) -> None:
    proc = _start(SCORING.format(signals=2), *RUN, "--output-dir", str(tmp_path), "--run-id", "two")
    _, stderr = _finish(proc)
    run_dir = tmp_path / "two"
    assert proc.returncode == 130, stderr
    assert "no result written" in stderr and f"--resume {run_dir}" in " ".join(stderr.split())
    assert not (run_dir / RESULT_FILE).exists() and len(read_events(run_dir).recordings) == 3


SETTING_UP = """
import os, signal
import streambench.harness.runs.session as session
opened = session.PowerMeter.open
def open_under_fire(*args, **kwargs):
    os.kill(os.getpid(), signal.{name})  # the event log is written, the measured window not begun
    return opened(*args, **kwargs)
session.PowerMeter.open = open_under_fire
from streambench.harness.cli import main
main()
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_while_the_session_is_set_up_does_not_wait_for_the_run(tmp_path: Path, name: str) -> None:
    """Issue 25 item 7: a signal between the event log's first line and the measured window was held
    like one while scoring, so the run went on through every stream (with a hung model: until its
    timeout) before it exited. It ends the run at once, with the resume hint; no stream is measured."""
    where = ["--output-dir", str(tmp_path), "--run-id", "s"]
    proc = _start(SETTING_UP.format(name=name), *RUN, "--in-process", *where)
    _, stderr = _finish(proc, timeout=120)
    run_dir = tmp_path / "s"
    assert proc.returncode == 130, stderr
    assert f"signal {name}" in stderr and f"--resume {run_dir}" in " ".join(stderr.split())
    assert "Traceback" not in stderr
    assert not (run_dir / RESULT_FILE).exists() and read_events(run_dir).recordings == []
