"""The harness side of a protocol: runs a plan's streams through the engine, one at a time, and keeps
everything it measured whatever the adapter does (the failure policy, results kept stream by stream).

* Warm-up once before the first stream (:meth:`EngineExecutor.warm_up`).
* Each finished stream is appended to the run's event log (:mod:`streambench.harness.execution.event_log`)
  before the next
  starts, so an interrupted run loses at most the stream it was in.
* An adapter failure (an exception in ``reset_state``/``predict``, an output that fails validation, a
  crash or a timeout of an isolated worker) is recorded with the stream, the frame and the traceback;
  ``on_error="continue"`` skips the rest of that stream and goes on, ``"stop"`` ends the run
  (:class:`RunStopped`) after recording it. No output of a failed stream is kept; the protocol scores it
  as answered wrongly on every frame (:func:`failed_streams` gives it the stream's labels and clock,
  from the data set this process holds; protocols/online_units.py).
* Streams already done (a resumed run) are taken from ``done`` instead of being run again.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from streambench.adapters.contract import Stream
from streambench.harness.execution.adapter_errors import (
    TRACEBACK_LIMIT,
    AdapterError,
    HarnessInterrupt,
    bounded,
)
from streambench.harness.execution.engine import Engine, FrameProgress
from streambench.harness.execution.event_log import (
    EVENTS_FILE,
    EventLog,
    FailureEvent,
    StreamEvent,
    encode_recording,
)
from streambench.protocols.base import Plan, PlannedStream
from streambench.protocols.recording import FailedStream, StreamRecording, StreamRole

__all__ = [
    "EngineExecutor",
    "FrameProgress",
    "InProcess",
    "NothingScoredError",
    "OnError",
    "ProgressHook",
    "RunInterrupted",
    "RunStopped",
    "StreamProgress",
    "StreamRunner",
    "defer_signals",
    "failed_stream",
    "failed_streams",
    "failure_event",
    "interrupt_on_sigterm",
]

OnError = Literal["continue", "stop"]

ProgressHook = Callable[[int, int, str], None]
"""Called after each stream: (streams done, streams planned, id of the stream just finished)."""


@runtime_checkable
class StreamProgress(Protocol):
    """A :data:`ProgressHook` that also follows the frames of the stream being run (``frames``); the
    executor passes its ``frames`` to the runner."""

    def __call__(self, done: int, total: int, stream_id: str) -> None: ...

    def frames(self, stream_id: str, done: int, total: int | None) -> None: ...


class StreamRunner(Protocol):
    """What the executor drives: the in-process :class:`~streambench.harness.engine.Engine` (through
    :class:`InProcess`) or an isolated worker (:class:`streambench.harness.isolation.IsolatedEngine`)."""

    def warm_up(self) -> int: ...

    def run_stream(
        self, stream_id: str, role: StreamRole, progress: FrameProgress | None = None
    ) -> StreamRecording: ...


class RunStopped(Exception):
    """``on_error="stop"``: the run ended at an adapter failure (recorded before this is raised)."""

    def __init__(self, failure: FailureEvent) -> None:
        super().__init__(f"stream {failure.stream_id!r}, frame {failure.frame}: {failure.message}")
        self.failure = failure


def failure_event(exc: AdapterError, role: StreamRole) -> FailureEvent:
    """The record of an adapter failure: where, what, and the traceback of the adapter's own exception."""
    cause = exc.__cause__ or exc
    return FailureEvent(
        stream_id=exc.stream_id,
        role=role,
        frame=exc.frame,
        error_type=type(exc).__name__,
        message=str(exc),
        traceback=bounded(
            "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)), TRACEBACK_LIMIT
        ),
    )


def failed_stream(stream: Stream, role: StreamRole, frame: int | None, error: str) -> FailedStream:
    """What scoring a failed stream needs: its clock and labels as the engine would have recorded them
    (times rounded to ns as in :meth:`Engine.run_stream`), taken from the data set, and the error."""
    seg = stream.segment_length_s
    return FailedStream(
        stream_id=stream.stream_id,
        role=role,
        t0_ns=round(stream.t0 * 1e9),
        segment_length_ns=round(seg * 1e9) if seg else None,
        frame_times_ns=np.round(stream.frame_times * 1e9).astype(np.int64),
        labels=stream.labels,
        frame=frame,
        error=error,
    )


def failed_streams(failures: Sequence[FailureEvent], streams: Sequence[Stream]) -> list[FailedStream]:
    """The failed streams of a run, each with its labels from ``streams`` (the data set), in the order
    they failed; a stream found twice counts once."""
    by_id = {s.stream_id: s for s in streams}
    found: dict[str, FailedStream] = {}
    for f in failures:
        if f.stream_id not in by_id:  # never dropped silently: a failure of no planned stream is a bug
            raise ValueError(f"a failure names stream {f.stream_id!r}, which is not in the data set")
        if f.stream_id not in found:
            found[f.stream_id] = failed_stream(
                by_id[f.stream_id], f.role, f.frame, f"{f.error_type}: {f.message}"
            )
    return list(found.values())


