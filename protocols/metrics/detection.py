"""Binary detection metrics (deepfake / spoof detection): FAR, FRR, EER, ROC AUC, F1, balanced accuracy.

Definitions: seed 002 (``seeds/002_b79c7f066c0f6558.txt``) "Core Metrics" and seed 000
(``seeds/000_9596100f0090cc0e.txt``) §6. The conventions, shared by every function here:

- labels: 1 = bona fide / real, 0 = spoof / fake (seed 000 §6 step 1, seed 002 "File Format");
- scores: higher = more likely real (seed 002 "Score Normalization"), any finite real numbers;
- a sample is *accepted* (called real) when ``score >= threshold`` (seed 000 §6 step 2);
- FAR = FP / (FP + TN), the share of fakes accepted; FRR = FN / (FN + TP), the share of reals rejected.
  In scikit-learn terms, with real as the positive class: FAR = fpr, FRR = 1 - tpr (= fnr).

Operating points exist only at distinct score values, since ``score >= threshold`` cannot separate
tied scores. Every curve comes from one sort per class and a merge (O(n log n), no loop over
thresholds); counts are compared in exact integer arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import (
    BoolArray,
    FloatArray,
    IntArray,
    check_binary_vector,
    check_finite_vector,
    check_not_empty,
    check_same_shape,
)

EERMethod = Literal["nearest", "interpolated"]


# --------------------------------------------------------------------------------------------------
# validation helpers (also used by calibration.py)


def _check_detection_inputs(labels: npt.ArrayLike, scores: npt.ArrayLike) -> tuple[BoolArray, FloatArray]:
    """``(is_real, scores)`` of two equally long, non-empty vectors holding both classes."""
    real = check_binary_vector(labels, "labels")
    s = check_finite_vector(scores, "scores")
    check_same_shape(real, s, "labels", "scores")
    check_not_empty(real, "labels")
    n_real = int(np.count_nonzero(real))
    if n_real in (0, real.size):
        only, missing = ("fake (0)", "real (1)") if n_real == 0 else ("real (1)", "fake (0)")
        raise ValueError(
            f"labels contains a single class: only {only} samples, no {missing} ones; "
            "FAR, FRR, EER and AUC need both classes"
        )
    return real, s


def _check_threshold(threshold: object) -> float:
    real_types = (int, float, np.integer, np.floating)
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, real_types):
        raise ValueError(f"threshold must be a real number, got {threshold!r}")
    value = float(threshold)
    if np.isnan(value):
        raise ValueError("threshold is NaN")
    return value


def _check_method(method: object) -> EERMethod:
    if method not in ("nearest", "interpolated"):
        raise ValueError(f"method must be 'nearest' or 'interpolated', got {method!r}")
    return method


# --------------------------------------------------------------------------------------------------
# operating points


class _Points(NamedTuple):
    n_real: int
    n_fake: int
    thresholds: FloatArray  # the distinct scores, ascending
    real_below: IntArray  # reals rejected at each threshold (score < t)
    fake_above: IntArray  # fakes accepted at each threshold (score >= t)


def _points(real: BoolArray, scores: FloatArray) -> _Points:
    """Counts at every distinct score: one sort per class, a merge and one search of the smaller class."""
    r, f = np.sort(scores[real]), np.sort(scores[~real])
    merged = np.concatenate((r, f))
    merged.sort(kind="stable")  # timsort finds the two sorted runs: a linear merge
    first = np.empty(merged.size, dtype=np.bool_)
    first[0] = True
    np.not_equal(merged[1:], merged[:-1], out=first[1:])
    starts = np.flatnonzero(first)  # = number of scores below each distinct score
    thresholds = merged[starts]
    small = r if r.size <= f.size else f
    per_score = np.bincount(np.searchsorted(thresholds, small), minlength=thresholds.size)
    small_below = np.cumsum(per_score) - per_score
    real_below = small_below if small is r else starts - small_below
    return _Points(r.size, f.size, thresholds, real_below, f.size - (starts - real_below))


@dataclass(frozen=True, slots=True, eq=False)
class OperatingPoints:
    """FAR and FRR (float64 ``[M]``, read-only) at each threshold of ``thresholds`` (``score >= t``)."""

    thresholds: FloatArray
    far: FloatArray
    frr: FloatArray

    def __post_init__(self) -> None:
        for arr in (self.thresholds, self.far, self.frr):
            arr.setflags(write=False)


def det_curve_points(labels: npt.ArrayLike, scores: npt.ArrayLike) -> OperatingPoints:
    """FAR and FRR at every distinct score value, thresholds ascending (for DET plots).

    Definitions: seed 002 "Core Metrics" (FAR = FP/(FP+TN), FRR = FN/(FN+TP)), thresholds as in seed
    000 §6 step 2 (``for threshold in sorted(unique(scores))``, accept ``score >= threshold``). The
    first point accepts everything (FAR 1, FRR 0); "reject everything" is not a score value and is
    not included. ``sklearn.metrics.det_curve`` gives the same points in the same order (fpr = FAR,
    fnr = FRR, real as positive class) but drops the redundant runs at both ends and may append the
    reject-everything point (threshold ``inf``).
    """
    p = _points(*_check_detection_inputs(labels, scores))
    return OperatingPoints(p.thresholds, p.fake_above / p.n_fake, p.real_below / p.n_real)


def roc_curve_points(labels: npt.ArrayLike, scores: npt.ArrayLike) -> OperatingPoints:
    """FAR and FRR for a ROC plot: thresholds descending, starting at ``+inf`` (FAR 0, FRR 1).

    The points of :func:`det_curve_points` (seed 002 "Core Metrics", seed 000 §6) in reverse order,
    preceded by the reject-everything point, so that they are exactly the rows of
    ``sklearn.metrics.roc_curve(labels, scores, drop_intermediate=False)`` with fpr = FAR and
    tpr = 1 - FRR (real as positive class; scikit-learn >= 1.3 also puts ``inf`` first).
    """
    det = det_curve_points(labels, scores)
    return OperatingPoints(
        np.concatenate(([np.inf], det.thresholds[::-1])),
        np.concatenate(([0.0], det.far[::-1])),
        np.concatenate(([1.0], det.frr[::-1])),
    )


# --------------------------------------------------------------------------------------------------
# FAR / FRR, EER, AUC


def far_frr(labels: npt.ArrayLike, scores: npt.ArrayLike, threshold: float) -> tuple[float, float]:
    """``(FAR, FRR)`` when samples with ``score >= threshold`` are accepted as real.

    Seed 002 "Core Metrics": FAR = FP / (FP + TN) (fakes accepted), FRR = FN / (FN + TP) (reals
    rejected); labels 1 = real, 0 = fake; the ``>=`` rule of seed 000 §6 step 2 (a score equal to the
    threshold is accepted). ``threshold`` may be ``±inf`` (accept nothing / everything), not NaN.
    """
    real, s = _check_detection_inputs(labels, scores)
    t = _check_threshold(threshold)
    accepted = s >= t
    n_real = int(np.count_nonzero(real))
    false_accepts = int(np.count_nonzero(accepted & ~real))
    false_rejects = int(np.count_nonzero(real & ~accepted))
    return false_accepts / (real.size - n_real), false_rejects / n_real


@dataclass(frozen=True, slots=True)
class EERResult:
    """Equal error rate, the threshold it was found at, FAR and FRR there, and the method used."""

    eer: float
    threshold: float
    far: float
    frr: float
    method: EERMethod


def _eer(p: _Points, method: EERMethod) -> EERResult:
    nr, nf, thr, real_below, fake_above = p
    # nr * nf * (FAR - FRR), exact and strictly decreasing along the thresholds (int64: n <= ~3e9)
    diff = fake_above * nr - real_below * nf
    if method == "nearest":
        j = int(np.argmin(np.abs(diff)))  # first minimum: the lower threshold of a tie
        far, frr = int(fake_above[j]) / nf, int(real_below[j]) / nr
        return EERResult((far + frr) / 2, float(thr[j]), far, frr, "nearest")
    k = int(np.count_nonzero(diff >= 0)) - 1  # last point with FAR >= FRR (diff[0] = nr * nf > 0)
    # points k and k + 1; past the highest score comes "reject everything" (FAR 0, FRR 1)
    d = np.append(diff[k : k + 2], -nr * nf)[:2]
    fa = np.append(fake_above[k : k + 2], 0)[:2] / nf
    fr = np.append(real_below[k : k + 2], nr)[:2] / nr
    with np.errstate(over="ignore"):  # the next float above the largest finite one is inf
        ts = np.append(thr[k : k + 2], np.nextafter(thr[-1], np.inf))[:2]
    alpha = float(d[0] / (d[0] - d[1]))  # 0 if FAR = FRR exactly at point k
    far_x = float(fa[0] + alpha * (fa[1] - fa[0]))
    frr_x = float(fr[0] + alpha * (fr[1] - fr[0]))
    threshold = float(ts[0]) if alpha == 0 else float((1.0 - alpha) * ts[0] + alpha * ts[1])
    return EERResult((far_x + frr_x) / 2, threshold, far_x, frr_x, "interpolated")


def eer(labels: npt.ArrayLike, scores: npt.ArrayLike, method: EERMethod = "nearest") -> EERResult:
    """Equal error rate of real (1) against fake (0) samples — seed 000 §6, seed 002 "Core Metrics".

    - ``method="nearest"`` (default, the seeds' rule): over every distinct score value ``t``
      (accept ``score >= t``), the threshold minimising ``|FAR - FRR|``; EER = (FAR + FRR) / 2 there.
      Tied scores form one operating point, so the result is always reachable: ``far_frr(labels,
      scores, result.threshold)`` returns ``(result.far, result.frr)``. If two thresholds are equally
      near (one with FAR > FRR, the next with FAR < FRR) the lower one is reported.
    - ``method="interpolated"``: FAR and FRR are joined linearly between consecutive operating points
      (the curve runs from accept-everything, FAR 1 / FRR 0, to reject-everything, FAR 0 / FRR 1) and
      EER is the value where they cross, so ``far == frr == eer`` up to rounding. This equals the
      common ROC recipe ``brentq(lambda x: 1 - x - interp1d(fpr, tpr)(x), 0, 1)``. The reported
      ``threshold`` is the score interpolated with the same weight between the two bracketing
      distinct scores (beyond the highest score: towards the next float above it), or that score
      itself when FAR = FRR exactly there. It is a reference point, not an operating point: applying
      it yields the rates of a bracketing score (in general the upper one), not the interpolated ones.

    O(n log n): one sort per class and a merge. Raises ``ValueError`` on empty input, a single class,
    NaN/Inf scores, or labels other than 0/1.
    """
    m = _check_method(method)
    return _eer(_points(*_check_detection_inputs(labels, scores)), m)


def _auc(p: _Points) -> float:
    """Mann–Whitney U / (nr nf) from the operating points: each real against the fakes below it."""
    real_at = np.diff(p.real_below, append=p.n_real)  # reals at each distinct score
    fake_at = -np.diff(p.fake_above, append=0)  # fakes at each distinct score
    # 2U = sum over scores of reals there * (2 * fakes below + fakes tied): a tie counts one half
    twice_u = int(np.dot(real_at, 2 * (p.n_fake - p.fake_above) + fake_at))
    return twice_u / (2 * p.n_real * p.n_fake)


def roc_auc(labels: npt.ArrayLike, scores: npt.ArrayLike) -> float:
    """Area under the ROC curve of real (1) vs fake (0) — seed 002 "Additional Metrics" (AUC).

    Computed as the Mann–Whitney statistic ``U / (n_real * n_fake)``: the probability that a random
    real sample scores above a random fake one, a tie counting one half. This equals the trapezoidal
    area under the ROC curve, i.e. ``sklearn.metrics.roc_auc_score(labels, scores)``.
    """
    return _auc(_points(*_check_detection_inputs(labels, scores)))


# --------------------------------------------------------------------------------------------------
# everything at once


@dataclass(frozen=True, slots=True)
class DetectionMetrics:
    """Seed 002's metric set (see :func:`detection_metrics`); rates and scores are fractions in [0, 1]."""

    eer: float
    eer_threshold: float
    eer_method: EERMethod
    threshold: float
    far: float
    frr: float
    auc: float
    f1: float
    balanced_accuracy: float
    n_real: int
    n_fake: int


def detection_metrics(
    labels: npt.ArrayLike,
    scores: npt.ArrayLike,
    threshold: float | None = None,
    method: EERMethod = "nearest",
) -> DetectionMetrics:
    """EER, AUC, and FAR / FRR / F1 / balanced accuracy at a threshold — seed 002 "Core Metrics".

    Seed 002's ``compute_all_metrics(labels, scores, threshold=None)``: the EER and its threshold
    (:func:`eer` with ``method``), the AUC (:func:`roc_auc`), and at ``threshold`` (default: the EER
    threshold; with ``method="interpolated"`` that is the interpolated score, and FAR / FRR here are
    the rates actually obtained there) FAR and FRR (:func:`far_frr`), the F1 of the real class
    (positive = real: precision TP/(TP+FP), recall TP/(TP+FN), F1 = 2TP/(2TP+FP+FN), as
    ``sklearn.metrics.f1_score`` — no epsilon, unlike the seed-004 F1 of :mod:`.events`) and balanced
    accuracy ``(TPR + TNR) / 2 = 1 - (FAR + FRR) / 2`` (``sklearn.metrics.balanced_accuracy_score``).
    One sort per class serves every number.
    """
    m = _check_method(method)
    p = _points(*_check_detection_inputs(labels, scores))
    e = _eer(p, m)
    t = e.threshold if threshold is None else _check_threshold(threshold)
    nr, nf = p.n_real, p.n_fake
    j = int(np.searchsorted(p.thresholds, t, side="left"))  # first distinct score >= t: its counts
    fn = int(p.real_below[j]) if j < p.thresholds.size else nr
    fp = int(p.fake_above[j]) if j < p.thresholds.size else 0
    tp, tn = nr - fn, nf - fp
    return DetectionMetrics(
        eer=e.eer,
        eer_threshold=e.threshold,
        eer_method=m,
        threshold=t,
        far=fp / nf,
        frr=fn / nr,
        auc=_auc(p),
        f1=2 * tp / (2 * tp + fp + fn),
        balanced_accuracy=(tp / nr + tn / nf) / 2,
        n_real=nr,
        n_fake=nf,
    )
