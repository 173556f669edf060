"""Calibration: reliability bins, expected / maximum calibration error (ECE, MCE), Brier score.

Definitions: seed 003 (``seeds/003_7b2efcab91cdd443.txt``) "Calibration" (ECE, MCE, the reliability
diagram and the worked three-sample example) and seed 004 (``seeds/004_45b65944d7246517.txt``)
§6.2.2 "不确定性与校准" (ECE, Brier score as optional online metrics).

Binning convention: a bin is ``(lo, hi]`` — a confidence equal to an edge belongs to the lower bin —
and the first bin also includes its lower edge, as in seed 003's table (``[0.0, 0.4]``, ``(0.4, 0.6]``,
``(0.6, 1.0]``) and in Guo et al.'s reference code (``conf > lo and conf <= hi``, which however drops a
confidence of exactly 0). ``np.digitize`` and some libraries use ``[lo, hi)`` instead; results differ
only for confidences that lie exactly on an inner edge.

Differences from torchmetrics (``binary_calibration_error``, the same ECE): on float64 tensors it agrees
to rounding except on edges. Its bins are ``[lo, hi)``, and a confidence of 1.0 has a bin of its own,
so confidences 0.5 and 0.7 with correct 1 and 0 in two bins give 0.6 here and 0.1 there. On float32
tensors its confidences, edges and per-bin sums are float32: at 1000 bins and 10**6 to 10**7
predictions its ECE moved by 1e-8 to 1e-6 from the float64 value in our runs (relative up to 3e-4).
Everything here is float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import (
    FloatArray,
    IntArray,
    check_binary_vector,
    check_finite,
    check_int,
    check_not_empty,
    check_real_vector,
    check_same_shape,
)

ROW_SUM_TOLERANCE = 1e-5
"""How far a row of multiclass ``probs`` may sum away from 1 (float32 softmax outputs pass)."""


def _check_unit_interval(arr: FloatArray, name: str) -> None:
    bad = (arr < 0) | (arr > 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} must lie in [0, 1]; found {arr.flat[i].item()!r} at flat index {i}")


def _bin_edges(bins: int | npt.ArrayLike) -> tuple[FloatArray, bool]:
    """``bins`` equal-width bins on [0, 1], or explicit strictly increasing finite edges; and whether
    the bins are the equal-width ones."""
    if isinstance(bins, (int, np.integer, bool, np.bool_)):
        n = check_int(bins, "bins", minimum=1)
        return np.arange(n + 1, dtype=np.float64) / n, True  # i / n rounded once: 0.3 is the literal 0.3
    edges = np.asarray(bins)
    if edges.ndim != 1 or edges.size < 2:
        raise ValueError(f"bins must be a number of bins or >= 2 edges [B + 1], got shape {edges.shape}")
    if not (np.issubdtype(edges.dtype, np.integer) or np.issubdtype(edges.dtype, np.floating)):
        raise ValueError(f"bins edges must be real numbers, got dtype {edges.dtype}")
    out = edges.astype(np.float64)
    check_finite(out, "bins")
    if not np.all(out[1:] > out[:-1]):
        raise ValueError(f"bins edges must be strictly increasing, got {out.tolist()}")
    return out, False


def _bin_index(conf: FloatArray, edges: FloatArray, equal_width: bool) -> IntArray:
    """The bin of each confidence: ``i`` with ``edges[i] < conf <= edges[i + 1]`` (the first bin closed),
    i.e. ``searchsorted(edges, conf, "left") − 1`` clipped to the bins.

    Equal-width bins (``edges[i] = i / B``): first ``ceil(conf · B) − 1``, then checked against the
    edges themselves with those comparisons; a confidence the product put on the wrong side of an
    edge (rounding, within a few ulps of it) is placed by the binary search. O(N), where the binary
    search is O(N log B): the same bins, about ten times faster at B = 1000.
    """
    b = edges.size - 1
    if not equal_width:
        return np.clip(np.searchsorted(edges, conf, side="left") - 1, 0, b - 1)
    pos = conf * b
    np.ceil(pos, out=pos)
    index = pos.astype(np.intp)
    index -= 1
    np.clip(index, 0, b - 1, out=index)
    wrong = conf > edges[1:][index]
    wrong |= (conf <= edges[:-1][index]) & (index > 0)
    if wrong.any():
        at = np.flatnonzero(wrong)
        index[at] = np.clip(np.searchsorted(edges, conf[at], side="left") - 1, 0, b - 1)
    return index


@dataclass(frozen=True, slots=True, eq=False)
class ReliabilityBins:
    """Per-bin statistics of a reliability diagram (seed 003), arrays read-only.

    ``edges`` ``[B + 1]``; ``count`` (int64), ``mean_confidence`` and ``accuracy`` ``[B]``. An empty
    bin has count 0 and NaN means, and contributes nothing to :attr:`ece` or :attr:`mce`.
    """

    edges: FloatArray
    count: IntArray
    mean_confidence: FloatArray
    accuracy: FloatArray

    @property
    def n_samples(self) -> int:
        return int(self.count.sum())

    @property
    def gap(self) -> FloatArray:
        """``|accuracy - mean_confidence|`` per bin (NaN for empty bins): seed 003's CalError(B_m)."""
        return np.abs(self.accuracy - self.mean_confidence)

    @property
    def ece(self) -> float:
        """``sum_b (n_b / N) |acc_b - conf_b|`` over the non-empty bins (seed 003, ECE)."""
        full = self.count > 0
        return float(np.sum(self.count[full] / self.n_samples * self.gap[full]))

    @property
    def mce(self) -> float:
        """``max_b |acc_b - conf_b|`` over the non-empty bins (seed 003, MCE)."""
        return float(np.max(self.gap[self.count > 0]))


