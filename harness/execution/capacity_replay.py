"""What the capacity search measures besides the loaded point (harness/execution/capacity_search.py): the
model's own *unloaded* output on the point's sessions, and the failure that ends a search, described.

**The unloaded replay** (``../shared/DESIGN.md`` "Causality": "'F1 held' is held against the model's own
unloaded output"). After a point, a sample of its sessions (whole sessions, drawn at random with a secret
seed, at least ``CapacityConfig.reference_frames`` frames in all, or every session) is served again by the
*reference* worker: a worker of the same adapter and serving mode that never serves a loaded point, so
nothing the loaded workers kept (a content cache, a state) is in it. Each session gets a fresh key and its
frames one at a time, each sent when the previous one is answered: the model is never behind, every frame
answered faster than its stream's real time whenever one stream fits in the deadline. The outputs are
scored as the loaded ones (protocols/capacity_accuracy.py).

**A failure** (:class:`~streambench.protocols.capacity_score.CapacityFailure`): an error reply, a bad
output, bytes that are no reply, a worker that ended or a batch not answered within the frame timeout,
named by the point's N, the live stream, the data-set stream its session played and the frame (and every
frame of the batch), as ``run`` records one.
"""

from __future__ import annotations

import secrets
from typing import Protocol

import numpy as np

from streambench.harness.execution.load_generator import PointFailure, decode_outputs, raise_reply
from streambench.harness.execution.serving_lanes import BadServingReply, ServingTimeout, WorkerEnded
from streambench.harness.execution.serving_worker import FIRST, LAST, ServingError, encode_batch
from streambench.protocols.capacity import ArrivalSchedule
from streambench.protocols.capacity_accuracy import Outputs, UnloadedReference
from streambench.protocols.capacity_score import CapacityFailure

__all__ = ["ReferenceLane", "SearchFailure", "describe_failure", "replay_sessions", "replay_unloaded"]


class ReferenceLane(Protocol):
    """A worker answering one batch message at a time (``SealedLane`` or ``InProcessLane``)."""

    def request(self, message: bytes, timeout_s: float | None = None) -> bytes: ...


class SearchFailure(Exception):
    """The adapter failed: the search ends, keeping the points decided before (``record``)."""

    def __init__(self, record: CapacityFailure) -> None:
        super().__init__(f"{record.where()}: {record.error_type}: {record.message}")
        self.record = record


def replay_sessions(schedule: ArrivalSchedule, limit_frames: int, rng: np.random.Generator) -> np.ndarray:
    """Sessions to replay: whole sessions in a random order until ``limit_frames`` frames are reached."""
    order = rng.permutation(schedule.num_sessions)
    total = np.cumsum(schedule.session_frames[order])
    count = int(np.searchsorted(total, limit_frames, side="left")) + 1
    return np.sort(order[:count])


def replay_unloaded(
    schedule: ArrivalSchedule,
    encoded: list[list[bytes]],
    lane: ReferenceLane,
    limit_frames: int,
    timeout_s: float,
    num_classes: int,
) -> UnloadedReference:
    """Serve a sample of ``schedule``'s sessions unloaded on ``lane`` (module docstring); a failure raises
    :class:`PointFailure` naming the frame (the lane: None)."""
    chosen = replay_sessions(schedule, limit_frames, np.random.default_rng(secrets.randbits(128)))
    order = np.lexsort((schedule.frame, schedule.session))
    offsets = np.concatenate(([0], np.cumsum(schedule.session_frames)[:-1]))
    replies: list[tuple[list[int], bytes]] = []
    for session in chosen.tolist():
        key = secrets.randbits(62) + 1
        frames = order[offsets[session] : offsets[session] + schedule.session_frames[session]].tolist()
        source = encoded[int(schedule.session_source[session])]
        for j, f in enumerate(frames):
            flags = (FIRST if j == 0 else 0) | (LAST if j == len(frames) - 1 else 0)
            message = encode_batch([(key, flags, source[int(schedule.frame[f])])])
            try:
                reply = lane.request(message, timeout_s)
            except ServingTimeout as exc:
                raise PointFailure("timeout", str(exc), [f], None, "FrameTimeout") from None
            except BadServingReply as exc:
                raise PointFailure("error", str(exc), [f], None, "BadReply") from None
            except ServingError as exc:
                raise PointFailure("died", str(exc), [f], None, "WorkerEnded") from None
            if reply[:1] != b"R":
                raise_reply(reply, [f], -1, num_classes)
            replies.append(([f], reply))
    pred_frame, pred_refers, scores = decode_outputs(replies, schedule, num_classes)
    return UnloadedReference(Outputs(pred_frame, pred_refers, scores), np.isin(schedule.session, chosen))


def describe_failure(
    exc: Exception,
    streams: int,
    phase: str,
    schedule: ArrivalSchedule | None = None,
    ids: list[str] | None = None,
) -> CapacityFailure:
    """The failure record of ``exc`` at the point of ``streams`` streams (``phase``: ``point``, ``unloaded
    replay`` or ``between points``), naming the frames a :class:`PointFailure` concerns."""
    if isinstance(exc, PointFailure):
        kind, error_type, trace, worker = exc.kind, exc.error_type, exc.traceback, exc.lane
    elif isinstance(exc, ServingTimeout):
        kind, error_type, trace, worker = "timeout", "ServingTimeout", "", None
    elif isinstance(exc, WorkerEnded):
        kind, error_type, trace, worker = "died", "WorkerEnded", "", None
    elif isinstance(exc, BadServingReply):  # between points: bytes that are no answer
        kind, error_type, trace, worker = "error", "BadReply", "", None
    else:  # the adapter failed on a control message ("Type: message"): building or resetting instances
        kind, error_type, trace, worker = "error", str(exc).partition(":")[0] or "ServingError", "", None
    batch: list[str] = []
    stream = source = frame = None
    frames = exc.frames if isinstance(exc, PointFailure) and schedule is not None else []
    for f in frames:
        assert schedule is not None
        c, k = int(schedule.channel[f]), int(schedule.frame[f])
        s = int(schedule.session_source[schedule.session[f]])
        name = ids[s] if ids is not None and s < len(ids) else f"source {s}"
        batch.append(f"stream {c} ({name}) frame {k}")
        if stream is None:
            stream, source, frame = c, name, k
    message = str(exc)
    if message.startswith(f"{error_type}: "):
        message = message.removeprefix(f"{error_type}: ")
    return CapacityFailure(
        streams=streams,
        phase=phase,
        kind=kind,
        stream=stream,
        source=source,
        frame=frame,
        batch=batch,
        worker=worker if worker is not None and worker >= 0 else None,
        error_type=error_type,
        message=message,
        traceback=trace,
    )
