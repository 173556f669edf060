"""Frame accuracy (seed 004 §6.2.1 (3)) and exact-match accuracy (seed 004 §6.2.2 (1) on multi-hot)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score

from streambench.protocols.metrics import exact_match_accuracy, frame_accuracy


def test_frame_accuracy_hand_case() -> None:
    # frames 0, 2, 3 correct out of 5: Acc = correct_frames / total_frames = 3/5
    gt = np.array([0, 1, 2, 2, 1])
    pred = np.array([0, 2, 2, 2, 0])
    assert frame_accuracy(gt, pred) == 0.6
    assert frame_accuracy(gt, gt) == 1.0
    assert frame_accuracy([3], [4]) == 0.0


@pytest.mark.parametrize("seed", range(4))
def test_frame_accuracy_against_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gt = rng.integers(0, 5, size=200)
    pred = np.where(rng.random(200) < 0.6, gt, rng.integers(0, 5, size=200))
    assert frame_accuracy(gt, pred) == pytest.approx(accuracy_score(gt, pred), abs=1e-12)


def test_exact_match_hand_case() -> None:
    # row 0 equal, row 1 differs in class 2, row 2 equal (empty set), row 3 differs in class 0 -> 2/4
    gt = np.array([[1, 0, 1], [0, 1, 0], [0, 0, 0], [1, 1, 0]])
    pred = np.array([[1, 0, 1], [0, 1, 1], [0, 0, 0], [0, 1, 0]])
    assert exact_match_accuracy(gt, pred) == 0.5
    assert exact_match_accuracy(gt.astype(bool), pred.astype(np.float32)) == 0.5


@pytest.mark.parametrize("seed", range(4))
def test_exact_match_against_sklearn_subset_accuracy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gt = rng.random((100, 3)) < 0.3
    pred = gt ^ (rng.random((100, 3)) < 0.15)
    assert exact_match_accuracy(gt, pred) == pytest.approx(accuracy_score(gt, pred), abs=1e-12)


@pytest.mark.parametrize(
    ("gt", "pred", "name"),
    [
        (np.array([0, 1]), np.array([0, 1, 1]), "pred"),
        (np.array([0.0, 1.0]), np.array([0, 1]), "gt"),
        (np.array([0, 1]), np.array([[0, 1]]), "pred"),
        (np.array([], dtype=int), np.array([], dtype=int), "gt"),
    ],
)
def test_frame_accuracy_validation(gt: np.ndarray, pred: np.ndarray, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        frame_accuracy(gt, pred)


@pytest.mark.parametrize(
    ("gt", "pred", "name"),
    [
        (np.zeros((2, 3)), np.zeros((2, 4)), "pred"),
        (np.full((2, 3), 3), np.zeros((2, 3)), "gt"),
        (np.zeros((0, 3)), np.zeros((0, 3)), "gt"),
    ],
)
def test_exact_match_validation(gt: np.ndarray, pred: np.ndarray, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        exact_match_accuracy(gt, pred)