class EngineExecutor:
    """Runs plans stream by stream; ``recordings``/``failures`` hold everything done so far, in order."""

    def __init__(
        self,
        runner: StreamRunner,
        progress: ProgressHook | None = None,
        log: EventLog | None = None,
        on_error: OnError = "continue",
        done: Sequence[StreamRecording] = (),
        failed: Sequence[FailureEvent] = (),
        between: Callable[[int], None] | None = None,
    ) -> None:
        self.runner = runner
        self.between = between  # called before the k-th stream this session runs, and once after the last
        self.progress = progress
        self.frame_progress = progress.frames if isinstance(progress, StreamProgress) else None
        self.log = log
        self.on_error = on_error
        self.recordings: list[StreamRecording] = list(done)
        self.failures: list[FailureEvent] = list(failed)
        self.warmup_frames: int | None = None

    def warm_up(self) -> None:
        """Warm the model up once (also done by the first ``execute`` if not called before)."""
        if self.warmup_frames is None:
            self.warmup_frames = self.runner.warm_up()

    def execute(self, plan: Plan) -> Sequence[StreamRecording]:
        """Run every planned stream not done yet; the recordings of every stream that finished (this
        session's and earlier ones'), in plan order. Failed streams are in :attr:`failures`."""
        finished = {r.stream_id for r in self.recordings} | {f.stream_id for f in self.failures}
        todo = [s for s in plan.streams if s.stream_id not in finished]
        if todo:
            self.warm_up()
        for k, planned in enumerate(todo):
            if self.between is not None:
                self.between(k)
            self._run_one(planned)
            if self.progress is not None:
                done = len(self.recordings) + len(self.failures)
                self.progress(done, len(plan.streams), planned.stream_id)
        if self.between is not None and todo:
            self.between(len(todo))
        return self.ordered(plan)

    def ordered(self, plan: Plan) -> list[StreamRecording]:
        """The recordings of every finished stream, in plan order."""
        order = {s.stream_id: k for k, s in enumerate(plan.streams)}
        return sorted(self.recordings, key=lambda r: order.get(r.stream_id, len(order)))

    def _run_one(self, planned: PlannedStream) -> None:
        try:
            recording = self.runner.run_stream(planned.stream_id, planned.role, self.frame_progress)
        except AdapterError as exc:
            failure = failure_event(exc, planned.role)
            self.failures.append(failure)
            if self.log is not None:
                self.log.append(failure)
            if self.on_error == "stop":
                raise RunStopped(failure) from exc
            return
        self.recordings.append(recording)
        if self.log is not None:
            self.log.append(
                StreamEvent(
                    stream_id=recording.stream_id,
                    role=recording.role,
                    recording_npz_b64=encode_recording(recording),
                )
            )


class InProcess:
    """The in-process engine behind the :class:`StreamRunner` interface."""

    def __init__(self, engine: Engine, streams: Mapping[str, Stream], warmup: Stream | None) -> None:
        self.engine = engine
        self.streams = streams
        self.warmup = warmup

    def warm_up(self) -> int:
        return self.engine.warm_up(self.warmup) if self.warmup is not None else 0

    def run_stream(
        self, stream_id: str, role: StreamRole, progress: FrameProgress | None = None
    ) -> StreamRecording:
        try:
            stream = self.streams[stream_id]
        except KeyError:
            raise KeyError(f"plan names an unknown stream {stream_id!r}") from None
        if progress is None:
            return self.engine.run_stream(stream, role)
        hook = progress  # the engine reports (done, total) between two chunks of frames

        def frames(done: int, total: int) -> None:
            hook(stream_id, done, total)

        return self.engine.run_stream(stream, role, progress=frames)


class RunInterrupted(HarnessInterrupt):
    """SIGTERM arrived; raised by the signal handler inside the run. A BaseException, like
    KeyboardInterrupt, so that no ``except Exception`` (an adapter's) takes it for an adapter failure,
    and a :class:`HarnessInterrupt`, which the engine passes on out of ``predict()``."""


class NothingScoredError(ValueError):
    """No test stream finished: there is nothing to score (the failures are in the event log)."""

    def __init__(self, run_dir: Path, failures: Sequence[FailureEvent], stopped: str | None) -> None:
        first = ""
        if failures:
            head = failures[0]
            first = f"; first: stream {head.stream_id!r}, frame {head.frame}: {head.message}"
        why = stopped or f"{len(failures)} stream(s) failed{first}"
        super().__init__(f"{run_dir}: no test stream was scored ({why}); see {run_dir / EVENTS_FILE}")
        self.failures = list(failures)


@contextlib.contextmanager
def interrupt_on_sigterm(held: Sequence[str] = ()) -> Iterator[None]:
    """SIGTERM raises :class:`RunInterrupted` in the run, Ctrl-C (SIGINT) KeyboardInterrupt (unless
    SIGINT is ignored, as in a background job); the handlers before are restored after. ``held``: the
    signals a :func:`defer_signals` block around this one has held so far (they came while the session
    was being set up): :class:`RunInterrupted` at once, on entry, instead of after the whole run
    (a Ctrl-C just before the measured window would otherwise wait for every stream)."""
    if held:
        raise RunInterrupted(f"signal {held[0]}")
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise RunInterrupted(f"signal {signal.Signals(signum).name}")

    old = signal.signal(signal.SIGTERM, handler)
    old_int = signal.getsignal(signal.SIGINT)
    if old_int is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old if old is not None else signal.SIG_DFL)
        if old_int is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, old_int if old_int is not None else signal.SIG_DFL)


@contextlib.contextmanager
def defer_signals(second: str) -> Iterator[list[str]]:
    """Hold SIGINT and SIGTERM while the block runs (scoring and writing a result whose streams are all
    logged: a second or two that turn the measured streams into ``result.json``); yields the list of
    the signals held, for the caller to honour once the block is done. A second signal does not wait:
    :class:`RunInterrupted` with ``second`` (what is left, and how to finish it) at once."""
    held: list[str] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    def handler(signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if held:
            raise RunInterrupted(f"signal {held[0]}, then {name}: {second}")
        held.append(name)

    kept = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN]
    old = {s: signal.signal(s, handler) for s in kept}
    try:
        yield held
    finally:
        for s, before in old.items():
            signal.signal(s, before if before is not None else signal.SIG_DFL)
