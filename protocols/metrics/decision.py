"""Decision rules: from per-class scores to multi-hot predictions.

Seed 004 (``seeds/004_45b65944d7246517.txt``) §6.2.1 (1), "阈值与校准" (thresholds and calibration):
a fixed threshold (e.g. 0.5), per-class thresholds chosen on the validation split and frozen for the
test split, or top-k selection. :func:`tune_class_thresholds` only *returns* thresholds; applying
them to the test split is a separate call to :func:`apply_thresholds`.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import (
    BoolArray,
    FloatArray,
    check_int,
    check_multi_hot,
    check_same_shape,
    check_scores,
)
from streambench.protocols.metrics.events import EPS


def apply_thresholds(scores: npt.ArrayLike, thresholds: npt.ArrayLike) -> BoolArray:
    """Multi-hot decisions ``scores >= thresholds`` — seed 004 §6.2.1 (1), "阈值与校准".

    ``scores`` is ``[N, C]``; ``thresholds`` a scalar (one fixed threshold, e.g. 0.5) or ``[C]``
    (per-class thresholds, e.g. from :func:`tune_class_thresholds` on the validation split).
    Convention: a score *equal* to its threshold is positive (``>=``, as in scikit-learn's
    ``precision_recall_curve``); some code uses ``>``, which differs exactly at the boundary.
    """
    s = check_scores(scores, "scores")
    t = np.asarray(thresholds)
    if t.ndim not in (0, 1):
        raise ValueError(f"thresholds must be a scalar or a 1-D array [C], got shape {t.shape}")
    if t.ndim == 1 and t.shape[0] != s.shape[1]:
        raise ValueError(
            f"thresholds has {t.shape[0]} entries, expected one per class of scores ({s.shape[1]})"
        )
    if not (np.issubdtype(t.dtype, np.integer) or np.issubdtype(t.dtype, np.floating)):
        raise ValueError(f"thresholds must be real numbers, got dtype {t.dtype}")
    t64 = t.astype(np.float64)
    if np.isnan(t64).any():
        raise ValueError("thresholds contains NaN")
    return s >= t64


def apply_top_k(scores: npt.ArrayLike, k: int) -> BoolArray:
    """Multi-hot decisions marking the ``k`` highest scores of each row — seed 004 §6.2.1 (1), Top-K.

    Exactly ``k`` classes per row (``0 <= k <= C``), whatever the score values. Ties are broken by the
    lower class index (a stable sort on descending scores): with scores ``[0.5, 0.9, 0.5, 0.5]`` and
    ``k=2`` classes 1 and 0 are chosen.
    """
    s = check_scores(scores, "scores")
    kk = check_int(k, "k", minimum=0)
    n, c = s.shape
    if kk > c:
        raise ValueError(f"k must be <= the number of classes ({c}), got {kk}")
    out = np.zeros((n, c), dtype=np.bool_)
    top = np.argsort(-s, axis=1, kind="stable")[:, :kk]
    out[np.arange(n)[:, None], top] = True
    return out


def tune_class_thresholds(gt: npt.ArrayLike, scores: npt.ArrayLike, fallback: float = 0.5) -> FloatArray:
    """Per-class thresholds maximising each class's F1 on the given (validation) data.

    Seed 004 §6.2.1 (1), "阈值与校准": per-class thresholds are scanned on the validation split and
    then frozen for the test split (this function returns them; apply them with
    :func:`apply_thresholds`). F1 is the seed's per-class F1 with its ``1e-9`` epsilons.

    Every distinct score of a class is a candidate threshold ``thr``, with the rule ``scores >= thr``.
    The search sorts each class once and evaluates all cuts with cumulative sums (O(N log N) per
    class, no loop over thresholds). Only cuts at the end of a run of tied scores are considered,
    because ``scores >= thr`` cannot separate equal scores; the returned threshold is the score at the
    best cut, so applying it reproduces that cut exactly. When several cuts give the same F1, the
    highest threshold (fewest positives) wins. A class without positive references in ``gt`` gets
    ``fallback``. ``gt`` is multi-hot ``[N, C]``, ``scores`` real ``[N, C]``; returns float64 ``[C]``.
    """
    g = check_multi_hot(gt, "gt")
    s = check_scores(scores, "scores")
    check_same_shape(g, s, "gt", "scores")
    real = (int, float, np.integer, np.floating)
    if isinstance(fallback, (bool, np.bool_)) or not isinstance(fallback, real):
        raise ValueError(f"fallback must be a real number, got {fallback!r}")
    if math.isnan(float(fallback)):
        raise ValueError("fallback must not be NaN")
    n, c = s.shape
    result = np.full(c, float(fallback), dtype=np.float64)
    positives = np.count_nonzero(g, axis=0)
    if n == 0:
        return result
    order = np.argsort(-s, axis=0, kind="stable")  # descending scores, per class
    s_sorted = np.take_along_axis(s, order, axis=0)
    tp = np.cumsum(np.take_along_axis(g, order, axis=0), axis=0, dtype=np.int64)  # [N, C]
    n_pred = np.arange(1, n + 1, dtype=np.int64)[:, None]  # positives predicted by cut i: rows 0..i
    precision = tp / (n_pred + EPS)
    recall = tp / (positives[None, :] + EPS)
    f1 = 2 * precision * recall / (precision + recall + EPS)
    reachable = np.ones((n, c), dtype=np.bool_)
    reachable[:-1] = s_sorted[:-1] != s_sorted[1:]  # last row of each run of tied scores
    f1 = np.where(reachable, f1, -np.inf)
    best = np.argmax(f1, axis=0)  # first maximum = highest threshold among equal F1
    chosen = s_sorted[best, np.arange(c)]
    has_pos = positives > 0
    result[has_pos] = chosen[has_pos]
    return result
