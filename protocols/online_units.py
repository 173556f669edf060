"""The online protocol's scoring units and their tallies (protocols/online.py), and the rule for a
stream the adapter failed on (nothing is dropped from scoring).

A :class:`Tally` holds, for every key ``(unit, mode or "offline", Δt)``, the per-class TP/FP/FN of the
units of one stream (or of several, summed), how many were answered correctly and how many had a
prediction inside the window. :func:`windows` lists the keys of a unit.

**Failed streams are scored as answered wrongly, never dropped.** A stream the adapter failed on
(:class:`~streambench.protocols.recording.FailedStream`: it raised, broke the contract, hung or crashed)
counts in every accuracy and F1 figure with every unit of it — frames, segments, at every Δt, in both modes,
in the offline view — answered with the *complement* of its reference label set: each class present in
the reference is a false negative, each absent class a false positive, and the unit is never correct
(:func:`failed_tally`). No prediction of it is kept (the engine and the worker do not return a partial
stream), so frames it finished before failing count as wrong too.

Why this can never benefit a model: per unit and class, a real answer gives one of TP, TN, FP or FN;
the complement gives FN where the class is present and FP where it is absent. So the complement's
TP is never above a real answer's (it is 0), and its FP and FN are never below it; micro and macro F1,
``2 TP / (2 TP + FP + FN)`` overall and per class, cannot go up when TP goes down or FP + FN go up, and
accuracy gets 0 from those units, the least any answer gets. Every output the model could have given
on a failed stream — predicting nothing included, which under F1 can beat a wrong answer by avoiding
false positives — scores at least as well as failing. Raising on the streams it would get wrong
therefore gains a model nothing (``adapters/offenders/abstainer.py`` is the planted try).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from streambench.protocols.metrics import ClassCounts, class_counts, segment_labels, window_bound_ns
from streambench.protocols.recording import FailedStream, StreamRecording

__all__ = [
    "ANY_DELAY",
    "MODES",
    "Key",
    "Mode",
    "Tally",
    "failed_tally",
    "segment_unit",
    "segments",
    "windows",
]

Mode = Literal["strict", "early_ok"]
MODES: tuple[Mode, ...] = ("strict", "early_ok")

Key = tuple[str, str, float]
"""(unit, mode or "offline", Δt in ms)."""

ANY_DELAY = -1.0
"""The Δt key of the offline view (the latest prediction per unit, whatever its delay)."""


class Tally:
    """Counts of one stream (or of all) for every (unit, mode, Δt): summed, then turned into figures."""

    def __init__(self) -> None:
        self.counts: dict[Key, ClassCounts] = {}
        self.correct: dict[Key, int] = {}
        self.answered: dict[Key, int] = {}
        self.units: dict[str, int] = {}

    def add(self, other: Tally) -> None:
        for key, counts in other.counts.items():
            self.counts[key] = self.counts[key] + counts if key in self.counts else counts
            self.correct[key] = self.correct.get(key, 0) + other.correct[key]
            self.answered[key] = self.answered.get(key, 0) + other.answered[key]
        for unit, n in other.units.items():
            self.units[unit] = self.units.get(unit, 0) + n


def windows(unit: str, deltas_ms: Sequence[float]) -> list[tuple[str, Mode, float, int | None]]:
    """(key name, mode, Δt in ms, window in ns or None) of every figure of a unit: each mode at each Δt,
    and for frames and segments the offline view (any delay). The window is the largest recorded delay
    that counts, :func:`~streambench.protocols.metrics.delay.window_bound_ns` (Δt): Δt plus the 1 ns rounding
    tolerance of protocols/metrics/delay.py, so that a delay of whole frames at 24, 29.97, 30 or 60 fps
    (not a whole number of ns) is not lost to rounding."""
    found: list[tuple[str, Mode, float, int | None]] = [
        (mode, mode, d, window_bound_ns(d)) for mode in MODES for d in deltas_ms
    ]
    if unit in ("frame", "segment"):
        found.append(("offline", "strict", ANY_DELAY, None))
    return found


def segments(
    rec: StreamRecording | FailedStream, segment_length_s: float | None
) -> tuple[np.ndarray, np.ndarray, int]:
    """Segment index of every frame, arrival time of every segment's last frame, segment count."""
    seg_ns = round(segment_length_s * 1e9) if segment_length_s is not None else rec.segment_length_ns
    if seg_ns is None:
        raise ValueError(
            f"stream {rec.stream_id!r} has no segment length; set the protocol's segment_length_s"
        )
    # frame i captures (t_i - period, t_i]; it belongs to the segment containing its end instant
    seg_of_frame = (rec.frame_times_ns - rec.t0_ns - 1) // seg_ns
    # only segments that hold a frame are units (a segment shorter than the frame period may hold none)
    _, seg_of_frame = np.unique(seg_of_frame, return_inverse=True)
    num_segments = int(seg_of_frame[-1]) + 1
    seg_end = np.zeros(num_segments, dtype=np.int64)
    np.maximum.at(seg_end, seg_of_frame, rec.frame_times_ns)
    return seg_of_frame, seg_end, num_segments


def segment_unit(rec: StreamRecording, segment_length_s: float | None) -> str | None:
    """The segment figures' unit in words: its length and how many frames of what period it holds (``rec``'s
    median), marked when the protocol's ``segment_length_s`` set it (else it is the data's); None when the
    stream has no segment length."""
    seg_ns = round(segment_length_s * 1e9) if segment_length_s is not None else rec.segment_length_ns
    if seg_ns is None:
        return None
    period_ns = float(np.median(np.diff(rec.frame_times_ns, prepend=rec.t0_ns)))
    unit = f"{seg_ns / 1e9:g} s segments of {seg_ns / period_ns:.3g} frames of {period_ns / 1e6:.3g} ms"
    return unit + (" (protocol.segment_length_s)" if segment_length_s is not None else "")


def failed_tally(
    failed: FailedStream,
    keep: np.ndarray,
    segment_length_s: float | None,
    deltas_ms: Sequence[float],
    paced: bool,
) -> Tally:
    """The tally of a failed stream: every unit of every figure answered with the complement of its
    reference (module docstring); nothing answered, nothing correct. ``paced``: the run has the
    ``frame_paced`` unit, which the stream then counts in too."""
    frame_gt = failed.labels[:, keep]
    seg_of_frame, _, num_segments = segments(failed, segment_length_s)
    levels = {
        "frame": frame_gt,
        "segment": segment_labels(frame_gt, seg_of_frame, num_segments),
        "frame_replay": frame_gt,
    }
    if paced:
        levels["frame_paced"] = frame_gt
    tally = Tally()
    for unit, gt in levels.items():
        tally.units[unit] = gt.shape[0]
        wrong = class_counts(gt, ~gt)
        for name, _, delta_ms, _ in windows(unit, deltas_ms):
            key = (unit, name, delta_ms)
            tally.counts[key] = wrong
            tally.correct[key] = 0
            tally.answered[key] = 0
    return tally