def reliability_bins(
    confidences: npt.ArrayLike, correct: npt.ArrayLike, bins: int | npt.ArrayLike = 10
) -> ReliabilityBins:
    """Count, mean confidence and accuracy per confidence bin — seed 003, reliability diagram.

    ``confidences`` ``[N]`` in [0, 1] (the confidence of each prediction, e.g. its top-class
    probability, as in seed 003's example) and ``correct`` ``[N]`` bool or 0/1 (was the prediction
    right). For the binary "probability of class 1" diagram pass that probability and the 0/1 labels:
    ``accuracy`` is then the observed frequency of class 1.

    ``bins``: a number of equal-width bins on [0, 1] (default 10, seed 003's example) or explicit
    strictly increasing edges ``[B + 1]``. Bins are ``(lo, hi]`` with the first one closed, so a value
    on an edge belongs to the lower bin; every confidence must lie within ``[edges[0], edges[-1]]``.
    """
    conf = check_real_vector(confidences, "confidences")
    ok = check_binary_vector(correct, "correct")
    check_same_shape(conf, ok, "confidences", "correct")
    check_not_empty(conf, "confidences")
    in_unit = (conf >= 0.0) & (conf <= 1.0)  # False for NaN too: one pass for both checks
    if not in_unit.all():
        check_finite(conf, "confidences")
        _check_unit_interval(conf, "confidences")
    edges, equal_width = _bin_edges(bins)
    if not equal_width:  # equal-width bins cover [0, 1]
        outside = (conf < edges[0]) | (conf > edges[-1])
        if outside.any():
            i = int(np.argmax(outside))
            raise ValueError(
                f"confidences has {conf[i].item()!r} at index {i}, "
                f"outside the bin edges [{edges[0].item()}, {edges[-1].item()}]"
            )
    b = edges.size - 1
    index = _bin_index(conf, edges, equal_width)  # (lo, hi], first bin closed
    # (bin, correct) pairs counted at once: counts without float weights
    pairs = np.bincount(2 * index + ok, minlength=2 * b).reshape(b, 2)
    count = pairs.sum(axis=1).astype(np.int64)
    sum_conf = np.bincount(index, weights=conf, minlength=b)
    sum_correct = pairs[:, 1].astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.where(count > 0, sum_conf / count, np.nan)
        accuracy = np.where(count > 0, sum_correct / count, np.nan)
    for arr in (edges, count, mean_conf, accuracy):
        arr.setflags(write=False)
    return ReliabilityBins(edges=edges, count=count, mean_confidence=mean_conf, accuracy=accuracy)


