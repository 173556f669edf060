"""Average precision of one class and event-wise mAP over classes.

Definition: seed 004 (``seeds/004_45b65944d7246517.txt``) §6.2.1 (2), "Event-wise mAP": rank each
class's units by confidence, build the precision-recall curve, ``AP_c`` = area under it, ``mAP`` = mean
over classes. The seed's default is **VOC-11 point interpolation**; other conventions must be named and
never compared with it, so every result carries its ``interpolation``:

- ``"voc11"`` (default, PASCAL VOC 2007): mean over the 11 recall levels ``r ∈ {0, 0.1, …, 1}`` of the
  interpolated precision ``max{P_i : R_i ≥ r}`` (0 when no point reaches ``r``).
- ``"coco101"`` (COCO): the same with the 101 levels ``{0, 0.01, …, 1}``.
- ``"all_points"`` (PASCAL VOC 2010+, ActivityNet): precision made monotone non-increasing
  (``P_interp(i) = max_{j ≥ i} P_j``), summed over recall steps: ``Σ (R_i − R_{i−1}) P_interp(i)``.
- ``"step"``: the uninterpolated sum ``Σ (R_i − R_{i−1}) P_i`` of scikit-learn's
  ``average_precision_score``.

Recall levels are exact: ``R ≥ j/L`` is tested as ``TP·L ≥ j·npos`` in integers, so a recall of exactly
0.3 reaches the level 0.3 (the devkits' ``np.arange(0, 1.1, 0.1)`` / ``np.linspace(0, 1, 101)`` levels
are a few ulps off and can miss it).

Ties: units with equal scores form **one point** of the curve (the cut ``score ≥ t`` for each distinct
score ``t``), as in scikit-learn's ``precision_recall_curve``; the result does not depend on the input
order. (The VOC and ActivityNet devkits rank tied units one by one in sort order, which can differ.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import (
    BoolArray,
    FloatArray,
    IntArray,
    check_multi_hot,
    check_same_shape,
    check_scores,
)

Interpolation = Literal["voc11", "all_points", "coco101", "step"]
_LEVELS = {"voc11": 10, "coco101": 100}  # recall levels j / L, j = 0..L


def _check_interpolation(interpolation: object) -> Interpolation:
    if interpolation not in get_args(Interpolation):
        raise ValueError(f"interpolation must be one of {get_args(Interpolation)}, got {interpolation!r}")
    return interpolation  # type: ignore[return-value]


def _reverse_cummax(values: FloatArray, seg: IntArray, bounds: IntArray) -> FloatArray:
    """``out[r, m] = max(values[r, m:end of m's segment])`` for ``values`` ``[R, M]``, exactly."""
    n_rows, m = values.shape
    n_seg = bounds.size - 1
    lengths = np.diff(bounds)
    if n_seg and np.all(lengths == lengths[0]):  # equal segments (event_map): a 3-D accumulate
        v = values.reshape(n_rows, n_seg, m // n_seg)[..., ::-1]
        return np.maximum.accumulate(v, axis=2)[..., ::-1].reshape(n_rows, m)
    # unequal segments: integer keys (segment offset, rank of the value); later segments get lower
    # offsets, so a reverse running max restarts at each segment boundary without any float offset
    uniq, inv = np.unique(values, return_inverse=True)
    offset = (n_seg - 1 - seg).astype(np.int64) * uniq.size
    key = offset[None, :] + inv.reshape(n_rows, m)
    top = np.maximum.accumulate(key[:, ::-1], axis=1)[:, ::-1]
    return uniq[top - offset[None, :]]


def _segment_ap(
    hits: BoolArray, bounds: IntArray, tie_end: BoolArray, npos: IntArray, interpolation: Interpolation
) -> FloatArray:
    """AP of each row ``r`` and segment ``s`` of a packed ranking; ``[R, S]``, NaN where ``npos == 0``.

    ``hits [R, M]``: whether each ranked unit is a true positive (row ``r`` = e.g. a tIoU threshold).
    Segment ``s`` (a class) holds units ``bounds[s]:bounds[s+1]``, sorted by descending score;
    ``tie_end[m]`` marks the last unit of a run of equal scores (always true at a segment's end);
    ``npos [R, S]`` counts the reference positives.
    """
    n_rows, m = hits.shape
    n_seg = bounds.size - 1
    seg = np.repeat(np.arange(n_seg), np.diff(bounds))
    rank = np.arange(m) - bounds[seg] + 1  # 1-based rank inside the segment
    before = np.zeros((n_rows, m + 1), dtype=np.int64)
    np.cumsum(hits, axis=1, out=before[:, 1:])
    tp = before[:, 1:] - before[:, bounds[:-1]][:, seg]  # [R, M] true positives down to each unit
    precision = tp / rank
    if interpolation == "step":  # precision of the point (tie run) each unit belongs to
        idx = np.where(tie_end, np.arange(m), m)
        end = np.minimum.accumulate(idx[::-1])[::-1]
        contrib = np.where(hits, precision[:, end], 0.0)
    else:
        interp = _reverse_cummax(np.where(tie_end, precision, 0.0), seg, bounds)
        if interpolation == "all_points":
            contrib = np.where(hits, interp, 0.0)
        else:
            return _levels_ap(tp, interp, seg, bounds, npos, _LEVELS[interpolation])
    flat = (np.arange(n_rows)[:, None] * n_seg + seg[None, :]).ravel()
    sums = np.bincount(flat, weights=contrib.ravel(), minlength=n_rows * n_seg).reshape(n_rows, n_seg)
    return np.where(npos > 0, sums / np.maximum(npos, 1), np.nan)


def _levels_ap(
    tp: IntArray, interp: FloatArray, seg: IntArray, bounds: IntArray, npos: IntArray, levels: int
) -> FloatArray:
    """Mean over ``j = 0..L`` of the interpolated precision at the first unit with ``TP·L ≥ j·npos``."""
    n_rows, m = tp.shape
    n_seg = bounds.size - 1
    big = levels * max(m, int(npos.max(initial=0))) + 1  # > any TP·L and any j·npos
    block = np.arange(n_rows)[:, None] * n_seg
    key = ((block + seg[None, :]) * big + tp * levels).ravel()  # non-decreasing: one sorted array
    j = np.arange(levels + 1)
    query = ((block + np.arange(n_seg)[None, :])[..., None] * big + npos[..., None] * j).ravel()
    first = np.searchsorted(key, query, side="left").reshape(n_rows, n_seg, levels + 1)
    seg_end = (np.arange(n_rows)[:, None] * m + bounds[None, 1:])[..., None]
    ok = first < seg_end  # else no unit of the segment reaches that recall: precision 0
    p = np.where(ok, interp.ravel()[np.minimum(first, n_rows * m - 1)] if m else 0.0, 0.0)
    return np.where(npos > 0, p.mean(axis=2), np.nan)


def _ranked_columns(g: BoolArray, s: FloatArray) -> tuple[BoolArray, BoolArray]:
    """Columns of ``[N, C]`` sorted by descending score, packed class after class: hits and tie ends."""
    order = np.argsort(-s, axis=0, kind="stable")
    s_sorted = np.take_along_axis(s, order, axis=0)
    tie_end = np.ones(s.shape, dtype=np.bool_)
    tie_end[:-1] = s_sorted[:-1] != s_sorted[1:]
    return np.take_along_axis(g, order, axis=0).T.ravel(), tie_end.T.ravel()


def _column_ap(g: BoolArray, s: FloatArray, interpolation: Interpolation) -> FloatArray:
    n, c = g.shape
    hits, tie_end = _ranked_columns(g, s)
    npos = np.count_nonzero(g, axis=0)[None, :]
    return _segment_ap(hits[None, :], np.arange(c + 1) * n, tie_end, npos, interpolation)[0]


def average_precision(
    gt: npt.ArrayLike, scores: npt.ArrayLike, interpolation: Interpolation = "voc11"
) -> float:
    """AP of one class: ``gt`` binary ``[N]`` (bool or 0/1), ``scores`` real ``[N]`` (no NaN).

    Seed 004 §6.2.1 (2); VOC-11 by default (the seed's convention). See the module docstring for the
    four ``interpolation`` conventions and the handling of tied scores. ``"step"`` equals
    ``sklearn.metrics.average_precision_score(gt, scores)``. ``gt`` must hold at least one positive
    (AP is undefined otherwise; :func:`event_map` excludes such classes instead).
    """
    interp = _check_interpolation(interpolation)
    g = np.asarray(gt)
    s = np.asarray(scores)
    if g.ndim != 1:
        raise ValueError(f"gt must be a 1-D binary array [N], got shape {g.shape}")
    if s.ndim != 1:
        raise ValueError(f"scores must be a 1-D array [N], got shape {s.shape}")
    g2 = check_multi_hot(g[:, None], "gt")
    s2 = check_scores(s[:, None], "scores")
    check_same_shape(g2, s2, "gt", "scores")
    if not g2.any():
        raise ValueError("gt has no positive: AP is undefined (event_map excludes such classes)")
    return float(_column_ap(g2, s2, interp)[0])


@dataclass(frozen=True, slots=True, eq=False)
class EventMAP:
    """Event-wise mAP (seed 004 §6.2.1 (2)) with its parts.

    ``mean_ap``: mean of ``ap`` over the evaluated classes (NaN if no class has a positive).
    ``ap``: float64 ``[C]``, NaN for excluded classes. ``excluded``: indices of the classes without
    any positive in ``gt`` (left out of the mean). Equality is identity (``eq=False``).
    """

    mean_ap: float
    ap: FloatArray
    excluded: IntArray
    interpolation: Interpolation

    @property
    def num_excluded(self) -> int:
        return int(self.excluded.size)

    @property
    def num_evaluated(self) -> int:
        return int(self.ap.size - self.excluded.size)


def event_map(gt: npt.ArrayLike, scores: npt.ArrayLike, interpolation: Interpolation = "voc11") -> EventMAP:
    """Event-wise mAP over classes — seed 004 §6.2.1 (2): per-class AP, then the mean over classes.

    ``gt`` multi-hot ``[N, C]``, ``scores`` real ``[N, C]``. VOC-11 by default (the seed's convention;
    see the module docstring for the others and for ties). A class without any positive has no AP: it
    is excluded from the mean and listed in ``excluded``. All classes are computed at once
    (sort per column, cumulative sums), without a loop over classes or thresholds.
    """
    interp = _check_interpolation(interpolation)
    g = check_multi_hot(gt, "gt")
    s = check_scores(scores, "scores")
    check_same_shape(g, s, "gt", "scores")
    ap = _column_ap(g, s, interp)
    ap.setflags(write=False)
    excluded = np.flatnonzero(np.isnan(ap))
    excluded.setflags(write=False)
    mean = float(np.nanmean(ap)) if excluded.size < ap.size else float("nan")
    return EventMAP(mean_ap=mean, ap=ap, excluded=excluded, interpolation=interp)
