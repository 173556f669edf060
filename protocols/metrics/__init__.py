"""Pure, vectorised numpy metrics (no I/O, no torch, no global state); see ``../shared/DESIGN.md``.

One vocabulary for users and protocols; each function's docstring cites its definition.

- :mod:`.events`: segment F1 (micro / macro), frame and exact-match accuracy (seed 004 §6.2.1).
- :mod:`.precision`, :mod:`.tiou`: event-wise AP / mAP (VOC-11, all-point, COCO-101) and tIoU mAP.
- :mod:`.delay`, :mod:`.decision`: Acc@Δt / F1@Δt unit selection; thresholds and top-k (seed 004 §6.2).
- :mod:`.latency`, :mod:`.efficiency`: latency statistics, FPS, RTF, speed-up, energy, Pareto (seed 004).
- :mod:`.detection`: EER, FAR/FRR, AUC, detection summary (seed 002, seed 000 §6).
- :mod:`.calibration`: ECE, MCE, reliability bins, Brier (seed 003, seed 004).
- :mod:`.ranking`, :mod:`.language`: Hit/Precision/Recall/F1@k, MRR, MAP, NDCG; perplexity (seed 003).
- :mod:`.stability`: temporal stability of sparse features (seed 000 §1-5).
- :mod:`.router`: switch-lag, return-gap, DTW, hysteresis area, weight entropy (seed 001).
"""

from streambench.protocols.metrics.bootstrap import Interval, bootstrap_micro_f1, bootstrap_ratio, spread
from streambench.protocols.metrics.calibration import ReliabilityBins, brier, ece, mce, reliability_bins
from streambench.protocols.metrics.decision import apply_thresholds, apply_top_k, tune_class_thresholds
from streambench.protocols.metrics.delay import DelayMode, gather_decisions, select_in_window, window_bound_ns
from streambench.protocols.metrics.detection import (
    DetectionMetrics,
    EERMethod,
    EERResult,
    OperatingPoints,
    det_curve_points,
    detection_metrics,
    eer,
    far_frr,
    roc_auc,
    roc_curve_points,
)
from streambench.protocols.metrics.efficiency import (
    composite_score,
    energy_per_frame,
    flops_normalised_latency,
    pareto_front,
    speedup,
)
from streambench.protocols.metrics.events import (
    EPS,
    Average,
    ClassCounts,
    MacroClasses,
    PrecisionRecallF1,
    class_counts,
    exact_match_accuracy,
    f1_from_counts,
    frame_accuracy,
    precision_recall_f1_from_counts,
    segment_f1,
    segment_labels,
)
from streambench.protocols.metrics.language import perplexity
from streambench.protocols.metrics.latency import LatencySummary, PercentileMethod, fps, latency_summary, rtf
from streambench.protocols.metrics.precision import EventMAP, Interpolation, average_precision, event_map
from streambench.protocols.metrics.ranking import (
    Gain,
    Qrels,
    RankingRun,
    f1_at_k,
    hit_at_k,
    map_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    ranking_metrics,
    recall_at_k,
)
from streambench.protocols.metrics.router import (
    DtwCost,
    ReturnGapMetric,
    WeightEntropy,
    dtw_distance,
    hysteresis_area,
    return_gap,
    switch_lag,
    weight_entropy,
)
from streambench.protocols.metrics.stability import (
    ActivationRuns,
    LifetimeConvention,
    TemporalStability,
    activation_runs,
    flips_from_jaccard,
    flips_jaccard_bound,
    temporal_stability,
    topk_to_active,
)
from streambench.protocols.metrics.tiou import ACTIVITYNET_TIOU_THRESHOLDS, Segments, TIoUMAP, tiou_map

__all__ = [
    "ACTIVITYNET_TIOU_THRESHOLDS",
    "EPS",
    "ActivationRuns",
    "Average",
    "ClassCounts",
    "DelayMode",
    "DetectionMetrics",
    "DtwCost",
    "EERMethod",
    "EERResult",
    "EventMAP",
    "Gain",
    "Interpolation",
    "Interval",
    "LatencySummary",
    "LifetimeConvention",
    "MacroClasses",
    "OperatingPoints",
    "PercentileMethod",
    "PrecisionRecallF1",
    "Qrels",
    "RankingRun",
    "ReliabilityBins",
    "ReturnGapMetric",
    "Segments",
    "TIoUMAP",
    "TemporalStability",
    "WeightEntropy",
    "activation_runs",
    "apply_thresholds",
    "apply_top_k",
    "average_precision",
    "bootstrap_micro_f1",
    "bootstrap_ratio",
    "brier",
    "class_counts",
    "composite_score",
    "det_curve_points",
    "detection_metrics",
    "dtw_distance",
    "ece",
    "eer",
    "energy_per_frame",
    "event_map",
    "exact_match_accuracy",
    "f1_at_k",
    "f1_from_counts",
    "far_frr",
    "flips_from_jaccard",
    "flips_jaccard_bound",
    "flops_normalised_latency",
    "fps",
    "frame_accuracy",
    "gather_decisions",
    "hit_at_k",
    "hysteresis_area",
    "latency_summary",
    "map_at_k",
    "mce",
    "mrr",
    "ndcg_at_k",
    "pareto_front",
    "perplexity",
    "precision_at_k",
    "precision_recall_f1_from_counts",
    "ranking_metrics",
    "recall_at_k",
    "reliability_bins",
    "return_gap",
    "roc_auc",
    "roc_curve_points",
    "rtf",
    "segment_f1",
    "segment_labels",
    "select_in_window",
    "speedup",
    "spread",
    "switch_lag",
    "temporal_stability",
    "tiou_map",
    "topk_to_active",
    "tune_class_thresholds",
    "weight_entropy",
    "window_bound_ns",
]
