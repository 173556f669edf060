"""Label metrics: segment-level F1 (micro / macro), frame accuracy and exact-match accuracy.

Definitions follow seed 004 (``seeds/004_45b65944d7246517.txt``) §6.2.1: F1 is built on per-class
TP/FP/FN with the seed's ``1e-9`` epsilons, micro-averaged by default (TP/FP/FN accumulated over all
classes and segments first), macro-averaged on request (mean of per-class F1). Which classes enter the
macro mean is :data:`MacroClasses`: all of them (the seed's, the default), the non-empty ones
(scikit-learn with ``labels=`` restricted), or those sed_eval averages over (its class-wise average).

Pure numpy: no I/O, no global state. Public functions validate their arguments and raise ``ValueError``
naming the offending argument; the private helpers trust their inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import (
    BoolArray,
    FloatArray,
    IntArray,
    check_int,
    check_int_vector,
    check_multi_hot,
    check_same_shape,
)

EPS = 1e-9
"""The epsilon of seed 004 §6.2.1 (1): added to every denominator of precision, recall and F1."""

Average = Literal["micro", "macro"]

MacroClasses = Literal["all", "non_empty", "sed_eval"]
"""Which classes a macro average runs over (:func:`precision_recall_f1_from_counts`):

- ``"all"`` (default): every class, as seed 004 §6.2.1 (1) defines Macro-F1 (``mean_c F1_c`` over the
  ``C`` classes); a class never present and never predicted scores 0 inside the mean.
- ``"non_empty"``: the classes present in the reference or predicted at least once.
- ``"sed_eval"``: the convention of sed_eval's class-wise average (``SegmentBasedMetrics``,
  ``results_class_wise_average_metrics``): there a class's precision is undefined (NaN) when it is never
  predicted and its recall when it is never present, its F1 is NaN when either is, and the averages are
  ``nanmean`` over classes. So F1 is averaged over the classes both present and predicted, precision over
  the predicted ones, recall over the present ones. A class that is present but never predicted — a
  class the model misses entirely — is left out of the F1 mean, so this figure is never below
  ``"all"``'s and can be far above it.
"""


def _check_average(average: object) -> Average:
    if average not in ("micro", "macro"):
        raise ValueError(f"average must be 'micro' or 'macro', got {average!r}")
    return average


def _check_macro_classes(macro_classes: object) -> MacroClasses:
    if macro_classes not in ("all", "non_empty", "sed_eval"):
        raise ValueError(f"macro_classes must be 'all', 'non_empty' or 'sed_eval', got {macro_classes!r}")
    return macro_classes


# --------------------------------------------------------------------------------------------------
# counts


@dataclass(frozen=True, slots=True, eq=False)
class ClassCounts:
    """Per-class confusion counts, each an int64 array ``[C]`` (read-only).

    ``support`` is the number of reference positives of each class (``tp + fn``). Counts of several
    streams add with ``+`` (and ``sum(...)``, which starts from ``0``), so a micro F1 over many streams
    is the F1 of the summed counts. Equality is identity (``eq=False``): compare the fields.
    """

    tp: IntArray
    fp: IntArray
    fn: IntArray
    support: IntArray

    def __post_init__(self) -> None:
        shape: tuple[int, ...] | None = None
        for name in ("tp", "fp", "fn", "support"):
            arr = np.array(getattr(self, name), copy=True)
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(f"{name} must be a 1-D integer array [C], got {arr.dtype} {arr.shape}")
            if np.any(arr < 0):
                raise ValueError(f"{name} must be non-negative counts")
            if shape is not None and arr.shape != shape:
                raise ValueError(f"{name} has shape {arr.shape}, expected {shape} like tp")
            shape = arr.shape
            arr = arr.astype(np.int64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    @property
    def num_classes(self) -> int:
        return int(self.tp.size)

    @classmethod
    def zeros(cls, num_classes: int) -> ClassCounts:
        """All-zero counts for ``num_classes`` classes (the neutral element of ``+``)."""
        n = check_int(num_classes, "num_classes", minimum=1)
        z = np.zeros(n, dtype=np.int64)
        return cls(tp=z, fp=z, fn=z, support=z)

    def __add__(self, other: object) -> ClassCounts:
        if not isinstance(other, ClassCounts):
            return NotImplemented
        if other.num_classes != self.num_classes:
            raise ValueError(
                f"other has {other.num_classes} classes, cannot add to counts of {self.num_classes} classes"
            )
        return ClassCounts(
            tp=self.tp + other.tp,
            fp=self.fp + other.fp,
            fn=self.fn + other.fn,
            support=self.support + other.support,
        )

    def __radd__(self, other: object) -> ClassCounts:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:  # sum() starts at 0
            return self
        return self.__add__(other)


def class_counts(gt: npt.ArrayLike, pred: npt.ArrayLike) -> ClassCounts:
    """Per-class TP / FP / FN / support of multi-hot ``pred`` against ``gt``, both ``[N, C]``.

    Definition: the counts of the Micro-F1 pseudo-code of seed 004 §6.2.1 (1), kept per class
    (``TP += p==1 and y==1``, ``FP += p==1 and y==0``, ``FN += p==0 and y==1``).
    ``gt`` and ``pred`` are bool or 0/1 arrays; ``N`` may be 0 (all counts zero).
    """
    g = check_multi_hot(gt, "gt")
    p = check_multi_hot(pred, "pred")
    check_same_shape(g, p, "gt", "pred")
    tp = np.count_nonzero(g & p, axis=0)
    fp = np.count_nonzero(~g & p, axis=0)
    fn = np.count_nonzero(g & ~p, axis=0)
    return ClassCounts(tp=tp, fp=fp, fn=fn, support=tp + fn)


# --------------------------------------------------------------------------------------------------
# F1


@dataclass(frozen=True, slots=True)
class PrecisionRecallF1:
    """Precision, recall and F1 (fractions in [0, 1]) with the averaging that produced them."""

    precision: float
    recall: float
    f1: float
    average: Average
    num_classes_averaged: int
    """Classes in the mean of ``f1`` (the precision and recall means of ``"sed_eval"`` may use others)."""


def _prf(tp: FloatArray, fp: FloatArray, fn: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Seed 004 §6.2.1 (1) formulas, elementwise (operation order as in the pseudo-code)."""
    precision = tp / (tp + fp + EPS)
    recall = tp / (tp + fn + EPS)
    f1 = 2 * precision * recall / (precision + recall + EPS)
    return precision, recall, f1