def ece(confidences: npt.ArrayLike, correct: npt.ArrayLike, bins: int | npt.ArrayLike = 10) -> float:
    """Expected calibration error — seed 003: ``ECE = sum_m (|B_m| / N) |acc(B_m) - conf(B_m)|``.

    Binned as :func:`reliability_bins` (``(lo, hi]`` bins, 10 equal-width bins by default); empty bins
    contribute nothing. Seed 003's example (confidences 0.8, 0.5, 0.55, correct 1, 1, 0, edges
    ``[0, 0.4, 0.6, 1]``) gives 1/12 ≈ 0.0833. The result depends on the binning: always report it.
    Where torchmetrics' value differs (edges, float32): the module docstring.
    """
    return reliability_bins(confidences, correct, bins).ece


def mce(confidences: npt.ArrayLike, correct: npt.ArrayLike, bins: int | npt.ArrayLike = 10) -> float:
    """Maximum calibration error — seed 003: ``MCE = max_m |acc(B_m) - conf(B_m)|``.

    Over the non-empty bins of :func:`reliability_bins`; seed 003's example gives 0.2. MCE >= ECE.
    """
    return reliability_bins(confidences, correct, bins).mce


def brier(probs: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Brier score, the mean squared error of probabilistic predictions — seed 004 §6.2.2 (Brier Score).

    - binary: ``probs`` ``[N]`` is the probability of class 1 and ``labels`` ``[N]`` is 0/1 (or
      bool): ``mean_i (p_i - y_i)^2``, in [0, 1]. This is the form of
      ``sklearn.metrics.brier_score_loss`` for binary targets.
    - multiclass: ``probs`` ``[N, C]`` (rows summing to 1 within ``ROW_SUM_TOLERANCE``) and ``labels``
      ``[N]`` integer class indices in ``[0, C)``: ``mean_i sum_c (p_ic - 1[y_i = c])^2``, in [0, 2]
      (Brier's original definition). scikit-learn uses this summed form only for three or more
      classes: for two columns it halves the sum (``scale_by_half="auto"``), so an ``[N, 2]`` input
      here scores twice sklearn's default (equal to its ``scale_by_half=False``), and twice the binary
      form of the same predictions.
    """
    p = np.asarray(probs)
    if p.ndim not in (1, 2):
        raise ValueError(f"probs must be [N] (binary) or [N, C] (multiclass), got shape {p.shape}")
    if not (np.issubdtype(p.dtype, np.integer) or np.issubdtype(p.dtype, np.floating)):
        raise ValueError(f"probs must be real numbers, got dtype {p.dtype}")
    p64 = p.astype(np.float64)
    check_finite(p64.ravel(), "probs")
    if p64.shape[0] == 0:
        raise ValueError("probs is empty: there are no samples")
    _check_unit_interval(p64, "probs")
    if p64.ndim == 1:
        y = check_binary_vector(labels, "labels")
        check_same_shape(p64, y, "probs", "labels")
        return float(np.mean((p64 - y) ** 2))
    n, c = p64.shape
    if c == 0:
        raise ValueError(f"probs must have at least one class (shape {p64.shape})")
    row_error = np.abs(p64.sum(axis=1) - 1.0)
    if np.any(row_error > ROW_SUM_TOLERANCE):
        i = int(np.argmax(row_error))
        raise ValueError(f"probs rows must sum to 1; row {i} sums to {p64[i].sum().item()!r}")
    y_idx = np.asarray(labels)
    if y_idx.ndim != 1 or not np.issubdtype(y_idx.dtype, np.integer):
        raise ValueError(f"labels must be integer class indices [N], got {y_idx.dtype} {y_idx.shape}")
    if y_idx.shape[0] != n:
        raise ValueError(f"labels has {y_idx.shape[0]} entries, expected one per row of probs ({n})")
    if np.any((y_idx < 0) | (y_idx >= c)):
        raise ValueError(f"labels must be class indices in [0, {c})")
    diff = p64.copy()
    diff[np.arange(n), y_idx] -= 1.0
    return float(np.mean(np.sum(diff**2, axis=1)))
