"""Decision rules (seed 004 §6.2.1 (1), "阈值与校准"): thresholds, top-k, per-class threshold tuning."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from streambench.protocols.metrics import apply_thresholds, apply_top_k, tune_class_thresholds

SCORES = np.array([[0.2, 0.5, 0.9], [0.5, 0.49, 0.1]])


def test_scalar_threshold_with_boundary() -> None:
    # a score equal to the threshold is positive (>=)
    np.testing.assert_array_equal(apply_thresholds(SCORES, 0.5), [[0, 1, 1], [1, 0, 0]])


def test_per_class_thresholds() -> None:
    out = apply_thresholds(SCORES, np.array([0.1, 0.49, 0.95]))
    np.testing.assert_array_equal(out, [[1, 1, 0], [1, 1, 0]])
    assert out.dtype == np.bool_


def test_float32_scores_against_float64_threshold_boundary() -> None:
    s = np.array([[0.3]], dtype=np.float32)
    # the threshold is the float32 value itself (as tune_class_thresholds returns it): exactly positive
    assert apply_thresholds(s, np.array([float(s[0, 0])]))[0, 0]
    assert not apply_thresholds(s, np.nextafter(float(s[0, 0]), 1.0))[0, 0]


def test_top_k_with_ties_lower_index_wins() -> None:
    scores = np.array([[0.5, 0.9, 0.5, 0.5], [0.1, 0.1, 0.1, 0.1], [0.0, 0.3, 0.7, 0.2]])
    np.testing.assert_array_equal(apply_top_k(scores, 2), [[1, 1, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0]])
    np.testing.assert_array_equal(apply_top_k(scores, 1), [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 0]])
    assert not apply_top_k(scores, 0).any()
    assert apply_top_k(scores, 4).all()
    np.testing.assert_array_equal(apply_top_k(scores, 3).sum(axis=1), [3, 3, 3])


def test_top_k_integer_scores() -> None:
    np.testing.assert_array_equal(apply_top_k(np.array([[0, 7, 3]], dtype=np.uint8), 1), [[0, 1, 0]])


def seed_f1(tp: int, fp: int, fn: int) -> float:
    p = tp / (tp + fp + 1e-9)
    r = tp / (tp + fn + 1e-9)
    return 2 * p * r / (p + r + 1e-9)


def brute_force_thresholds(gt: np.ndarray, scores: np.ndarray, fallback: float) -> np.ndarray:
    """Every distinct score as threshold, highest first; the first strict maximum of F1 wins."""
    out = np.full(gt.shape[1], fallback)
    for c in range(gt.shape[1]):
        y = gt[:, c].astype(bool)
        if not y.any():
            continue
        best = -1.0
        for thr in np.unique(scores[:, c])[::-1]:
            p = scores[:, c] >= thr
            f = seed_f1(int((p & y).sum()), int((p & ~y).sum()), int((~p & y).sum()))
            if f > best:
                best, out[c] = f, thr
    return out


def test_tune_hand_case() -> None:
    # class 0 scores 0.9 0.8 0.7 0.6 0.3 with labels 1 1 0 1 0:
    #   thr 0.9: TP1 FP0 FN2 F1 .5; 0.8: TP2 FP0 FN1 F1 .8; 0.7: TP2 FP1 FN1 .667; 0.6: TP3 FP1 FN0 .857
    #   -> 0.6. Class 1 has no positive reference -> fallback.
    gt = np.array([[1, 0], [1, 0], [0, 0], [1, 0], [0, 0]])
    scores = np.array([[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4], [0.3, 0.5]])
    np.testing.assert_array_equal(tune_class_thresholds(gt, scores, fallback=0.25), [0.6, 0.25])


def test_tune_ties_are_grouped() -> None:
    # the cut between the two 0.8 scores (TP1 FP0 -> F1 1) is unreachable with >=; 0.8 gives TP1 FP1
    gt = np.array([[1], [0], [0]])
    scores = np.array([[0.8], [0.8], [0.2]])
    thr = tune_class_thresholds(gt, scores)
    assert thr[0] == 0.8
    pred = apply_thresholds(scores, thr)
    assert pred[:, 0].tolist() == [True, True, False]


@pytest.mark.parametrize("seed", range(8))
def test_tune_against_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, c = 60, 5
    gt = rng.random((n, c)) < 0.3
    gt[:, 4] = False  # no positives -> fallback
    # rounded scores create many ties; correlated with gt so the best cut is not trivial
    scores = np.round(0.6 * rng.random((n, c)) + 0.4 * gt, 1).astype(np.float32)
    thr = tune_class_thresholds(gt, scores, fallback=0.5)
    expected = brute_force_thresholds(gt, scores.astype(np.float64), 0.5)
    np.testing.assert_array_equal(thr, expected)
    assert thr.dtype == np.float64
    # applying the returned thresholds reproduces the best F1 of every class
    pred = apply_thresholds(scores, thr)
    for k in range(4):
        y, p = gt[:, k], pred[:, k]
        best = max(
            seed_f1(int((s & y).sum()), int((s & ~y).sum()), int((~s & y).sum()))
            for s in (scores[:, k][:, None] >= np.unique(scores[:, k])[None, :]).T
        )
        assert seed_f1(int((p & y).sum()), int((p & ~y).sum()), int((~p & y).sum())) == best


def test_frozen_thresholds_are_returned_not_applied() -> None:
    rng = np.random.default_rng(11)
    gt_val = rng.random((50, 3)) < 0.4
    scores_val = rng.random((50, 3)) * 0.5 + 0.5 * gt_val
    scores_copy = scores_val.copy()
    thr = tune_class_thresholds(gt_val, scores_val)
    assert thr.shape == (3,)
    np.testing.assert_array_equal(scores_val, scores_copy)  # inputs untouched
    # frozen: the test split is decided with the validation thresholds, never re-tuned
    scores_test = rng.random((20, 3))
    np.testing.assert_array_equal(apply_thresholds(scores_test, thr), scores_test >= thr[None, :])


def test_tune_empty_data_gives_fallback() -> None:
    np.testing.assert_array_equal(tune_class_thresholds(np.zeros((0, 2)), np.zeros((0, 2)), 0.3), [0.3, 0.3])


BAD_K: Any = 1.0
BAD_FALLBACK: Any = "x"


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: apply_thresholds(np.zeros(3), 0.5), "scores"),
        (lambda: apply_thresholds(np.zeros((2, 3)), np.zeros(2)), "thresholds"),
        (lambda: apply_thresholds(np.zeros((2, 3)), np.zeros((1, 3))), "thresholds"),
        (lambda: apply_thresholds(np.zeros((2, 3)), np.nan), "thresholds"),
        (lambda: apply_thresholds(np.full((2, 3), np.nan), 0.5), "scores"),
        (lambda: apply_thresholds(np.zeros((2, 3), dtype=bool), 0.5), "scores"),
        (lambda: apply_top_k(np.zeros((2, 3)), 4), "k"),
        (lambda: apply_top_k(np.zeros((2, 3)), -1), "k"),
        (lambda: apply_top_k(np.zeros((2, 3)), BAD_K), "k"),
        (lambda: tune_class_thresholds(np.zeros((2, 3)), np.zeros((2, 2))), "scores"),
        (lambda: tune_class_thresholds(np.full((2, 3), 2), np.zeros((2, 3))), "gt"),
        (lambda: tune_class_thresholds(np.zeros((2, 3)), np.zeros((2, 3)), fallback=np.nan), "fallback"),
        (
            lambda: tune_class_thresholds(np.zeros((2, 3)), np.zeros((2, 3)), fallback=BAD_FALLBACK),
            "fallback",
        ),
    ],
)
def test_validation_names_the_argument(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()
