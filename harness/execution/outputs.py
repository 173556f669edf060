"""The adapter's outputs as the frame loop checks and keeps them (``harness/execution/engine.py``).

The engine's fast path takes a single well-formed :class:`Prediction` itself; everything else comes here:
:meth:`OutputChecks.full_path` validates any output (type, dtype, shape, float32 range, ``refers_to``)
and raises :class:`AdapterOutputError` naming the adapter, the stream and the frame (DESIGN.md
"Conventions": inputs validated at the edge); :meth:`OutputChecks.odd_output` keeps what a frame that
did not take the fast path emitted; :class:`OddFrames` rebuilds, after the stream, where each kept
prediction was emitted and what it labels; :func:`beyond_end` marks the predictions that label a frame
past the end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from streambench.adapters.contract import Prediction
from streambench.harness.execution.adapter_errors import AdapterOutputError
from streambench.harness.execution.recorded_extras import Extras, extras_of

__all__ = ["FLOAT32", "FLOAT32_MAX", "MAX_REF", "NoFastPath", "OddFrames", "OutputChecks", "beyond_end"]

FLOAT32 = np.dtype(np.float32)
FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_REF = int(np.iinfo(np.int64).max)
"""The largest ``refers_to`` a recording holds (its frame indices are int64): a larger one is an output
error at its frame, never an overflow that ends the run."""


class OutputChecks:
    """Validation of one adapter's outputs, its errors naming the adapter, the stream and the frame."""

    def __init__(self, adapter_name: str, num_classes: int) -> None:
        self.adapter_name = adapter_name
        self.num_classes = num_classes

    def odd_output(
        self,
        out: object,
        index: int,
        stream_id: str,
        stream_length: int,
        keep_scores: Callable[[Any], object],
        odd: OddFrames,
        outputs: list[Extras] | None,
    ) -> None:
        """Validate an output the fast path did not take (:meth:`full_path`), copy what it keeps, and note
        the frame: how many predictions it kept there and what each refers to."""
        if out is None:
            checked: list[tuple[np.ndarray, int, Prediction]] = []
        elif (
            type(out) is Prediction
            and type(out.scores) is np.ndarray
            and out.scores.dtype is FLOAT32
            and out.scores.shape == (self.num_classes,)
            and (out.refers_to is None or type(out.refers_to) is int)
        ):  # well-formed, labelling another frame (or taken here because features / weights are recorded)
            ref = out.refers_to
            ref = index if ref is None else self.check_ref(ref, stream_id, index, stream_length)
            checked = [(out.scores, ref, out)]
        else:
            checked = self.full_path(out, stream_id, index, stream_length)
        for pred_scores, pred_ref, pred in checked:
            keep_scores(np.asarray(pred_scores, dtype=np.float32).tobytes())
            odd.refs.append(pred_ref)
            if outputs is not None:
                try:
                    outputs.append(extras_of(pred))
                except Exception as exc:
                    raise self.error(
                        stream_id, index, f"features / weights not copied: {type(exc).__name__}: {exc}"
                    ) from exc
        odd.frames.append(index)
        odd.counts.append(len(checked))

    def full_path(
        self, out: object, stream_id: str, index: int, stream_length: int
    ) -> list[tuple[np.ndarray, int, Prediction]]:
        """Validate an output that is not a single well-formed Prediction; raise with a precise message."""
        checked = []
        for pred in out if isinstance(out, list) else [out]:
            if not isinstance(pred, Prediction):
                raise self.error(
                    stream_id,
                    index,
                    f"predict() returned {type(pred).__name__}; "
                    "expected Prediction, list[Prediction] or None",
                )
            if not isinstance(pred.scores, np.ndarray):
                raise self.error(
                    stream_id,
                    index,
                    f"scores are a {type(pred.scores).__name__}; expected a numpy.ndarray "
                    "(convert tensors with .numpy() inside predict())",
                )
            kind = pred.scores.dtype.kind
            if kind not in "fiu":
                raise self.error(
                    stream_id, index, f"scores have dtype {pred.scores.dtype}; expected real numbers"
                )
            if pred.scores.shape != (self.num_classes,):
                raise self.error(
                    stream_id, index, f"scores have shape {pred.scores.shape}, expected ({self.num_classes},)"
                )
            if kind == "f" and np.any(np.abs(pred.scores[np.isfinite(pred.scores)]) > FLOAT32_MAX):
                raise self.error(stream_id, index, "scores exceed the float32 range they are recorded in")
            ref = (
                index
                if pred.refers_to is None
                else self.check_ref(pred.refers_to, stream_id, index, stream_length)
            )
            checked.append((pred.scores, ref, pred))
        return checked

    def check_ref(self, ref: object, stream_id: str, index: int, stream_length: int) -> int:
        """A prediction's ``refers_to`` as a frame index. Negative, or past :data:`MAX_REF` (no int64
        holds it), is an error; at or beyond the end of the stream is kept here and dropped (and
        counted) after the stream by :func:`beyond_end`: an anticipating model cannot know where a
        stream ends."""
        if isinstance(ref, bool) or not isinstance(ref, (int, np.integer)):
            raise self.error(stream_id, index, f"refers_to={ref!r} is not a frame index (int)")
        value = int(ref)
        if value < 0:
            raise self.error(
                stream_id, index, f"refers_to={_shown(value)} is outside the stream [0, {stream_length})"
            )
        if value > MAX_REF:
            raise self.error(
                stream_id,
                index,
                f"refers_to={_shown(value)} does not fit the recorded frame index (int64: at most 2**63 - 1)",
            )
        return value

    def error(self, stream_id: str, frame: int, problem: str) -> AdapterOutputError:
        return AdapterOutputError(self.adapter_name, stream_id, frame, problem)


