"""The load generator and dispatcher of the capacity protocol: N live streams released on the
wall clock, served by K workers, every frame timed on this process's clock.

After MLPerf LoadGen (its Server and MultiStream scenarios: queries scheduled ahead, issued at their
time, latency counted from the *scheduled* time, so a late issue or a queue is never hidden) and Triton
perf_analyzer (a fixed number of concurrent streams per measurement). One loop, one thread:

1. release every frame whose arrival time has come (never one early: a frame is released only once the
   clock has reached its arrival) into the batcher of the worker its stream is assigned to
   (harness/execution/batcher.py; streams assigned least-loaded when the point starts);
2. hand each *free* worker the batch its batcher forms (a worker is never sent a second batch while
   busy, so nothing waits in its pipe: what it holds has arrived), stamping the start of service;
3. wait (``select``, µs timeout) until the next arrival, a batcher's due time or a reply; stamp the
   completion when the reply is read.

Per frame it records the release, start and completion (ns from the point's start) and the batch size;
a frame dropped by the ``drop`` policy is marked so. A point that can no longer pass (more misses than
LoadGen's rule allows for its frame count) is cut short: nothing more is released, the batches in flight
finish. The protocol (protocols/capacity_score.py) scores what this returns.

Workers (harness/execution/serving_lanes.py): :class:`SealedLane` (a sealed worker process,
harness/execution/serving_worker.py) or :class:`InProcessLane` (this process: tests, and the dispatcher's
own cost in ``benchmarks/``). A failure of the adapter during a point (an error reply, a bad output, bytes
that are no reply, a worker gone, a batch not answered within the frame timeout) raises
:class:`PointFailure` naming the frames concerned. The clock
and the wait are injected (:class:`WallClock`), so tests drive the loop on a simulated one.
"""

from __future__ import annotations

import json
import select
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from streambench.harness.execution.batcher import DynamicBatcher
from streambench.harness.execution.serving_lanes import (
    BadServingReply,
    InProcessLane,
    SealedLane,
    ServingTimeout,
    WorkerEnded,
)
from streambench.harness.execution.serving_worker import FIRST, LAST, ServingError, decode_reply, encode_batch
from streambench.protocols.capacity import ArrivalSchedule
from streambench.protocols.capacity_score import NOT_SERVED, ServedFrames
from streambench.protocols.pacing import PacingPolicy

__all__ = [
    "InProcessLane",
    "Lane",
    "LoopClock",
    "PointFailure",
    "PointSetup",
    "SealedLane",
    "ServingTimeout",
    "WallClock",
    "WorkerEnded",
    "assign_least_loaded",
    "decode_outputs",
    "raise_reply",
    "run_point",
]

LEAD_NS = 2_000_000
"""The point's clock starts 2 ms after the loop does (its first arrivals are never in the past)."""


class PointFailure(ServingError):
    """The adapter failed during a point: ``kind`` ``error`` (an error reply or a bad output), ``died``
    (the worker ended) or ``timeout`` (a batch not answered within the frame timeout); ``frames``: the
    schedule indices of the frames concerned (the failing item, else the whole batch in flight);
    ``lane``: the worker (None: found after the point); ``error_type``, ``traceback``: the worker's."""

    def __init__(
        self,
        kind: str,
        message: str,
        frames: Sequence[int],
        lane: int | None,
        error_type: str = "",
        traceback: str = "",
    ) -> None:
        super().__init__(message)
        self.kind, self.frames, self.lane = kind, list(frames), lane
        self.error_type, self.traceback = error_type or kind, traceback


class Lane(Protocol):
    """One serving worker as the loop sees it."""

    def send(self, message: bytes) -> None: ...

    def receive(self) -> bytes: ...

    def fileno(self) -> int | None: ...


class LoopClock(Protocol):
    """The loop's time: ``now`` (ns) and ``wait`` until one of the ``busy`` lanes has a reply or the clock
    reaches ``until`` (None: no limit); returns the lanes with a reply."""

    def now(self) -> int: ...

    def wait(self, busy: Sequence[Lane], until: int | None) -> list[Lane]: ...


class WallClock:
    """``time.perf_counter_ns`` and ``select`` (µs timeouts: ``poll``'s are whole ms). An in-process lane
    has its reply as soon as it was sent."""

    def now(self) -> int:
        return time.perf_counter_ns()

    def wait(self, busy: Sequence[Lane], until: int | None) -> list[Lane]:
        ready = [lane for lane in busy if lane.fileno() is None]
        if ready:
            return ready
        timeout = None if until is None else max(until - time.perf_counter_ns(), 0) / 1e9
        by_fd = {fd: lane for lane in busy if (fd := lane.fileno()) is not None}
        if not by_fd:
            if timeout:
                time.sleep(timeout)
            return []
        readable, _, _ = select.select(list(by_fd), [], [], timeout)
        return [by_fd[fd] for fd in readable]


