"""Segment-level F1 (seed 004 §6.2.1 (1)), per-class counts and segment labels."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from protocols.metrics import (
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
    without = segment_f1(GT_EMPTY, PRED_EMPTY, "macro", exclude_empty_classes=True)
    assert with_empty == pytest.approx(5 / 9, abs=1e-8)  # (2/3 + 1 + 0) / 3
    assert without == pytest.approx(5 / 6, abs=1e-8)  # (2/3 + 1) / 2
    assert (
        precision_recall_f1_from_counts(
            class_counts(GT_EMPTY, PRED_EMPTY), "macro", True
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
    assert segment_f1(GT_EMPTY, PRED_EMPTY, exclude_empty_classes=True) == segment_f1(GT_EMPTY, PRED_EMPTY)


def test_macro_all_classes_empty_is_zero() -> None:
    z = np.zeros((3, 2), dtype=bool)
    assert segment_f1(z, z, "macro", exclude_empty_classes=True) == 0.0


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
