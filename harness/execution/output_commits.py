"""Outputs committed frame by frame (where a prediction was emitted must not be the worker's
word).

A sealed worker's engine records each stream and sends the recording when the stream ends; what it
records (the frame each prediction was emitted at, the frame it labels, its scores) is computed in the
adapter's process, which a model can reach. So the worker also *commits* each ``predict()`` output to
the parent as it goes: the request for frame ``t + 1``
(:data:`~streambench.harness.execution.sealed_feed.NEXT`) carries the output of frame ``t``, and the end of
the stream (:data:`~streambench.harness.execution.sealed_feed.DONE`) that of the last frame. Whatever a model
commits with the request for frame ``t + 1`` can depend only on frames ``0..t``: frame ``t + 1`` is sent after
it. The parent then checks the recording against the commits (:func:`check_commits`); a recording that differs
(a prediction moved to an earlier frame, scores or the frame they label rewritten after later frames
were seen) fails its stream with an :class:`~streambench.harness.execution.adapter_errors.AdapterOutputError`.

Worker side: :class:`Outbox` holds the last output; the worker's predict proxy stores it (one attribute
store, inside the timed window) and the feed takes and encodes it (:func:`encode_output`) when it asks
for the next frame, outside the worker's timed window and inside the parent's round trip (so inside the
pipe's floor too, which the null adapter's outputs are committed through the same way).

A commit: ``uint32`` count of predictions, then per prediction ``int64`` ``refers_to`` (-1: the frame
itself), the scores as ``C`` float32, and per recorded extra (``features``, ``weights``) a ``uint32``
length and that many float64. An output the encoder cannot read (not a Prediction, scores of another
shape) is committed as :data:`UNREADABLE`: the engine fails such a stream itself.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from streambench.adapters.contract import Prediction
from streambench.harness.execution.adapter_errors import AdapterOutputError
from streambench.protocols.recording import StreamRecording

__all__ = ["UNREADABLE", "Committed", "Outbox", "check_commits", "decode_commits", "encode_output"]

UNREADABLE = b"?"
_NOTHING = object()  # no predict() since the last commit
_ONE_SELF = struct.pack("<Iq", 1, -1)  # one prediction labelling its own frame: the common prefix
_NONE = struct.pack("<I", 0)


def encode_output(out: object, num_classes: int, record: Sequence[str] = ()) -> bytes:
    """One ``predict()`` output as a commit (module doc); never raises."""
    if out is _NOTHING or out is None:
        return _NONE
    try:
        if type(out) is Prediction and out.refers_to is None and not record:  # the fast path's shape
            scores = np.asarray(out.scores, dtype=np.float32)
            if scores.shape != (num_classes,):
                return UNREADABLE
            return _ONE_SELF + scores.tobytes()
        predictions = out if isinstance(out, list) else [out]
        parts = [struct.pack("<I", len(predictions))]
        for pred in predictions:
            if not isinstance(pred, Prediction):
                return UNREADABLE
            scores = np.asarray(pred.scores, dtype=np.float32)
            if scores.shape != (num_classes,):
                return UNREADABLE
            ref = pred.refers_to
            parts.append(struct.pack("<q", -1 if ref is None else int(ref)))
            parts.append(scores.tobytes())
            for name in record:
                value = getattr(pred, name)
                row = np.zeros(0) if value is None else np.asarray(value, dtype=np.float64).ravel()
                parts.append(struct.pack("<I", row.size))
                parts.append(row.tobytes())
        return b"".join(parts)
    except Exception:
        return UNREADABLE


class Outbox:
    """Worker side: the last ``predict()`` output (``last``), taken once per frame request."""

    __slots__ = ("last", "num_classes", "record")

    def __init__(self, num_classes: int) -> None:
        self.last: object = _NOTHING
        self.num_classes = num_classes
        self.record: tuple[str, ...] = ()

    def clear(self) -> None:
        """Forget an output not taken (the last frame of a warm-up prefix): called at every reset."""
        self.last = _NOTHING

    def take(self) -> bytes:
        out, self.last = self.last, _NOTHING
        return encode_output(out, self.num_classes, self.record)


@dataclass(frozen=True)
class Committed:
    """What the commits of one stream say was emitted: per prediction, the frame it was emitted at, the
    frame it labels, its scores ``[P, C]`` and its recorded extras ``{name: [P, K]}``."""

    emitted_at: np.ndarray
    refers_to: np.ndarray
    scores: np.ndarray
    extras: dict[str, list[np.ndarray]]


class _Unreadable(ValueError):
    def __init__(self, frame: int) -> None:
        super().__init__(f"commit of frame {frame} unreadable")
        self.frame = frame


def decode_commits(commits: Sequence[bytes], num_classes: int, record: Sequence[str] = ()) -> Committed:
    """Parent side: the predictions of a stream's commits (``commits[k]`` came with the request for
    frame ``k``, the last with the stream's end, so its predictions were emitted at frame ``k - 1``).
    Raises ValueError (with ``.frame``) on a commit that cannot be read."""
    emitted: list[int] = []
    refers: list[int] = []
    scores: list[bytes] = []
    extras: dict[str, list[np.ndarray]] = {name: [] for name in record}
    row_bytes = 4 * num_classes
    for k, commit in enumerate(commits):
        frame = k - 1
        view = memoryview(commit)
        try:
            (count,) = struct.unpack_from("<I", view, 0)
            at = 4
            for _ in range(count):
                (ref,) = struct.unpack_from("<q", view, at)
                at += 8
                if at + row_bytes > len(view):
                    raise _Unreadable(frame)
                scores.append(bytes(view[at : at + row_bytes]))
                at += row_bytes
                for name in record:
                    (size,) = struct.unpack_from("<I", view, at)
                    at += 4
                    if at + 8 * size > len(view):
                        raise _Unreadable(frame)
                    extras[name].append(np.frombuffer(view[at : at + 8 * size], dtype=np.float64))
                    at += 8 * size
                emitted.append(frame)
                refers.append(frame if ref == -1 else ref)
            if at != len(view):
                raise _Unreadable(frame)
        except struct.error:
            raise _Unreadable(frame) from None
    score_array = np.frombuffer(b"".join(scores), dtype=np.float32).reshape(-1, num_classes)
    return Committed(
        np.asarray(emitted, dtype=np.int64), np.asarray(refers, dtype=np.int64), score_array, extras
    )


def check_commits(
    recording: StreamRecording,
    commits: Sequence[bytes],
    num_classes: int,
    record: Sequence[str],
    adapter: str,
    stream_id: str,
) -> None:
    """Raise :class:`AdapterOutputError` (naming the first frame that differs) unless ``recording`` holds
    exactly the predictions committed while the stream ran: the same emission frames, the same labelled
    frames, the same scores (bit for bit) and extras, less those labelling a frame past the end."""

    def differs(frame: int, what: str) -> AdapterOutputError:
        return AdapterOutputError(
            adapter,
            stream_id,
            frame,
            f"the recording differs from the outputs committed frame by frame: {what}",
        )

    n = recording.num_frames
    if len(commits) != n + 1:
        raise differs(min(len(commits), n), f"{len(commits)} commits for {n} frames (and the stream's end)")
    try:
        committed = decode_commits(commits, num_classes, record)
    except _Unreadable as exc:
        raise differs(max(exc.frame, 0), "an output the harness could not read") from None
    inside = committed.refers_to < n
    emitted, refers = committed.emitted_at[inside], committed.refers_to[inside]
    if emitted.size and emitted[0] < 0:
        raise differs(0, "an output before the first frame")
    if int((~inside).sum()) != recording.beyond_end:
        raise differs(
            n - 1, f"{int((~inside).sum())} predictions past the end, {recording.beyond_end} recorded"
        )
    if emitted.size != recording.emitted_at.size:
        first = _first_difference(emitted, recording.emitted_at)
        raise differs(first, f"{emitted.size} predictions committed, {recording.emitted_at.size} recorded")
    for name, mine, theirs in (
        ("emission frame", emitted, recording.emitted_at),
        ("refers_to", refers, recording.refers_to),
    ):
        if not np.array_equal(mine, theirs):
            at = int(np.argmax(mine != theirs))
            raise differs(int(emitted[at]), f"the {name} of prediction {at}")
    scores = committed.scores[inside]
    recorded = np.ascontiguousarray(recording.scores, dtype=np.float32)
    if scores.tobytes() != recorded.tobytes():
        at = int(np.argmax((scores.view(np.uint32) != recorded.view(np.uint32)).any(axis=1)))
        raise differs(int(emitted[at]), f"the scores of prediction {at}")
    for name in record:
        rows = [row for row, keep in zip(committed.extras[name], inside, strict=True) if keep]
        value = getattr(recording, name)
        theirs_rows = [] if value is None else list(np.asarray(value, dtype=np.float64))
        same = len(rows) == len(theirs_rows) and all(
            np.array_equal(a, b, equal_nan=True) for a, b in zip(rows, theirs_rows, strict=True)
        )
        if not same:
            raise differs(int(emitted[0]) if emitted.size else 0, f"the recorded {name}")


def _first_difference(mine: np.ndarray, theirs: np.ndarray) -> int:
    m = min(mine.size, theirs.size)
    diff = np.flatnonzero(mine[:m] != theirs[:m])
    if diff.size:
        return int(min(mine[diff[0]], theirs[diff[0]]))
    return int(mine[m]) if mine.size > m else int(theirs[m]) if theirs.size > m else 0