def assign_least_loaded(num_streams: int, lanes: int) -> np.ndarray:
    """Stream ``c`` -> the worker holding the fewest streams when it joins (ties: the lowest index)."""
    load = np.zeros(lanes, dtype=np.int64)
    lane_of = np.empty(num_streams, dtype=np.int64)
    for c in range(num_streams):
        lane = int(np.argmin(load))
        lane_of[c] = lane
        load[lane] += 1
    return lane_of


@dataclass(frozen=True)
class PointSetup:
    """One point as the loop runs it: the schedule, which worker serves each stream, the encoded frames of
    each data-set stream, the batching rule, the cut-short rule and the per-batch timeout."""

    schedule: ArrivalSchedule
    lane_of_channel: np.ndarray
    encoded: Sequence[Sequence[bytes]]
    num_classes: int
    deadline_ns: int
    max_batch: int
    max_wait_ns: int
    policy: PacingPolicy
    max_misses: int | None = None
    stall_ns: int = 0
    """A point past ``max_misses`` is cut short only once a miss comes this long after the first (0: at
    once): misses that stop within it were one stall, and the point runs on to show it recovered."""
    timeout_ns: int = 30_000_000_000


def _session_keys(count: int) -> np.ndarray:
    """A fresh, unguessable, distinct key per session (the worker learns nothing else of a stream)."""
    import secrets

    rng = np.random.default_rng(secrets.randbits(128))
    while True:
        keys = rng.integers(1, 2**62, size=count, dtype=np.int64)
        if np.unique(keys).size == count:
            return keys


def run_point(setup: PointSetup, lanes: Sequence[Lane], clock: LoopClock) -> ServedFrames:
    """Release, dispatch and time every frame of ``setup.schedule`` (module docstring). The loop keeps
    Python lists and leaves the replies undecoded until the point is over (an error reply is read at
    once): its own cost per frame is what ``benchmarks/test_capacity.py`` measures."""
    schedule = setup.schedule
    count = schedule.num_frames
    released = [NOT_SERVED] * count
    start = [NOT_SERVED] * count
    finish = [NOT_SERVED] * count
    batch_size = [0] * count
    dropped: list[int] = []
    keys = _session_keys(schedule.num_sessions).tolist()
    session = schedule.session.tolist()
    frame = schedule.frame.tolist()
    source = schedule.session_source.tolist()
    last = schedule.last_of_session.tolist()
    lane_of = setup.lane_of_channel[schedule.channel].tolist()
    arrival = schedule.arrival_ns.tolist()
    encoded = setup.encoded
    batchers = [DynamicBatcher(setup.max_batch, setup.max_wait_ns, setup.policy) for _ in lanes]
    in_flight: dict[int, tuple[list[int], int]] = {}  # lane -> (frames, sent at)
    started = [False] * schedule.num_sessions
    replies: list[tuple[list[int], bytes]] = []
    lane_index = {id(lane): k for k, lane in enumerate(lanes)}
    misses, limit, aborted = 0, setup.max_misses, None
    first_miss = last_miss = seen = 0
    stall = setup.stall_ns
    deadline, timeout = setup.deadline_ns, setup.timeout_ns
    now_of = clock.now
    base = now_of() + LEAD_NS
    i = 0
    while True:
        now = now_of() - base
        if aborted is None:
            while i < count and arrival[i] <= now:
                batchers[lane_of[i]].add(i, session[i], arrival[i])
                released[i] = now
                i += 1
        for k, batcher in enumerate(batchers):
            if k in in_flight or not batcher.waiting:
                continue
            taken = batcher.take(now)
            if taken is None:
                continue
            batch, gone = taken
            if gone:
                dropped.extend(gone)
                misses += len(gone)
            if not batch:
                continue
            items = []
            frames = []
            for f, s in batch:
                flags = (0 if started[s] else FIRST) | (LAST if last[f] else 0)
                started[s] = True
                items.append((keys[s], flags, encoded[source[s]][frame[f]]))
                frames.append(f)
            message = encode_batch(items)
            sent = now_of() - base
            try:
                lanes[k].send(message)
            except ServingTimeout as exc:  # it stopped reading its connection
                raise PointFailure("timeout", str(exc), frames, k, "FrameTimeout") from None
            except ServingError as exc:  # the worker is gone (a broken pipe)
                raise PointFailure("died", str(exc), frames, k, "WorkerEnded") from None
            size = len(frames)
            for f in frames:
                start[f] = sent
                batch_size[f] = size
            in_flight[k] = (frames, sent)
        if misses > seen:  # misses that go on past ``stall`` after the first are not one stall
            first_miss, last_miss, seen = first_miss if seen else now, now, misses
        if limit is not None and misses > limit and aborted is None and last_miss - first_miss >= stall:
            at_s = max(released) / 1e9
            aborted = f"{misses} misses by {at_s:.2f} s: more than the {limit} its frames allow"
            for batcher in batchers:
                batcher.clear()
        if not in_flight and (i == count or aborted is not None) and not any(b.waiting for b in batchers):
            break
        until = arrival[i] + base if i < count and aborted is None else None
        for k, batcher in enumerate(batchers):
            due = batcher.due_at() if k not in in_flight else None
            if due is not None:
                until = due + base if until is None else min(until, due + base)
        busy = [lanes[k] for k in in_flight]
        if busy:
            oldest = min(sent for _, sent in in_flight.values()) + base + timeout
            until = oldest if until is None else min(until, oldest)
        for lane in clock.wait(busy, until):
            k = lane_index[id(lane)]
            try:
                reply = lane.receive()
            except BadServingReply as exc:  # bytes the model wrote to its connection
                raise PointFailure("error", str(exc), in_flight[k][0], k, "BadReply") from None
            except ServingError as exc:  # the worker ended inside the batch
                raise PointFailure("died", str(exc), in_flight[k][0], k, "WorkerEnded") from None
            done = now_of() - base
            frames, _ = in_flight.pop(k)
            for f in frames:
                finish[f] = done
                if done - arrival[f] > deadline:
                    misses += 1
            if reply[:1] != b"R":
                raise_reply(reply, frames, k, setup.num_classes)
            replies.append((frames, reply))
        if in_flight and now_of() - base > min(sent for _, sent in in_flight.values()) + timeout:
            k, (frames, _) = min(in_flight.items(), key=lambda held: held[1][1])
            late = f"a batch of {len(frames)} frame(s) unanswered after {timeout / 1e9:g} s (frame timeout)"
            raise PointFailure("timeout", late, frames, k, "FrameTimeout")
    pred_frame, pred_refers, scores = decode_outputs(replies, schedule, setup.num_classes)
    gone_mask = np.zeros(count, dtype=bool)
    gone_mask[dropped] = True
    return ServedFrames(
        released_ns=np.array(released, dtype=np.int64),
        start_ns=np.array(start, dtype=np.int64),
        finish_ns=np.array(finish, dtype=np.int64),
        dropped=gone_mask,
        batch_size=np.array(batch_size, dtype=np.int64),
        pred_frame=pred_frame,
        pred_refers=pred_refers,
        pred_scores=scores,
        aborted=aborted,
    )


