"""Segment-level F1 (seed 004 §6.2.1 (1)), per-class counts and segment labels."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from streambench.protocols.metrics import (
    ClassCounts,
    class_counts,
    f1_from_counts,
    precision_recall_f1_from_counts,
    segment_f1,
    segment_labels,
)


def seed_micro_f1(gt: np.ndarray, pred: np.ndarray) -> float:
    """Literal transcription of the Micro-F1 pseudo-code of seed 004 §6.2.1 (1)."""
    TP = FP = FN = 0
    for c in range(gt.shape[1]):
        for i in range(gt.shape[0]):
            y = gt[i][c]
            p = pred[i][c]
            TP += p == 1 and y == 1
            FP += p == 1 and y == 0
            FN += p == 0 and y == 1
    Precision = TP / (TP + FP + 1e-9)
    Recall = TP / (TP + FN + 1e-9)
    return 2 * Precision * Recall / (Precision + Recall + 1e-9)


def seed_macro_f1(gt: np.ndarray, pred: np.ndarray) -> float:
    """Seed 004 §6.2.1 (1) Macro-F1: F1_c of each class with the same pseudo-code, then mean_c."""
    return float(np.mean([seed_micro_f1(gt[:, [c]], pred[:, [c]]) for c in range(gt.shape[1])]))


# Hand case. Class 0: gt 1010, pred 1000 -> TP 1 FP 0 FN 1 (P 1, R 1/2, F1 2/3).
# Class 1: gt 0110, pred 0110 -> TP 2 FP 0 FN 0 (F1 1). Class 2: gt 1000, pred 0100 -> TP 0 FP 1 FN 1 (F1 0).
# Micro: TP 3 FP 1 FN 2 -> P 3/4, R 3/5, F1 = 2 * 0.45 / 1.35 = 2/3. Macro: (2/3 + 1 + 0) / 3 = 5/9.
GT = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]])
PRED = np.array([[1, 0, 0], [0, 1, 1], [0, 1, 0], [0, 0, 0]])


def test_hand_case_counts() -> None:
    counts = class_counts(GT, PRED)
    np.testing.assert_array_equal(counts.tp, [1, 2, 0])
    np.testing.assert_array_equal(counts.fp, [0, 0, 1])
    np.testing.assert_array_equal(counts.fn, [1, 0, 1])
    np.testing.assert_array_equal(counts.support, [2, 2, 1])
    assert counts.tp.dtype == np.int64


def test_hand_case_micro_and_macro() -> None:
    assert segment_f1(GT, PRED) == pytest.approx(2 / 3, abs=1e-8)
    assert segment_f1(GT, PRED, average="macro") == pytest.approx(5 / 9, abs=1e-8)
    prf = precision_recall_f1_from_counts(class_counts(GT, PRED))
    assert (prf.precision, prf.recall) == (pytest.approx(3 / 4, abs=1e-8), pytest.approx(3 / 5, abs=1e-8))


def test_hand_case_equals_seed_pseudo_code_exactly() -> None:
    assert segment_f1(GT, PRED) == seed_micro_f1(GT, PRED)
    assert segment_f1(GT, PRED, average="macro") == pytest.approx(seed_macro_f1(GT, PRED), abs=1e-15)


def test_seed_epsilons_are_used() -> None:
    # one TP only: P = R = 1/(1+1e-9), F1 = 2PR/(P+R+1e-9) is just below 1, not exactly 1
    f1 = segment_f1([[1]], [[1]])
    p = 1 / (1 + 1e-9)
    assert f1 == 2 * p * p / (p + p + 1e-9)
    assert f1 < 1.0
    assert segment_f1([[0]], [[0]]) == 0.0  # nothing to find, nothing found: 0 / 1e-9 = 0


@pytest.mark.parametrize("seed", range(5))
def test_random_against_seed_pseudo_code_and_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gt = rng.random((40, 6)) < 0.3
    pred = rng.random((40, 6)) < 0.3
    gt[:, 5] = False  # an empty class in both, so macro differs between conventions
    pred[:, 5] = False
    assert segment_f1(gt, pred) == pytest.approx(seed_micro_f1(gt, pred), abs=1e-15)
    assert segment_f1(gt, pred, "macro") == pytest.approx(seed_macro_f1(gt, pred), abs=1e-15)
    # sklearn has no epsilons: the values differ by O(1e-9 / count), far below 1e-6
    assert segment_f1(gt, pred) == pytest.approx(
        f1_score(gt, pred, average="micro", zero_division=0), abs=1e-6
    )
    assert segment_f1(gt, pred, "macro") == pytest.approx(
        f1_score(gt, pred, average="macro", zero_division=0), abs=1e-6
    )


# Class 0: TP 1 FP 1 FN 0 -> F1 2/3. Class 1: TP 1 -> F1 1. Class 2: no reference, no prediction -> 0.
GT_EMPTY = np.array([[1, 0, 0], [0, 1, 0]], dtype=bool)
PRED_EMPTY = np.array([[1, 0, 0], [1, 1, 0]], dtype=bool)


def test_macro_exclude_empty_classes() -> None:
    with_empty = segment_f1(GT_EMPTY, PRED_EMPTY, "macro")
    without = segment_f1(GT_EMPTY, PRED_EMPTY, "macro", macro_classes="non_empty")
    assert with_empty == pytest.approx(5 / 9, abs=1e-8)  # (2/3 + 1 + 0) / 3
    assert without == pytest.approx(5 / 6, abs=1e-8)  # (2/3 + 1) / 2
    assert (
        precision_recall_f1_from_counts(
            class_counts(GT_EMPTY, PRED_EMPTY), "macro", "non_empty"
        ).num_classes_averaged
        == 2
    )
    # the sklearn equivalents: zero_division=0 over all labels; exclusion = labels restricted
    assert with_empty == pytest.approx(
        f1_score(GT_EMPTY, PRED_EMPTY, average="macro", zero_division=0), abs=1e-6
    )
    assert without == pytest.approx(
        f1_score(GT_EMPTY, PRED_EMPTY, average="macro", labels=[0, 1], zero_division=0), abs=1e-6
    )
    # sklearn's zero_division=1 counts the empty class as perfect: neither of ours
    assert f1_score(GT_EMPTY, PRED_EMPTY, average="macro", zero_division=1) == pytest.approx(8 / 9)
    # micro is unaffected by empty classes
    for which in ("non_empty", "sed_eval"):
        assert segment_f1(GT_EMPTY, PRED_EMPTY, macro_classes=which) == segment_f1(GT_EMPTY, PRED_EMPTY)


def test_macro_all_classes_empty_is_zero() -> None:
    z = np.zeros((3, 2), dtype=bool)
    assert segment_f1(z, z, "macro", macro_classes="non_empty") == 0.0
    # sed_eval reports NaN here (a mean over no class); streambench 0.0, told apart by the class count
    prf = precision_recall_f1_from_counts(class_counts(z, z), "macro", "sed_eval")
    assert (prf.precision, prf.recall, prf.f1, prf.num_classes_averaged) == (0.0, 0.0, 0.0, 0)


# --- sed_eval's class-wise average (issue 25 item 2) ----------------------------------------------


def sed_eval_class_wise_average(gt: np.ndarray, pred: np.ndarray) -> tuple[float, float, float]:
    """(F1, precision, recall) of sed_eval's segment-based class-wise average, by its documented
    definition (sed_eval 0.2.1, ``sed_eval.metric`` and ``SegmentBasedMetrics.
    results_class_wise_average_metrics``): per class ``P = Ntp / Nsys`` (NaN when ``Nsys == 0``),
    ``R = Ntp / Nref`` (NaN when ``Nref == 0``), ``F = 0`` when ``P == R == 0`` else ``2PR / (P + R)``
    (NaN when P or R is); then ``nanmean`` over the classes, each figure separately. No epsilons."""
    f, p, r = [], [], []
    for c in range(gt.shape[1]):
        n_tp = int(np.sum(gt[:, c] & pred[:, c]))
        n_sys, n_ref = int(pred[:, c].sum()), int(gt[:, c].sum())
        prec = n_tp / n_sys if n_sys else np.nan
        rec = n_tp / n_ref if n_ref else np.nan
        p.append(prec)
        r.append(rec)
        f.append(0.0 if prec == 0 and rec == 0 else 2 * prec * rec / (prec + rec))
    return float(np.nanmean(f)), float(np.nanmean(p)), float(np.nanmean(r))


# Eight segments, six classes, one of each kind sed_eval treats differently:
#   c0 present and predicted: TP 3 FP 1 FN 1 -> P 3/4, R 3/4, F1 3/4
#   c1 present and predicted: TP 2 FP 0 FN 2 -> P 1,   R 1/2, F1 2/3
#   c2 present, never predicted: FN 3         -> P NaN, R 0,  F1 NaN (sed_eval) / 0 (seed)
#   c3 predicted, never present: FP 2         -> P 0,  R NaN, F1 NaN (sed_eval) / 0 (seed)
#   c4 never present, never predicted         -> all NaN (sed_eval) / F1 0 (seed)
#   c5 present and predicted, all wrong: TP 0 FP 1 FN 1 -> P 0, R 0, F1 0 (both)
# sed_eval: F1 = (3/4 + 2/3 + 0) / 3 = 17/36 over c0 c1 c5; P = (3/4 + 1 + 0 + 0) / 4 = 7/16 over
# c0 c1 c3 c5; R = (3/4 + 1/2 + 0 + 0) / 4 = 5/16 over c0 c1 c2 c5.
# Seed ("all"): F1 = (3/4 + 2/3) / 6 = 17/72; "non_empty" (all but c4): 17/60.
#                    c0 c1 c2 c3 c4 c5
GT_SED = np.array(
    [
        [1, 0, 1, 0, 0, 0],
        [1, 0, 0, 0, 0, 0],
        [1, 0, 1, 0, 0, 0],
        [1, 0, 0, 0, 0, 0],
        [0, 1, 1, 0, 0, 0],
        [0, 1, 0, 0, 0, 0],
        [0, 1, 0, 0, 0, 0],
        [0, 1, 0, 0, 0, 1],
    ],
    dtype=bool,
)
PRED_SED = np.array(
    [
        [1, 0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0],
        [1, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [0, 1, 0, 0, 0, 0],
        [0, 0, 0, 1, 0, 1],
        [0, 0, 0, 1, 0, 0],
    ],
    dtype=bool,
)


def test_sed_eval_convention_hand_case() -> None:
    counts = class_counts(GT_SED, PRED_SED)
    np.testing.assert_array_equal(counts.tp, [3, 2, 0, 0, 0, 0])
    np.testing.assert_array_equal(counts.fp, [1, 0, 0, 2, 0, 1])
    np.testing.assert_array_equal(counts.fn, [1, 2, 3, 0, 0, 1])
    sed = precision_recall_f1_from_counts(counts, "macro", "sed_eval")
    assert sed.f1 == pytest.approx(17 / 36, abs=1e-8)
    assert sed.precision == pytest.approx(7 / 16, abs=1e-8)
    assert sed.recall == pytest.approx(5 / 16, abs=1e-8)
    assert sed.num_classes_averaged == 3
    # the seed's macro (the default) and the non-empty classes: the same per-class F1, other means
    assert segment_f1(GT_SED, PRED_SED, "macro") == pytest.approx(17 / 72, abs=1e-8)
    assert segment_f1(GT_SED, PRED_SED, "macro", "non_empty") == pytest.approx(17 / 60, abs=1e-8)
    assert segment_f1(GT_SED, PRED_SED, "macro", "sed_eval") == sed.f1


def test_sed_eval_convention_equals_its_definition() -> None:
    # the hand case, then random cases with classes of every kind (the reference is computed here from
    # sed_eval's definition: the sed_eval package does not import in this environment; these figures
    # were also checked once against sed_eval 0.2.1 itself, SegmentBasedMetrics at time_resolution 1 s
    # with one 1 s event per active (segment, class))
    cases = [(GT_SED, PRED_SED)]
    rng = np.random.default_rng(25)
    for _ in range(20):
        gt = rng.random((30, 7)) < rng.random(7) * 0.5
        pred = rng.random((30, 7)) < rng.random(7) * 0.5
        gt[:, 0], pred[:, 1], gt[:, 2], pred[:, 2] = False, False, False, False
        cases.append((gt, pred))
    for gt, pred in cases:
        f1, precision, recall = sed_eval_class_wise_average(gt, pred)
        ours = precision_recall_f1_from_counts(class_counts(gt, pred), "macro", "sed_eval")
        assert ours.f1 == pytest.approx(f1, abs=1e-7)
        assert ours.precision == pytest.approx(precision, abs=1e-7)
        assert ours.recall == pytest.approx(recall, abs=1e-7)
        # never below the seed's figure: sed_eval leaves out only classes whose F1 is 0 there
        assert ours.f1 >= segment_f1(gt, pred, "macro") - 1e-15


def test_invalid_macro_classes() -> None:
    with pytest.raises(ValueError, match="macro_classes"):
        segment_f1(GT, PRED, "macro", "present")  # type: ignore[arg-type]


def test_counts_add_across_streams() -> None:
    rng = np.random.default_rng(7)
    streams = [(rng.random((n, 4)) < 0.4, rng.random((n, 4)) < 0.4) for n in (5, 17, 1, 30)]
    per_stream = [class_counts(g, p) for g, p in streams]
    total = per_stream[0] + per_stream[1] + per_stream[2] + per_stream[3]
    summed = sum(per_stream, ClassCounts.zeros(4))
    via_builtin_sum = sum(per_stream)  # starts from 0: ClassCounts.__radd__
    assert isinstance(via_builtin_sum, ClassCounts)
    gt_all = np.concatenate([g for g, _ in streams])
    pred_all = np.concatenate([p for _, p in streams])
    concat = class_counts(gt_all, pred_all)
    for name in ("tp", "fp", "fn", "support"):
        np.testing.assert_array_equal(getattr(total, name), getattr(concat, name))
        np.testing.assert_array_equal(getattr(summed, name), getattr(concat, name))
    assert f1_from_counts(total) == segment_f1(gt_all, pred_all)
    assert f1_from_counts(via_builtin_sum, "macro") == segment_f1(gt_all, pred_all, "macro")
    # and it is not the mean of per-stream F1
    assert f1_from_counts(total) != pytest.approx(np.mean([f1_from_counts(c) for c in per_stream]))


def test_counts_add_rejects_mismatched_classes() -> None:
    with pytest.raises(ValueError, match="other"):
        _ = ClassCounts.zeros(3) + ClassCounts.zeros(4)


def test_counts_are_read_only() -> None:
    counts = class_counts(GT, PRED)
    with pytest.raises(ValueError):
        counts.tp[0] = 5


def test_accepts_bool_int_and_float_zero_one() -> None:
    ref = segment_f1(GT, PRED)
    assert segment_f1(GT.astype(bool), PRED.astype(bool)) == ref
    assert segment_f1(GT.astype(np.float32), PRED.astype(np.float64)) == ref
    assert class_counts(np.zeros((0, 3)), np.zeros((0, 3))).tp.tolist() == [0, 0, 0]


@pytest.mark.parametrize(
    ("gt", "pred", "name"),
    [
        (np.zeros((4, 3)), np.zeros((4, 2)), "pred"),  # shape mismatch
        (np.zeros((4, 3)), np.zeros((3, 3)), "pred"),
        (np.full((2, 2), 2), np.zeros((2, 2)), "gt"),  # non-binary
        (np.zeros((2, 2)), np.full((2, 2), 0.5), "pred"),
        (np.zeros((2, 2)), np.full((2, 2), np.nan), "pred"),
        (np.zeros(4), np.zeros(4), "gt"),  # not 2-D
        (np.zeros((2, 0)), np.zeros((2, 0)), "gt"),  # no classes
        (np.array([["a"]]), np.zeros((1, 1)), "gt"),  # dtype
    ],
)
def test_validation_names_the_argument(gt: np.ndarray, pred: np.ndarray, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        segment_f1(gt, pred)


def test_invalid_average() -> None:
    with pytest.raises(ValueError, match="average"):
        segment_f1(GT, PRED, average="weighted")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="counts"):
        f1_from_counts((1, 2, 3))  # type: ignore[arg-type]


def test_segment_labels_or_of_frames() -> None:
    frames = np.array([[1, 0], [0, 0], [0, 1], [0, 0], [1, 0]], dtype=bool)
    seg = segment_labels(frames, np.array([0, 0, 1, 1, 3]), 4)
    np.testing.assert_array_equal(seg, [[1, 0], [0, 1], [0, 0], [1, 0]])  # segment 2 has no frames
    assert seg.dtype == np.bool_
    # order of frames does not matter
    perm = np.array([4, 2, 0, 3, 1])
    np.testing.assert_array_equal(segment_labels(frames[perm], np.array([0, 0, 1, 1, 3])[perm], 4), seg)


def test_segment_labels_random_against_loop() -> None:
    rng = np.random.default_rng(3)
    frames = rng.random((50, 5)) < 0.1
    idx = np.sort(rng.integers(0, 9, size=50))
    expected = np.zeros((9, 5), dtype=bool)
    for i in range(50):
        expected[idx[i]] |= frames[i]
    np.testing.assert_array_equal(segment_labels(frames, idx, 9), expected)


def test_segment_labels_validation() -> None:
    frames = np.zeros((3, 2), dtype=bool)
    with pytest.raises(ValueError, match="segment_index"):
        segment_labels(frames, np.array([0, 1]), 2)
    with pytest.raises(ValueError, match="segment_index"):
        segment_labels(frames, np.array([0, 1, 2]), 2)
    with pytest.raises(ValueError, match="segment_index"):
        segment_labels(frames, np.array([0.0, 1.0, 1.0]), 2)
    with pytest.raises(ValueError, match="num_segments"):
        segment_labels(frames, np.array([0, 0, 0]), -1)
    with pytest.raises(ValueError, match="frame_labels"):
        segment_labels(np.zeros(3), np.array([0, 0, 0]), 1)
