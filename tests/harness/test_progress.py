"""Progress within a stream (issue 17, in the loop): the engine reports between chunks of frames, never
inside a ``predict()``; the executor passes a run's frame hook to its runner (in process, isolated,
sealed); the CLI's bar moves within a stream and draws itself from those calls, with no refresh thread
alive while the timed loop runs in process. No timing is asserted: the streams are long enough (in
frames, or paced, or spinning) that a report must fall inside them."""

from __future__ import annotations

import io
import threading
from typing import ClassVar

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from streambench.adapters.contract import AdapterInfo, Frame, Prediction, PredictOutput
from streambench.adapters.null import NullAdapter
from streambench.harness.cli import app
from streambench.harness.cli.run import _BarHook, progress_bar
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.executor import EngineExecutor, InProcess, StreamProgress
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.protocols.base import Plan, PlannedStream
from tests.support import make_stream


class Watched:
    """Knows whether it is inside ``predict()`` and how many calls have returned."""

    def __init__(self) -> None:
        self.inside = False
        self.returned = 0
        self._info = AdapterInfo(name="watched", classes=("background", "event"), modalities=("x",))
        self._scores = np.zeros(2, dtype=np.float32)

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.returned = 0

    def predict(self, frame: Frame) -> PredictOutput:
        self.inside = True
        self._scores[:] = (frame.index, 0)
        self.inside = False
        self.returned += 1
        return Prediction(scores=self._scores, refers_to=frame.index - 1 if frame.index % 7 == 3 else None)


def test_progress_moves_within_a_long_stream_and_never_inside_predict() -> None:
    adapter = Watched()
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    stream = make_stream(num_frames=6000)
    calls: list[tuple[int, int, bool, int]] = []

    def hook(done: int, total: int) -> None:
        calls.append((done, total, adapter.inside, adapter.returned))

    rec = engine.run_stream(stream, progress=hook)
    plain = Engine(Watched(), EngineConfig(warmup_frames=0)).run_stream(stream)
    # chunks of 1, 4, 16, ... frames at most: a 6000-frame stream is reported several times within
    assert len(calls) >= 3
    done = [c[0] for c in calls]
    assert done == sorted(set(done)) and done[-1] <= 6000
    assert all(total == 6000 and not inside and returned == d for d, total, inside, returned in calls)
    for name in ("emitted_at", "refers_to", "scores"):  # chunked or not, the same recording
        np.testing.assert_array_equal(getattr(rec, name), getattr(plain, name))


def test_a_failing_progress_hook_is_not_called_an_adapter_failure() -> None:
    def hook(done: int, total: int) -> None:
        raise RuntimeError("the bar broke")

    engine = Engine(Watched(), EngineConfig(warmup_frames=0))
    with pytest.raises(RuntimeError, match="the bar broke"):
        engine.run_stream(make_stream(num_frames=100), progress=hook)
    paced = Engine(Watched(), EngineConfig(warmup_frames=0, pacing="paced"))
    with pytest.raises(RuntimeError, match="the bar broke"):
        paced.run_stream(make_stream(num_frames=80, fps=100.0), progress=hook)  # lasts 0.8 s: one report


def test_a_paced_stream_reports_between_frames() -> None:
    adapter = Watched()
    engine = Engine(adapter, EngineConfig(warmup_frames=0, pacing="paced"))
    calls: list[tuple[int, bool, int]] = []
    engine.run_stream(
        make_stream(num_frames=120, fps=100.0),  # paced: 1.2 s of wall time at least
        progress=lambda done, total: calls.append((done, adapter.inside, adapter.returned)),
    )
    assert calls and all(not inside and returned == done for done, inside, returned in calls)


class Recorder:
    """A run's progress hook that follows frames too (:class:`StreamProgress`)."""

    def __init__(self) -> None:
        self.streams: list[tuple[int, int, str]] = []
        self.frames_seen: list[tuple[str, int, int | None]] = []

    def __call__(self, done: int, total: int, stream_id: str) -> None:
        self.streams.append((done, total, stream_id))

    def frames(self, stream_id: str, done: int, total: int | None) -> None:
        self.frames_seen.append((stream_id, done, total))


def test_the_executor_passes_the_frame_hook_to_the_engine() -> None:
    streams = {s.stream_id: s for s in (make_stream("a", num_frames=3000), make_stream("b", num_frames=3000))}
    hook = Recorder()
    assert isinstance(hook, StreamProgress)
    runner = InProcess(Engine(Watched(), EngineConfig(warmup_frames=0)), streams, None)
    plan = Plan(streams=tuple(PlannedStream(stream_id=s, role="test") for s in ("a", "b")))
    EngineExecutor(runner, hook).execute(plan)
    assert [s for _, _, s in hook.streams] == ["a", "b"]
    assert {s for s, _, _ in hook.frames_seen} == {"a", "b"}
    assert all(total == 3000 and 0 < done <= 3000 for _, done, total in hook.frames_seen)


@pytest.mark.parametrize("sealed", [False, True], ids=["isolated", "sealed"])
def test_an_isolated_worker_reports_the_frame_it_is_at(sealed: bool) -> None:
    # 2 streams of 4 s at 25 fps, 10 ms of spinning per frame: each stream lasts 1 s or more in the worker
    config = RunConfig(
        adapter="busywait",
        adapter_options={"duration_us": 10_000},
        data={"num_streams": 2, "duration_s": 4.0, "seed": 0},
        engine={"warmup_frames": 5},
    )
    seen: list[tuple[str, int, int | None]] = []
    with IsolatedEngine(config, IsolationConfig(sealed=sealed)) as engine:
        engine.warm_up()
        stream_id = engine.stream_ids[0]
        engine.run_stream(stream_id, progress=lambda s, done, total: seen.append((s, done, total)))
        engine.run_stream(engine.stream_ids[1])  # without a hook: nothing reported
    assert seen and {s for s, _, _ in seen} == {stream_id}
    assert all(total == 100 and 0 <= done < 100 for _, done, total in seen)
    assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen)


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


def test_no_refresh_thread_runs_beside_the_timed_loop(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """rich's Progress refreshes from a thread at 10 Hz by default; in process, that thread takes the GIL
    in the middle of predict() calls. The run's bar draws itself between chunks of frames instead."""
    ThreadWatch.others.clear()
    result = CliRunner().invoke(
        app,
        ["run", "--adapter", "tests.harness.test_progress:ThreadWatch", "--streams", "2", "--duration", "2",
         "--warmup-frames", "10", "--output-dir", str(tmp_path), "--no-report"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "_RefreshThread" not in ThreadWatch.others, ThreadWatch.others
