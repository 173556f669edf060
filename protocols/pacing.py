"""Paced execution replayed in virtual time: the computation-aware clock without re-running the model.

``../shared/DESIGN.md``, "The engine" (``paced`` and ``replay`` clocks) and "Time and delay"
(computation-aware ``t_pred``); seed 004 §6.2.2 (latency-aware Acc@Δt / F1@Δt) and §6.2.3 (the
timing point: the per-frame latency of ``predict()``).

Frames arrive at ``arrival_ns`` (the stream's frame times, relative to its start); one worker
processes one frame at a time, each for its recorded latency. Two policies when the worker falls
behind (recorded with every result):

- ``"queue"``: every frame is processed, in order: ``start_i = max(arrival_i, finish_{i-1})``.
- ``"drop"`` (drop to newest): when the worker becomes free it takes the newest frame that has
  arrived (a frame arriving exactly when the worker frees counts as arrived) and drops the older
  waiting ones. When nothing is waiting it takes the next frame at its arrival.

Latency is counted from arrival (``response = finish - arrival``), so waiting in the queue is not
hidden (no coordinated omission). Pure and deterministic: same inputs, same outputs.

Caveat of the replay: the latencies were recorded with every frame fed, and under ``"drop"`` the
outputs of the processed frames are the recorded ones; a stateful model that really skipped frames
would have seen another history, so a replayed ``"drop"`` run is exact in timing, approximate in output.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import BoolArray, IntArray, check_int, check_int_vector
from streambench.protocols.recording import StreamRecording

__all__ = [
    "NOT_EMITTED_NS",
    "NOT_PROCESSED",
    "PacedTimeline",
    "PacingPolicy",
    "computation_aware_delays",
    "paced_delays",
    "paced_emit_times",
    "replay_paced",
    "replay_recording",
]

PacingPolicy = Literal["queue", "drop"]
NOT_PROCESSED = -1
"""``start_ns``, ``finish_ns``, ``wait_ns`` and ``response_ns`` of a dropped frame."""
NOT_EMITTED_NS = int(np.iinfo(np.int64).max)
"""Time and delay given to a prediction whose frame was dropped: outside every finite window. Such a
prediction never happened; filter with the ``kept`` mask (the offline view takes any delay)."""


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class PacedTimeline:
    """What a single worker did with each frame of one stream (arrays ``[T]``, read-only, ns)."""

    policy: PacingPolicy
    arrival_ns: IntArray
    latency_ns: IntArray
    start_ns: IntArray
    finish_ns: IntArray
    processed: BoolArray
    wait_ns: IntArray
    response_ns: IntArray

    @property
    def num_frames(self) -> int:
        return int(self.arrival_ns.size)

    def drop_rate(self) -> float:
        """Share of frames that were never processed (0 under ``"queue"``)."""
        return float(1.0 - self.processed.mean())

    def deadlines(self, deadline_ns: int | None = None) -> IntArray:
        """Absolute deadline of each frame.

        ``deadline_ns=None`` (default): the frame period, i.e. frame ``i`` is due when frame
        ``i + 1`` arrives; the last frame gets the stream's last period, the time between the two last
        arrivals. A stream of one frame has one period, the data's own: its capture interval, from the
        stream's start (arrival 0) to its arrival (the data contract: a frame arrives at the end of its
        capture interval, and ``t0`` is the start of the first one), so it is due at twice its arrival.
        Otherwise frame ``i`` is due at ``arrival_i + deadline_ns``.
        """
        arrival = self.arrival_ns
        if deadline_ns is not None:
            return arrival + check_int(deadline_ns, "deadline_ns", minimum=0)
        if arrival.size == 1:
            if arrival[0] <= 0:
                raise ValueError(
                    "a one-frame stream arriving at its start has no frame period: pass deadline_ns"
                )
            return 2 * arrival
        return np.append(arrival[1:], 2 * arrival[-1] - arrival[-2])

    def deadline_misses(self, deadline_ns: int | None = None) -> BoolArray:
        """Per frame: finished after its deadline (strictly; on time at the deadline), or dropped."""
        return ~self.processed | (self.finish_ns > self.deadlines(deadline_ns))

    def deadline_miss_rate(self, deadline_ns: int | None = None) -> float:
        """Share of frames missing their deadline; a dropped frame counts as a miss."""
        return float(self.deadline_misses(deadline_ns).mean())

    def staleness_ns(self) -> IntArray:
        """Per frame: age of the newest output available when it arrives, or ``-1`` if none yet.

        The newest output at time ``t`` is that of the processed frame ``k`` with the latest
        ``finish_k <= t``; its age is ``arrival_i - arrival_k`` (the age of the information it
        carries). Even a model with no backlog has staleness of one period at each arrival: the
        frame's own output is not ready at the instant it arrives (unless its latency is 0).
        """
        done = np.flatnonzero(self.processed)
        finish = self.finish_ns[done]  # non-decreasing: one worker, in order
        newest = np.searchsorted(finish, self.arrival_ns, side="right") - 1
        age = self.arrival_ns - self.arrival_ns[done[np.maximum(newest, 0)]]
        return np.where(newest >= 0, age, NOT_PROCESSED).astype(np.int64)


def _queue(arrival: IntArray, latency: IntArray) -> IntArray:
    """Finish times under ``"queue"``, without a Python loop.

    The recurrence ``finish_i = max(arrival_i, finish_{i-1}) + lat_i`` is a max-plus scan; unrolled,
    ``finish_i = max_{j<=i} (arrival_j + sum_{k=j..i} lat_k) = S_i + max_{j<=i} (arrival_j - S_{j-1})``
    with ``S`` the cumulative latency: one ``cumsum`` and one ``maximum.accumulate``, O(T), exact in int64.
    """
    total = np.cumsum(latency)
    return total + np.maximum.accumulate(arrival - (total - latency))


def _drop(arrival: IntArray, latency: IntArray) -> tuple[IntArray, IntArray]:
    """Start and finish times under ``"drop"`` (``NOT_PROCESSED`` for dropped frames).

    A loop over the *processed* frames, each step a binary search for the newest arrived frame:
    O(P log T) for P processed of T frames.
    """
    times, lat = arrival.tolist(), latency.tolist()
    start = np.full(len(times), NOT_PROCESSED, dtype=np.int64)
    finish = start.copy()
    free, i = times[0], 0
    while i < len(times):
        at = max(times[i], free)
        j = bisect_right(times, at, lo=i) - 1  # the newest frame arrived by `at` (j >= i)
        start[j], free = at, at + lat[j]
        finish[j] = free
        i = j + 1
    return start, finish


def replay_paced(
    arrival_ns: npt.ArrayLike, latency_ns: npt.ArrayLike, policy: PacingPolicy = "queue"
) -> PacedTimeline:
    """Replay one stream under ``policy``: frame ``i`` arrives at ``arrival_ns[i]`` (int64 ns,
    non-decreasing, >= 0) and takes ``latency_ns[i]`` (int64 ns, >= 0) if processed."""
    arrival = check_int_vector(arrival_ns, "arrival_ns")
    latency = check_int_vector(latency_ns, "latency_ns")
    if arrival.size == 0:
        raise ValueError("arrival_ns is empty: a stream has at least one frame")
    if latency.shape != arrival.shape:
        raise ValueError(f"latency_ns has {latency.size} entries, expected one per frame ({arrival.size})")
    if arrival[0] < 0 or np.any(np.diff(arrival) < 0):
        raise ValueError("arrival_ns must be non-negative and non-decreasing (relative to the stream start)")
    if np.any(latency < 0):
        raise ValueError("latency_ns must be non-negative")
    if policy == "queue":
        finish = _queue(arrival, latency)
        start = finish - latency
    elif policy == "drop":
        start, finish = _drop(arrival, latency)
    else:
        raise ValueError(f"policy must be 'queue' or 'drop', got {policy!r}")
    return _timeline(policy, arrival, latency, start, finish)


def _timeline(
    policy: PacingPolicy, arrival: IntArray, latency: IntArray, start: IntArray, finish: IntArray
) -> PacedTimeline:
    processed = start != NOT_PROCESSED
    wait = np.where(processed, start - arrival, NOT_PROCESSED)
    response = np.where(processed, finish - arrival, NOT_PROCESSED)
    return PacedTimeline(
        policy=policy,
        arrival_ns=_frozen(arrival.copy()),
        latency_ns=_frozen(latency.copy()),
        start_ns=_frozen(start),
        finish_ns=_frozen(finish),
        processed=_frozen(processed),
        wait_ns=_frozen(wait.astype(np.int64)),
        response_ns=_frozen(response.astype(np.int64)),
    )


def replay_recording(recording: StreamRecording, policy: PacingPolicy = "queue") -> PacedTimeline:
    """:func:`replay_paced` on a recorded stream: arrivals are ``frame_times_ns - t0_ns``."""
    return replay_paced(recording.frame_times_ns - recording.t0_ns, recording.latency_ns, policy)


def computation_aware_delays(
    emitted_at: npt.ArrayLike, refers_to: npt.ArrayLike, timeline: PacedTimeline
) -> tuple[BoolArray, IntArray]:
    """Kept-prediction mask and computation-aware delay of each prediction (DESIGN.md "Time and delay").

    Prediction ``p`` was returned by the ``predict()`` of frame ``e = emitted_at[p]`` and labels frame
    ``r = refers_to[p]``: ``t_pred = finish_e`` and ``delay = finish_e - arrival_r`` (both relative to
    the stream start). A prediction emitted by a dropped frame never happened: ``kept[p]`` is False
    and its delay is :data:`NOT_EMITTED_NS`. Frame units; for segments use :func:`paced_emit_times`.
    """
    emitted, refs = check_int_vector(emitted_at, "emitted_at"), check_int_vector(refers_to, "refers_to")
    if emitted.shape != refs.shape:
        raise ValueError(f"refers_to has {refs.size} entries, expected one per prediction ({emitted.size})")
    n = timeline.num_frames
    for name, idx in (("emitted_at", emitted), ("refers_to", refs)):
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ValueError(f"{name} values must lie in [0, {n}) (frames of the timeline)")
    kept = timeline.processed[emitted]
    delay = timeline.finish_ns[emitted] - timeline.arrival_ns[refs]
    return kept, np.where(kept, delay, NOT_EMITTED_NS).astype(np.int64)


def paced_emit_times(
    recording: StreamRecording, policy: PacingPolicy = "queue"
) -> tuple[BoolArray, IntArray]:
    """Kept mask and computation-aware ``t_pred`` of each prediction on the stream clock (ns).

    The drop-in for the algorithmic ``t_pred = frame_times_ns[emitted_at]`` of ``protocols/online.py``:
    ``t_pred = t0_ns + finish_e``; subtracting a frame's or a segment's last frame's arrival time gives
    the computation-aware delay. Not kept: :data:`NOT_EMITTED_NS`.
    """
    timeline = replay_recording(recording, policy)
    kept = timeline.processed[recording.emitted_at]
    t_pred = np.where(kept, recording.t0_ns + timeline.finish_ns[recording.emitted_at], NOT_EMITTED_NS)
    return kept, t_pred.astype(np.int64)


def paced_delays(recording: StreamRecording, policy: PacingPolicy = "queue") -> tuple[BoolArray, IntArray]:
    """:func:`computation_aware_delays` of a recorded stream replayed under ``policy`` (frame units)."""
    return computation_aware_delays(
        recording.emitted_at, recording.refers_to, replay_recording(recording, policy)
    )


def recording_timeline(recording: StreamRecording, policy: PacingPolicy = "queue") -> PacedTimeline:
    """The timeline of a recorded stream: measured if it ran paced, else :func:`replay_recording`.

    A paced recording holds ``paced_start_ns`` (when each ``predict()`` started, on the stream clock
    relative to ``t0``; ``-1`` for a frame the pacer dropped); finish = start + latency.
    """
    if recording.paced_start_ns is None:
        return replay_recording(recording, policy)
    arrival = recording.frame_times_ns - recording.t0_ns
    start = recording.paced_start_ns
    finish = np.where(start != NOT_PROCESSED, start + recording.latency_ns, NOT_PROCESSED)
    return _timeline(recording.paced_policy or policy, arrival, recording.latency_ns, start, finish)  # type: ignore[arg-type]