def raise_reply(reply: bytes, frames: list[int], lane: int, num_classes: int) -> None:
    """An error reply as a :class:`PointFailure`: the item it names (else the whole batch), the worker's
    error type, message and traceback."""
    if reply[:1] != b"E":
        what = f"the worker sent what is no reply: {reply[:60]!r}"
        raise PointFailure("error", what, frames, lane, "BadReply")
    try:
        error = json.loads(reply[1:])
        item = int(error.get("item", -1))
        kind, message, trace = str(error["type"]), str(error["message"]), str(error.get("traceback", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        raise PointFailure("error", "the worker's error reply is not readable", frames, lane) from None
    named = [frames[item]] if 0 <= item < len(frames) else frames
    raise PointFailure("error", f"{kind}: {message}", named, lane, kind, trace)


def decode_outputs(
    replies: list[tuple[list[int], bytes]], schedule: ArrivalSchedule, num_classes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(emitting frame [P], frame of its session it labels [P], scores [P, C]) of every reply; scores that
    are not finite raise, naming the stream and the frame."""
    emitted_parts, refers_parts, score_parts = [], [], []
    for frames, reply in replies:
        try:
            counts, refers, scores = decode_reply(reply, num_classes, len(frames))
        except ServingError as exc:  # a reply that is not one (checked after the point: the loop is lean)
            raise PointFailure("error", str(exc), frames, None, "BadReply") from None
        emitted = np.repeat(np.asarray(frames, dtype=np.int64), counts)
        emitted_parts.append(emitted)
        refers_parts.append(np.where(refers < 0, schedule.frame[emitted], refers))
        score_parts.append(scores)
    if not replies:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy(), np.zeros((0, num_classes), dtype=np.float32)
    pred_frame = np.concatenate(emitted_parts)
    all_scores = np.concatenate(score_parts)
    bad = ~np.isfinite(all_scores).all(axis=1)
    if bad.any():
        at = int(pred_frame[int(np.argmax(bad))])
        raise PointFailure("error", "scores contain NaN or Inf", [at], None, "ValueError")
    return pred_frame, np.concatenate(refers_parts), all_scores
