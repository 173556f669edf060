"""Temporal-IoU mAP for temporal detection (ActivityNet style).

Definition: seed 004 (``seeds/004_45b65944d7246517.txt``) §6.2.1 (3), "IoU-based mAP": a predicted
segment is correct only if its temporal IoU with a reference segment reaches a threshold (e.g. 0.5), as
in temporal action localisation on ActivityNet. The procedure follows the ActivityNet evaluation
(``compute_average_precision_detection`` of ``activitynet/ActivityNet``, Evaluation/eval_detection.py):

- ``tIoU(a, b) = |a ∩ b| / (|a| + |b| − |a ∩ b|)`` for segments ``[start, end]``.
- For each threshold ``τ`` and class, predictions are taken in descending score; a prediction is a true
  positive if, among the references of the same video and class not matched yet at ``τ``, the one with
  the highest tIoU has ``tIoU ≥ τ``; that reference is then matched (each reference at most once, so a
  duplicate prediction is a false positive). Ties: equal scores are taken in input order; a prediction
  equally close to two references takes the earlier one (input order).
- AP per class with all-point interpolation (ActivityNet's convention, see :mod:`.precision`; tied
  scores form one point of the curve), mAP = mean over classes, and the summary = mean over thresholds.

Thresholds default to ``{0.50, 0.55, …, 0.95}`` written as exact decimals: ``np.arange(0.5, 0.951,
0.05)`` drifts upwards (its 0.7 is 0.7000000000000002 and rejects a tIoU of exactly 0.7) and ActivityNet's
``np.linspace(0.5, 0.95, 10)`` has 0.8999999999999999; the three differ only at such boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import FloatArray, IntArray
from streambench.protocols.metrics.precision import Interpolation, _check_interpolation, _segment_ap

ACTIVITYNET_TIOU_THRESHOLDS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)


def _vector(x: npt.ArrayLike, name: str, kind: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.size == 0 and kind != "real":
        arr = arr.astype(np.int64)  # an empty list has no dtype of its own
    if kind == "real":
        if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
            raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
        arr = arr.astype(np.float64)
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} must be finite (no NaN or inf)")
    elif kind == "int" and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integer class labels, got dtype {arr.dtype}")
    elif kind == "id" and arr.dtype.kind not in "iuUS":
        raise ValueError(f"{name} must hold integer or string video ids, got dtype {arr.dtype}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, slots=True, eq=False)
class Segments:
    """Temporal segments as parallel 1-D arrays (one entry per segment).

    ``video``: video ids (integers or strings); ``start`` < ``end``: times in any one unit (finite);
    ``label``: integer class labels; ``score``: confidence, required for predictions and ignored for
    ground truth. Arrays are copied read-only; equality is identity (``eq=False``).
    """

    video: npt.NDArray[Any]
    start: FloatArray
    end: FloatArray
    label: IntArray
    score: FloatArray | None = None

    def __post_init__(self) -> None:
        fields = [("video", "id"), ("start", "real"), ("end", "real"), ("label", "int")]
        if self.score is not None:
            fields.append(("score", "real"))
        for name, kind in fields:
            object.__setattr__(self, name, _vector(np.array(getattr(self, name)), name, kind))
        n = self.video.shape[0]
        for name, _ in fields[1:]:
            if getattr(self, name).shape[0] != n:
                size = getattr(self, name).shape[0]
                raise ValueError(f"{name} has {size} entries, expected {n} like video")
        if np.any(self.end <= self.start):
            i = int(np.flatnonzero(self.end <= self.start)[0])
            raise ValueError(f"segment {i} has end <= start ({self.start[i]}, {self.end[i]})")

    def __len__(self) -> int:
        return int(self.video.shape[0])


@dataclass(frozen=True, slots=True, eq=False)
class TIoUMAP:
    """tIoU mAP: ``mean_ap`` (mean over thresholds of ``map_per_threshold``, itself the mean of ``ap``
    over ``classes``), ``ap`` ``[T, C]``, the ``thresholds`` ``[T]``, the evaluated ``classes`` (labels
    with at least one reference) and ``excluded`` (labels found only in predictions, ignored)."""

    mean_ap: float
    map_per_threshold: FloatArray
    ap: FloatArray
    thresholds: FloatArray
    classes: IntArray
    excluded: IntArray


def _match(
    gt_key: IntArray,
    gs: FloatArray,
    ge: FloatArray,
    pkey: IntArray,
    ps: FloatArray,
    pe: FloatArray,
    thresholds: FloatArray,
) -> npt.NDArray[np.bool_]:
    """Greedy matching; predictions already sorted by (group, descending score). Returns hits ``[T, P]``.

    Groups (video, class) are processed side by side: step ``k`` matches the ``k``-th prediction of
    every group at once, vectorised over groups, references and thresholds (the loop runs over the
    largest number of predictions in one group, never over all predictions).
    """
    n_thr, n_pred = thresholds.size, pkey.size
    hits = np.zeros((n_thr, n_pred), dtype=np.bool_)
    groups, g_first, g_count = np.unique(gt_key, return_index=True, return_counts=True)
    slot = np.searchsorted(groups, pkey)
    has_ref = (slot < groups.size) & (groups[np.minimum(slot, groups.size - 1)] == pkey)
    if not has_ref.any():
        return hits
    idx = np.flatnonzero(has_ref)  # sorted by (group, score): positions within a group are ranks
    grp = slot[idx]
    first = np.ones(idx.size, dtype=np.bool_)
    first[1:] = grp[1:] != grp[:-1]
    starts = np.flatnonzero(first)
    pos = np.arange(idx.size) - np.repeat(starts, np.diff(np.append(starts, idx.size)))
    n_in_grp = np.bincount(grp, minlength=groups.size)
    order_g = np.argsort(-n_in_grp, kind="stable")  # busiest groups first: active groups are a prefix
    g_rank = np.empty_like(order_g)
    g_rank[order_g] = np.arange(order_g.size)
    step_order = np.lexsort((g_rank[grp], pos))  # by step, then group rank: each step is one slice
    step_bounds = np.concatenate(([0], np.cumsum(np.bincount(pos))))
    m_max = int(g_count.max())
    col = np.arange(m_max)
    valid = col[None, :] < g_count[order_g][:, None]  # padded references [G, M] in group-rank order
    ref = np.minimum(g_first[order_g][:, None] + col[None, :], gt_key.size - 1)
    rs, re_ = gs[ref], ge[ref]
    matched = np.zeros((n_thr, order_g.size, m_max), dtype=np.bool_)
    thr = thresholds[:, None, None]
    for k in range(step_bounds.size - 1):
        sel = idx[step_order[step_bounds[k] : step_bounds[k + 1]]]  # one prediction of each active group
        a = sel.size
        s, e = ps[sel][:, None], pe[sel][:, None]
        inter = np.maximum(np.minimum(e, re_[:a]) - np.maximum(s, rs[:a]), 0.0)
        tiou = np.where(valid[:a], inter / ((e - s) + (re_[:a] - rs[:a]) - inter), -1.0)
        cand = (tiou[None] >= thr) & ~matched[:, :a]
        best = np.argmax(np.where(cand, tiou[None], -1.0), axis=2)  # [T, a]: first of equal tIoUs
        hit = cand.any(axis=2)
        t_i, g_i = np.nonzero(hit)
        matched[t_i, g_i, best[t_i, g_i]] = True
        hits[:, sel] = hit
    return hits


def tiou_map(
    ground_truth: Segments,
    predictions: Segments,
    thresholds: npt.ArrayLike = ACTIVITYNET_TIOU_THRESHOLDS,
    interpolation: Interpolation = "all_points",
) -> TIoUMAP:
    """ActivityNet-style temporal-detection mAP at each tIoU threshold and averaged over thresholds.

    Seed 004 §6.2.1 (3), procedure of the module docstring. ``ground_truth`` and ``predictions`` are
    :class:`Segments` (``predictions.score`` required); video ids of both must be of one kind (both
    integers or both strings). Thresholds: 1-D, each in ``(0, 1]``. Classes are the labels present in
    ``ground_truth``; a class with references but no prediction has AP 0. ``interpolation`` defaults
    to ActivityNet's all-point AP (``"voc11"`` etc. on request, see :mod:`.precision`).
    """
    interp = _check_interpolation(interpolation)
    for obj, name in ((ground_truth, "ground_truth"), (predictions, "predictions")):
        if not isinstance(obj, Segments):
            raise ValueError(f"{name} must be a Segments, got {type(obj).__name__}")
    if predictions.score is None:
        raise ValueError("predictions must have scores (Segments.score)")
    if len(ground_truth) == 0:
        raise ValueError("ground_truth is empty: tIoU mAP is undefined without reference segments")
    kinds = {ground_truth.video.dtype.kind.replace("u", "i"), predictions.video.dtype.kind.replace("u", "i")}
    if len(kinds) > 1 and len(predictions):
        raise ValueError("predictions.video and ground_truth.video must be ids of one kind (int, str, bytes)")
    thr = np.array(thresholds, dtype=np.float64)
    if thr.ndim != 1 or thr.size == 0 or not np.all((thr > 0) & (thr <= 1)):
        raise ValueError(f"thresholds must be a non-empty 1-D array of values in (0, 1], got {thr}")

    classes = np.unique(ground_truth.label)
    excluded = np.setdiff1d(np.unique(predictions.label), classes)
    keep = np.isin(predictions.label, classes)
    _, vid = np.unique(np.concatenate([ground_truth.video, predictions.video[keep]]), return_inverse=True)
    n_gt = len(ground_truth)
    g_cls = np.searchsorted(classes, ground_truth.label)
    p_cls = np.searchsorted(classes, predictions.label[keep])
    gt_key = vid[:n_gt] * classes.size + g_cls
    p_key = vid[n_gt:] * classes.size + p_cls
    score = predictions.score[keep]
    gt_order = np.argsort(gt_key, kind="stable")
    p_order = np.lexsort((-score, p_key))  # (group, descending score, input order)
    ps, pe = predictions.start[keep][p_order], predictions.end[keep][p_order]
    gs, ge = ground_truth.start[gt_order], ground_truth.end[gt_order]
    hits_grp = _match(gt_key[gt_order], gs, ge, p_key[p_order], ps, pe, thr)

    # AP: rank each class's predictions by descending score (input order among ties)
    by_class = np.lexsort((-score[p_order], p_cls[p_order]))
    hits = hits_grp[:, by_class]
    c_sorted, s_sorted = p_cls[p_order][by_class], score[p_order][by_class]
    bounds = np.searchsorted(c_sorted, np.arange(classes.size + 1))
    tie_end = np.ones(c_sorted.size, dtype=np.bool_)
    tie_end[:-1] = (s_sorted[:-1] != s_sorted[1:]) | (c_sorted[:-1] != c_sorted[1:])
    npos = np.broadcast_to(np.bincount(g_cls, minlength=classes.size), (thr.size, classes.size))
    ap = _segment_ap(hits, bounds, tie_end, npos, interp)
    per_thr = ap.mean(axis=1)
    for arr in (ap, per_thr, thr, classes, excluded):
        arr.setflags(write=False)
    return TIoUMAP(float(per_thr.mean()), per_thr, ap, thr, classes, excluded)