def precision_recall_f1_from_counts(
    counts: ClassCounts, average: Average = "micro", macro_classes: MacroClasses = "all"
) -> PrecisionRecallF1:
    """Precision, recall and F1 from per-class counts — seed 004 §6.2.1 (1).

    - ``average="micro"`` (the seed's default): TP, FP, FN summed over all classes (and segments, and
      streams if the counts were added), then ``P = TP/(TP+FP+1e-9)``, ``R = TP/(TP+FN+1e-9)``,
      ``F1 = 2PR/(P+R+1e-9)``. ``macro_classes`` has no effect.
    - ``average="macro"``: the same formulas per class, then the mean over classes of P, R and F1
      (so the macro F1 is the mean of per-class F1, not the F1 of the macro P and R). The classes in the
      mean are chosen by ``macro_classes`` (:data:`MacroClasses`): ``"all"`` (default, the seed's
      definition: a class with neither references nor predictions scores F1 = 0), ``"non_empty"``, or
      ``"sed_eval"`` (F1 over the classes both present and predicted, P over the predicted ones, R over
      the present ones). A mean over no class is 0.0 (sed_eval reports NaN there); ``num_classes_averaged``
      is then 0.

    Conventions compared with the libraries (the per-class formulas keep the seed's ``1e-9``
    epsilons in every mode; the libraries have none, so results differ by O(1e-9)):

    - scikit-learn's ``f1_score(..., zero_division=z)`` gives an empty class (no reference, no
      prediction, F1 = 0/0) the value ``z`` *inside* the mean. ``zero_division=0`` matches ``"all"``,
      ``"non_empty"`` matches sklearn with ``labels=`` restricted to the non-empty classes;
      ``zero_division=1`` (count empty classes as perfect) has no equivalent here.
    - sed_eval's segment-based class-wise average (``f_measure``, ``precision``, ``recall`` of
      ``results_class_wise_average_metrics()``) is ``"sed_eval"``, given the same per-segment activity.
    """
    if not isinstance(counts, ClassCounts):
        raise ValueError(f"counts must be a ClassCounts, got {type(counts).__name__}")
    avg = _check_average(average)
    which = _check_macro_classes(macro_classes)
    tp = counts.tp.astype(np.float64)
    fp = counts.fp.astype(np.float64)
    fn = counts.fn.astype(np.float64)
    if avg == "micro":
        p, r, f = _prf(tp.sum(keepdims=True), fp.sum(keepdims=True), fn.sum(keepdims=True))
        return PrecisionRecallF1(float(p[0]), float(r[0]), float(f[0]), "micro", counts.num_classes)
    predicted = counts.tp + counts.fp > 0
    present = counts.support > 0
    if which == "all":
        in_p = in_r = in_f = np.ones(counts.num_classes, dtype=np.bool_)
    elif which == "non_empty":
        in_p = in_r = in_f = predicted | present
    else:  # sed_eval: P undefined for a class never predicted, R for one never present, F1 for either
        in_p, in_r, in_f = predicted, present, predicted & present
    p, r, f = _prf(tp, fp, fn)
    return PrecisionRecallF1(
        _mean_over(p, in_p), _mean_over(r, in_r), _mean_over(f, in_f), "macro", int(np.count_nonzero(in_f))
    )


