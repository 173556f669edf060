"""Progress within a stream (issue 17): the bar of ``streambench run`` (harness/cli/run.py) moves within
a stream and draws itself from the engine's calls, with no refresh thread alive while the timed loop
runs in process."""

from __future__ import annotations

import io
import threading
from typing import ClassVar

import pytest
from rich.console import Console
from typer.testing import CliRunner

from streambench.adapters.contract import Frame, PredictOutput
from streambench.adapters.null import NullAdapter
from streambench.harness.cli import app
from streambench.harness.cli.run import _BarHook, progress_bar


def test_the_bar_moves_within_a_stream() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    bar = progress_bar(True, console)
    with bar:
        hook = _BarHook(bar, bar.add_task("run", total=None, stream=""))
        hook(1, 4, "s0")
        hook.frames("s1", 250, 1000)
        task = bar.tasks[0]
        assert task.completed == 1.25 and task.total == 4 and task.fields["stream"] == "s1 frame 250/1000"
        hook.frames("s1", 10, None)  # an older worker: no total, the bar stays, the frame shows
        assert task.completed == 1 and task.fields["stream"] == "s1 frame 10"
    assert "s1 frame" in console.file.getvalue()  # type: ignore[attr-defined]  # drawn by the hook's calls


class ThreadWatch(NullAdapter):
    """Notes, at every ``predict()``, the threads alive other than the one calling it."""

    others: ClassVar[set[str]] = set()

    def predict(self, frame: Frame) -> PredictOutput:
        me = threading.current_thread()
        ThreadWatch.others.update(type(t).__name__ for t in threading.enumerate() if t is not me)
        return super().predict(frame)


@pytest.mark.processes
def test_no_refresh_thread_runs_beside_the_timed_loop(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """rich's Progress refreshes from a thread at 10 Hz by default; in process, that thread takes the GIL
    in the middle of predict() calls. The run's bar draws itself between chunks of frames instead."""
    ThreadWatch.others.clear()
    result = CliRunner().invoke(
        app,
        ["run", "--adapter", "tests.harness.cli.test_run_progress:ThreadWatch", "--streams", "2",
         "--duration", "2", "--warmup-frames", "10", "--output-dir", str(tmp_path), "--no-report"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "_RefreshThread" not in ThreadWatch.others, ThreadWatch.others
