"""Pure, vectorised numpy metrics (no I/O, no torch, no global state); see ``../shared/DESIGN.md``.

- :mod:`.events`: segment F1 (micro / macro), frame and exact-match accuracy, segment labels.
- :mod:`.latency`: latency statistics, FPS, RTF.
- :mod:`.decision`: thresholds (fixed, per-class tuned on validation data), top-k.
- :mod:`.delay`: the prediction that counts for each unit under a delay window (Acc@Δt / F1@Δt).
"""

from protocols.metrics.decision import apply_thresholds, apply_top_k, tune_class_thresholds
from protocols.metrics.delay import DelayMode, gather_decisions, select_in_window
from protocols.metrics.events import (
    EPS,
    Average,
    ClassCounts,
    PrecisionRecallF1,
    class_counts,
    exact_match_accuracy,
    f1_from_counts,
    frame_accuracy,
    precision_recall_f1_from_counts,
    segment_f1,
    segment_labels,
)
from protocols.metrics.latency import LatencySummary, PercentileMethod, fps, latency_summary, rtf

__all__ = [
    "EPS",
    "Average",
    "ClassCounts",
    "DelayMode",
    "LatencySummary",
    "PercentileMethod",
    "PrecisionRecallF1",
    "apply_thresholds",
    "apply_top_k",
    "class_counts",
    "exact_match_accuracy",
    "f1_from_counts",
    "fps",
    "frame_accuracy",
    "gather_decisions",
    "latency_summary",
    "precision_recall_f1_from_counts",
    "rtf",
    "segment_f1",
    "segment_labels",
    "select_in_window",
    "tune_class_thresholds",
]
