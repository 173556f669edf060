"""Progress within a stream (issue 17): the executor (harness/execution/executor.py) passes a run's
frame hook to its runner."""

from __future__ import annotations

from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.executor import EngineExecutor, InProcess, StreamProgress
from streambench.protocols.base import Plan, PlannedStream
from tests.harness.execution.test_engine_progress import Watched
from tests.support import make_stream


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
