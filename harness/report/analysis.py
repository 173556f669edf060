"""The numbers behind the report's pictures, computed from a run's recorded arrays (numpy only).

Nothing here is estimated: every figure is a function of the recorded per-frame latencies, scores and
labels (protocols/recording.py). Calibration and detection reuse the metric modules: reliability bins
from protocols/metrics/calibration.py (seed 003, "Calibration"), DET / ROC points, EER and AUC from
protocols/metrics/detection.py (seed 002 "Core Metrics"). The Pareto front follows seed 004 §6.3.3
("Pareto 前沿分析"): a run is on the front when no other run is at least as accurate and at least as
fast (or frugal), and strictly better in one of the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from streambench.protocols.metrics.calibration import ReliabilityBins, reliability_bins
from streambench.protocols.metrics.detection import (
    OperatingPoints,
    det_curve_points,
    eer,
    roc_auc,
    roc_curve_points,
)
from streambench.protocols.online_speed import measured_latency
from streambench.protocols.recording import StreamRecording

__all__ = [
    "DetectionCurves",
    "Reliability",
    "ScorePairs",
    "Timeline",
    "detection_curves",
    "latency_timeline",
    "pareto_front",
    "reliability",
    "score_pairs",
    "scored_latency_ms",
    "stream_latencies_ms",
    "thin_monotone",
]


def stream_latencies_ms(recs: Sequence[StreamRecording]) -> list[np.ndarray]:
    """Each test stream's measured ``predict()`` latencies in ms, stream by stream (the unit the
    intervals resample)."""
    return [measured_latency(r).astype(np.float64) / 1e6 for r in recs if r.role == "test"]


def scored_latency_ms(recs: Sequence[StreamRecording]) -> np.ndarray:
    """Every measured ``predict()`` latency of the test streams, in ms (a frame the pacer dropped has
    none): the sample the result's latency percentiles were computed from (protocols/online_speed.py)."""
    test = [measured_latency(r) for r in recs if r.role == "test"]
    if not test:
        return np.zeros(0)
    return np.concatenate(test).astype(np.float64) / 1e6


@dataclass(frozen=True)
class Timeline:
    """Latency of every measured frame in the order the streams ran (test and validation)."""

    position: np.ndarray  # frame position within the run, 0-based
    latency_ms: np.ndarray
    stream_start: Sequence[tuple[int, str, str]]  # (first position, stream id, role)


def latency_timeline(recs: Sequence[StreamRecording]) -> Timeline:
    """Per-frame latencies concatenated in recording (= execution) order, so drift across the run
    (throttling, a cache warming) and the first frames of the first stream (residual warm-up) show."""
    latencies: list[np.ndarray] = []
    starts: list[tuple[int, str, str]] = []
    offset = 0
    for rec in recs:
        lat = measured_latency(rec).astype(np.float64) / 1e6
        starts.append((offset, rec.stream_id, rec.role))
        latencies.append(lat)
        offset += lat.size
    latency = np.concatenate(latencies) if latencies else np.zeros(0)
    return Timeline(position=np.arange(latency.size), latency_ms=latency, stream_start=starts)


@dataclass(frozen=True)
class ScorePairs:
    """One-vs-rest pairs pooled over classes (micro): each (prediction, class) is one sample whose
    score is the class score and whose label says whether the class is in the reference of the frame
    the prediction refers to."""

    scores: np.ndarray
    labels: np.ndarray
    predictions: int
    classes: int


def score_pairs(
    recs: Sequence[StreamRecording], all_classes: Sequence[str], scored_classes: Sequence[str]
) -> ScorePairs:
    """Pairs of every prediction of the test streams over the scored classes (excluded ones left out)."""
    keep = np.array([c in set(scored_classes) for c in all_classes])
    scores, labels, n = [], [], 0
    for rec in recs:
        if rec.role != "test" or rec.num_predictions == 0:
            continue
        scores.append(rec.scores[:, keep].astype(np.float64).ravel())
        labels.append(rec.labels[rec.refers_to][:, keep].ravel())
        n += rec.num_predictions
    if not scores:
        return ScorePairs(np.zeros(0), np.zeros(0, dtype=bool), 0, int(keep.sum()))
    return ScorePairs(np.concatenate(scores), np.concatenate(labels), n, int(keep.sum()))


@dataclass(frozen=True)
class Reliability:
    bins: ReliabilityBins | None
    reason: str | None


def reliability(pairs: ScorePairs, bins: int = 10) -> Reliability:
    """Reliability bins of the one-vs-rest pairs (seed 003): the observed frequency of the class per bin
    of its score. ``None`` with the reason when there are no pairs or the scores are not in [0, 1]."""
    if pairs.scores.size == 0:
        return Reliability(None, "no prediction was recorded on a test stream")
    low, high = float(pairs.scores.min()), float(pairs.scores.max())
    if low < 0 or high > 1:
        return Reliability(
            None, f"the scores are not probabilities (they range over [{low:.4g}, {high:.4g}], not [0, 1])"
        )
    return Reliability(reliability_bins(pairs.scores, pairs.labels, bins), None)


@dataclass(frozen=True)
class DetectionCurves:
    det: OperatingPoints | None
    roc: OperatingPoints | None
    eer: float | None
    auc: float | None
    reason: str | None


def detection_curves(pairs: ScorePairs) -> DetectionCurves:
    """DET and ROC points, EER (nearest) and AUC of the one-vs-rest pairs, the class present = positive
    (detection.py's "real"). ``None`` with the reason when one side is empty."""
    positives = int(np.count_nonzero(pairs.labels))
    if pairs.scores.size == 0:
        return DetectionCurves(None, None, None, None, "no prediction was recorded on a test stream")
    if positives in (0, pairs.labels.size):
        side = "no class present in any reference" if positives == 0 else "every class always present"
        return DetectionCurves(None, None, None, None, f"a single label value ({side}): no curve")
    return DetectionCurves(
        det=det_curve_points(pairs.labels, pairs.scores),
        roc=roc_curve_points(pairs.labels, pairs.scores),
        eer=eer(pairs.labels, pairs.scores).eer,
        auc=roc_auc(pairs.labels, pairs.scores),
        reason=None,
    )


def thin_monotone(x: np.ndarray, y: np.ndarray, resolution: float = 2e-3) -> np.ndarray:
    """Indices of a monotone curve's points to draw: the first and last, and each point that moved at
    least ``resolution`` (in the plotted units) from the last one kept. A plot of 10^5 points and one of
    these few hundred are indistinguishable; the SVG is smaller by orders of magnitude."""
    if x.size <= 2:
        return np.arange(x.size)
    kept = [0]
    lx, ly = x[0], y[0]
    for i in range(1, x.size - 1):
        if abs(x[i] - lx) >= resolution or abs(y[i] - ly) >= resolution:
            kept.append(i)
            lx, ly = x[i], y[i]
    kept.append(x.size - 1)
    return np.asarray(kept)


def pareto_front(cost: Sequence[float] | np.ndarray, accuracy: Sequence[float] | np.ndarray) -> np.ndarray:
    """Boolean mask of the points no other point dominates (lower or equal cost and higher or equal
    accuracy, one of them strictly) — seed 004 §6.3.3."""
    c, a = np.asarray(cost, dtype=np.float64), np.asarray(accuracy, dtype=np.float64)
    on_front = np.ones(c.size, dtype=bool)
    for i in range(c.size):
        dominated = (c <= c[i]) & (a >= a[i]) & ((c < c[i]) | (a > a[i]))
        on_front[i] = not dominated.any()
    return on_front