def _shown(value: int) -> str:
    """An integer for a message: in full up to 128 bits, else its size (``str`` refuses > 4300 digits)."""
    if value.bit_length() <= 128:
        return str(value)
    return f"{'-' if value < 0 else ''}<an integer of {value.bit_length()} bits>"


class OddFrames:
    """What the frame loop (``Engine._feed``) notes about the frames that did not emit exactly one
    prediction for themselves: a fast-path frame whose prediction labels another frame (``moved_frames``, its
    ``moved_refs``); a frame that took the full path (``frames``, in order), how many predictions were kept
    there (``counts``, 0 for ``None``) and each one's ``refers_to`` (``refs``). Every other frame emitted
    one prediction referring to itself."""

    __slots__ = ("counts", "frames", "moved_frames", "moved_refs", "refs")

    def __init__(self) -> None:
        self.frames: list[int] = []
        self.counts: list[int] = []
        self.refs: list[int] = []
        self.moved_frames: list[int] = []
        self.moved_refs: list[int] = []

    def emitted_and_refers_to(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Per kept prediction, in the order kept: the frame it was emitted at and the frame it labels."""
        counts = np.ones(n, dtype=np.int64)
        counts[self.frames] = self.counts
        emitted = np.repeat(np.arange(n, dtype=np.int64), counts) if self.frames else np.arange(n)
        refers_to = emitted.copy()
        if self.frames:
            at_odd = np.zeros(n, dtype=bool)
            at_odd[self.frames] = True
            refers_to[at_odd[emitted]] = self.refs
        if self.moved_frames:  # each such frame kept exactly one prediction: its first position
            refers_to[(np.cumsum(counts) - counts)[self.moved_frames]] = self.moved_refs
        return emitted, refers_to


class NoFastPath:
    """A type no output has: the fast path's test when every output must take the full path."""


def beyond_end(refers_to: np.ndarray, stream_length: int) -> np.ndarray | None:
    """The mask of predictions that label a frame of the stream, or ``None`` when all do. A prediction
    whose ``refers_to`` lies at or beyond the stream's end (an anticipating model does not know where
    a stream ends) is dropped, and counted in :attr:`StreamRecording.beyond_end`; never an error."""
    inside = refers_to < stream_length
    return None if inside.all() else inside