def _mean_over(values: FloatArray, keep: BoolArray) -> float:
    """Mean of ``values[keep]``; 0.0 when ``keep`` selects nothing."""
    return float(values[keep].mean()) if keep.any() else 0.0


def f1_from_counts(
    counts: ClassCounts, average: Average = "micro", macro_classes: MacroClasses = "all"
) -> float:
    """F1 from per-class counts — seed 004 §6.2.1 (1), micro by default, macro on request.

    See :func:`precision_recall_f1_from_counts` for both averages, the ``macro_classes`` option
    (:data:`MacroClasses`: the seed's, scikit-learn's and sed_eval's choice of classes) and how they
    relate to those libraries.
    """
    return precision_recall_f1_from_counts(counts, average, macro_classes).f1


def segment_f1(
    gt: npt.ArrayLike,
    pred: npt.ArrayLike,
    average: Average = "micro",
    macro_classes: MacroClasses = "all",
) -> float:
    """Segment-level F1 of multi-hot ``pred`` against ``gt`` (``[S, C]``) — seed 004 §6.2.1 (1).

    ``f1_from_counts(class_counts(gt, pred), average, macro_classes)``; micro by default (the seed's
    default), macro = mean of per-class F1 over all classes (the seed's) unless ``macro_classes`` says
    otherwise — ``"sed_eval"`` gives sed_eval's segment-based class-wise F1 (:data:`MacroClasses`).
    Use :func:`segment_labels` to turn frame labels into segment labels.
    """
    return f1_from_counts(class_counts(gt, pred), average, macro_classes)


# --------------------------------------------------------------------------------------------------
# accuracies


def frame_accuracy(gt: npt.ArrayLike, pred: npt.ArrayLike) -> float:
    """Frame-level accuracy of single-label integer sequences ``[N]`` — seed 004 §6.2.1 (3).

    ``Acc = correct_frames / total_frames``, i.e. ``mean(gt == pred)`` (scikit-learn's
    ``accuracy_score`` on label vectors). ``N`` must be at least 1.
    """
    g = np.asarray(gt)
    p = np.asarray(pred)
    for arr, name in ((g, "gt"), (p, "pred")):
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array of class indices [N], got shape {arr.shape}")
        if not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == np.bool_):
            raise ValueError(f"{name} must hold integer class indices, got dtype {arr.dtype}")
    check_same_shape(g, p, "gt", "pred")
    if g.size == 0:
        raise ValueError("gt is empty: accuracy of zero frames is undefined")
    return float(np.count_nonzero(g == p) / g.size)


def exact_match_accuracy(gt: npt.ArrayLike, pred: npt.ArrayLike) -> float:
    """Fraction of rows whose whole label set matches, for multi-hot ``[N, C]`` arrays.

    The Acc of seed 004 §6.2.2 (1) (``1[y_pred == y_gt]``) applied to multi-hot labels: a row counts
    only if every class agrees (scikit-learn's "subset accuracy", ``accuracy_score`` on indicator
    matrices). ``N`` must be at least 1.
    """
    g = check_multi_hot(gt, "gt")
    p = check_multi_hot(pred, "pred")
    check_same_shape(g, p, "gt", "pred")
    if g.shape[0] == 0:
        raise ValueError("gt has no rows: accuracy of zero units is undefined")
    return float(np.count_nonzero(np.all(g == p, axis=1)) / g.shape[0])


def segment_labels(frame_labels: npt.ArrayLike, segment_index: npt.ArrayLike, num_segments: int) -> BoolArray:
    """Segment labels ``[S, C]``: the OR of the labels of the frames in each segment.

    Seed 004 §6.2.1 (1) cuts a stream into fixed windows and labels each window: a class is present
    in a segment if it is present in any of its frames. Frame ``i`` belongs to segment
    ``segment_index[i]`` (any order; ``0 <= segment_index[i] < num_segments``); a segment without
    frames has no labels.
    """
    labels = check_multi_hot(frame_labels, "frame_labels")
    seg = check_int_vector(segment_index, "segment_index")
    n_seg = check_int(num_segments, "num_segments", minimum=0)
    if seg.shape[0] != labels.shape[0]:
        raise ValueError(
            f"segment_index has {seg.shape[0]} entries, "
            f"expected one per frame of frame_labels ({labels.shape[0]})"
        )
    if seg.size and (seg.min() < 0 or seg.max() >= n_seg):
        raise ValueError(f"segment_index values must lie in [0, num_segments={n_seg})")
    out = np.zeros((n_seg, labels.shape[1]), dtype=np.bool_)
    rows, cols = np.nonzero(labels)
    out[seg[rows], cols] = True  # every written value is True, so repeated indices are harmless
    return out
