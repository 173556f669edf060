"""Calibration metrics (seed 003 "Calibration", seed 004 §6.2.2): reliability bins, ECE, MCE, Brier."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss
from torchmetrics.functional.classification import binary_calibration_error

from streambench.protocols.metrics.calibration import brier, ece, mce, reliability_bins

# seed 003, worked example: A conf 0.80 correct, B conf 0.50 correct, C conf 0.55 wrong
SEED_CONF = [0.80, 0.50, 0.55]
SEED_CORRECT = [1, 1, 0]
SEED_EDGES = [0.0, 0.4, 0.6, 1.0]


def brute_ece_mce(conf: np.ndarray, correct: np.ndarray, edges: np.ndarray) -> tuple[float, float]:
    """Loop over bins as in Guo et al.'s reference code (lo < c <= hi), the first bin also taking lo."""
    total, worst = 0.0, 0.0
    for b, (lo, hi) in enumerate(pairwise(edges)):
        in_bin = (conf > lo) & (conf <= hi)
        if b == 0:
            in_bin |= conf == lo
        if in_bin.any():
            gap = abs(correct[in_bin].mean() - conf[in_bin].mean())
            total += in_bin.mean() * gap
            worst = max(worst, gap)
    return total, worst


# --------------------------------------------------------------------------------------------------
# seed 003's worked example


def test_seed003_example_bins() -> None:
    rb = reliability_bins(SEED_CONF, SEED_CORRECT, bins=SEED_EDGES)
    np.testing.assert_array_equal(rb.edges, SEED_EDGES)
    np.testing.assert_array_equal(rb.count, [0, 2, 1])
    np.testing.assert_allclose(rb.mean_confidence, [np.nan, 0.525, 0.80], rtol=0, atol=1e-15)
    np.testing.assert_allclose(rb.accuracy, [np.nan, 0.50, 1.00], rtol=0, atol=1e-15)
    np.testing.assert_allclose(rb.gap, [np.nan, 0.025, 0.20], rtol=0, atol=1e-15)
    assert rb.n_samples == 3


def test_seed003_example_ece_and_mce() -> None:
    # ECE = 2/3 * 0.025 + 1/3 * 0.20 = 1/12 (the seed rounds the two terms first and prints 0.0834)
    value = ece(SEED_CONF, SEED_CORRECT, bins=SEED_EDGES)
    assert value == pytest.approx(1 / 12, abs=1e-15)
    assert value == pytest.approx(0.0834, abs=1e-4)
    assert mce(SEED_CONF, SEED_CORRECT, bins=SEED_EDGES) == pytest.approx(0.2, abs=1e-15)


def test_seed003_example_with_ten_default_bins() -> None:
    # 0.50 lies on an edge and belongs to (0.4, 0.5]: gaps 0.5, 0.55 (bin (0.5, 0.6]) and 0.2
    rb = reliability_bins(SEED_CONF, SEED_CORRECT)
    np.testing.assert_array_equal(rb.count, [0, 0, 0, 0, 1, 1, 0, 1, 0, 0])
    assert ece(SEED_CONF, SEED_CORRECT) == pytest.approx((0.5 + 0.55 + 0.2) / 3, abs=1e-15)
    assert mce(SEED_CONF, SEED_CORRECT) == pytest.approx(0.55, abs=1e-15)


# --------------------------------------------------------------------------------------------------
# bin membership


def test_values_on_edges_go_to_the_lower_bin_and_zero_to_the_first() -> None:
    conf = [0.0, 0.1, 0.3, 0.7, 0.70000001, 1.0]
    rb = reliability_bins(conf, [1] * len(conf), bins=10)
    np.testing.assert_array_equal(rb.count, [2, 0, 1, 0, 0, 0, 1, 1, 0, 1])
    rb = reliability_bins([0.0, 0.4, 0.6, 1.0], [1, 0, 1, 0], bins=SEED_EDGES)
    np.testing.assert_array_equal(rb.count, [2, 1, 1])


def test_equal_width_edges_are_the_decimal_values() -> None:
    np.testing.assert_array_equal(reliability_bins([0.5], [1], bins=10).edges, [i / 10 for i in range(11)])
    np.testing.assert_array_equal(reliability_bins([0.5], [1], bins=1).edges, [0.0, 1.0])


def test_explicit_edges_need_not_span_zero_to_one() -> None:
    rb = reliability_bins([0.5, 0.75, 0.9], [1, 0, 1], bins=[0.5, 0.75, 1.0])
    np.testing.assert_array_equal(rb.count, [2, 1])
    with pytest.raises(ValueError, match=r"has 0\.4 at index 0, outside the bin edges \[0\.5, 1\.0\]"):
        reliability_bins([0.4], [1], bins=[0.5, 1.0])


def test_empty_bins_have_nan_means_and_count_nothing() -> None:
    rb = reliability_bins([0.95, 0.95], [1, 0], bins=4)
    np.testing.assert_array_equal(rb.count, [0, 0, 0, 2])
    assert np.isnan(rb.mean_confidence[:3]).all() and np.isnan(rb.accuracy[:3]).all()
    assert rb.ece == pytest.approx(0.45, abs=1e-15) and rb.mce == pytest.approx(0.45, abs=1e-15)


def test_perfectly_calibrated_bins_score_zero() -> None:
    conf = np.r_[np.full(4, 0.25), np.full(4, 0.75)]
    correct = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    assert ece(conf, correct, bins=2) == 0.0 and mce(conf, correct, bins=2) == 0.0


# --------------------------------------------------------------------------------------------------
# references: a brute-force loop and scikit-learn's calibration_curve


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("bins", [1, 7, 10, 15])
def test_matches_brute_force_loop(seed: int, bins: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    conf = np.round(rng.uniform(0, 1, n), 2)  # many values exactly on edges of 10 bins
    correct = rng.random(n) < conf
    ref_ece, ref_mce = brute_ece_mce(conf, correct, np.arange(bins + 1) / bins)
    assert ece(conf, correct, bins) == pytest.approx(ref_ece, abs=1e-12)
    assert mce(conf, correct, bins) == pytest.approx(ref_mce, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_bins_match_sklearn_calibration_curve(seed: int) -> None:
    # binary diagram: probability of class 1 against the frequency of class 1, uniform bins
    rng = np.random.default_rng(seed)
    prob = rng.beta(2, 3, 500)
    labels = (rng.random(500) < prob).astype(int)
    prob_true, prob_pred = calibration_curve(labels, prob, n_bins=10, strategy="uniform")
    rb = reliability_bins(prob, labels, bins=10)
    full = rb.count > 0
    np.testing.assert_allclose(rb.accuracy[full], prob_true, rtol=1e-12)
    np.testing.assert_allclose(rb.mean_confidence[full], prob_pred, rtol=1e-12)


def edge_heavy_confidences(bins: int, rng: np.random.Generator) -> np.ndarray:
    """Every edge ``i / bins``, its float neighbours on both sides, 0, 1 and random values."""
    edges = np.arange(bins + 1) / bins
    near = [edges, np.nextafter(edges, 2.0), np.nextafter(edges, -1.0), edges * (1 + 4e-16)]
    return np.clip(np.concatenate([*near, rng.random(500), rng.integers(0, 40, 200) / 40]), 0.0, 1.0)


@pytest.mark.parametrize("bins", [1, 2, 3, 7, 10, 49, 100, 1000, 4097, 10**5])
def test_equal_width_bins_equal_the_binary_search_over_the_edges(bins: int) -> None:
    # equal-width bins are placed arithmetically (issue 25, speed) and checked against the edges:
    # the same bins as the binary search over the same edges passed explicitly, on and beside every edge
    rng = np.random.default_rng(bins)
    conf = edge_heavy_confidences(bins, rng)
    correct = rng.random(conf.size) < 0.5
    edges = np.arange(bins + 1) / bins
    fast, searched = reliability_bins(conf, correct, bins), reliability_bins(conf, correct, edges)
    np.testing.assert_array_equal(fast.count, searched.count)
    np.testing.assert_array_equal(fast.mean_confidence, searched.mean_confidence)
    np.testing.assert_array_equal(fast.accuracy, searched.accuracy)
    assert fast.ece == searched.ece and fast.mce == searched.mce
    if bins <= 1000:  # and Guo et al.'s loop over the bins
        ref_ece, ref_mce = brute_ece_mce(conf, correct, edges)
        assert fast.ece == pytest.approx(ref_ece, abs=1e-12) and fast.mce == pytest.approx(ref_mce, abs=1e-12)


def torchmetrics_ece(conf: np.ndarray, correct: np.ndarray, bins: int, dtype: torch.dtype) -> float:
    preds, target = torch.from_numpy(conf).to(dtype), torch.from_numpy(correct.astype(np.int64))
    return float(binary_calibration_error(preds, target, n_bins=bins, norm="l1"))


@pytest.mark.parametrize("bins", [10, 15, 1000])
def test_ece_equals_torchmetrics_in_float64(bins: int) -> None:
    # random confidences (none on an edge): torchmetrics' binary ECE in float64 is ours up to rounding
    rng = np.random.default_rng(bins)
    conf = rng.random(20_000)
    correct = rng.random(conf.size) < conf**1.3
    ref = torchmetrics_ece(conf, correct, bins, torch.float64)
    assert ece(conf, correct, bins) == pytest.approx(ref, abs=1e-13)


def test_where_torchmetrics_differs_edges_and_float32() -> None:
    # 1. torchmetrics' bins are [lo, hi): a confidence on an inner edge goes to the upper bin (here the
    # lower, seed 003's table), and 1.0 gets a bin of its own; hand-computed with two bins
    conf, correct = np.array([0.5, 0.7]), np.array([1, 0])
    assert ece(conf, correct, 2) == pytest.approx(0.5 * 0.5 + 0.5 * 0.7)  # (0, 0.5] and (0.5, 1]
    both_upper = abs(0.5 - 0.6)  # both in [0.5, 1): mean confidence 0.6, accuracy 0.5
    assert torchmetrics_ece(conf, correct, 2, torch.float64) == pytest.approx(both_upper)
    # 2. in float32 the confidences, the edges (linspace) and the sums per bin are float32: at 1000 bins
    # and 10**6 samples the ECE moves by ~1e-6, far beyond float64's rounding
    rng = np.random.default_rng(0)
    conf = rng.random(1_000_000)
    correct = rng.random(conf.size) < conf
    ours = ece(conf, correct, 1000)
    assert ours == pytest.approx(torchmetrics_ece(conf, correct, 1000, torch.float64), abs=1e-14)
    assert 1e-7 < abs(torchmetrics_ece(conf, correct, 1000, torch.float32) - ours) < 1e-4


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 1.0, allow_nan=False), st.booleans()),
        min_size=1,
        max_size=80,
    ),
    st.integers(1, 20),
)
def test_ece_bounds_and_mce_at_least_ece(samples: list[tuple[float, bool]], bins: int) -> None:
    conf = np.array([c for c, _ in samples])
    correct = np.array([k for _, k in samples])
    rb = reliability_bins(conf, correct, bins)
    assert rb.count.sum() == len(samples)
    assert 0.0 <= rb.ece <= 1.0
    assert rb.mce >= rb.ece - 1e-12  # a weighted mean of the gaps never exceeds their max (to rounding)
    assert 0.0 <= rb.mce <= 1.0


# --------------------------------------------------------------------------------------------------
# Brier


def test_brier_binary_hand_case() -> None:
    # scikit-learn's documented example: (0.01 + 0.01 + 0.04 + 0.09) / 4
    assert brier([0.1, 0.9, 0.8, 0.3], [0, 1, 1, 0]) == pytest.approx(0.0375, abs=1e-15)
    assert brier([1.0, 0.0], [True, False]) == 0.0
    assert brier([0.0, 1.0], [1, 0]) == 1.0


def test_brier_multiclass_hand_case() -> None:
    # (0.04+0.01+0.01) + (0.04+0.09+0.01) + (0.04+0.04+0.16) = 0.06 + 0.14 + 0.24 -> mean 0.44 / 3
    # (scikit-learn's docstring shows this example as "0.146", truncated)
    probs = [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.2, 0.2, 0.6]]
    assert brier(probs, [0, 1, 2]) == pytest.approx(0.44 / 3, abs=1e-15)


@pytest.mark.parametrize("seed", range(10))
def test_brier_matches_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.random(200)
    y = (rng.random(200) < p).astype(int)
    assert brier(p, y) == pytest.approx(brier_score_loss(y, p), rel=1e-12)
    for c in (3, 5):
        probs = rng.dirichlet(np.ones(c), size=200)
        labels = rng.integers(0, c, 200)
        expected = brier_score_loss(labels, probs, labels=list(range(c)))
        assert brier(probs, labels) == pytest.approx(expected, rel=1e-12)
    # two columns: the summed form, twice sklearn's (halved) default and twice the binary form
    two = np.c_[1 - p, p]
    assert brier(two, y) == pytest.approx(brier_score_loss(y, two, scale_by_half=False), rel=1e-12)
    assert brier(two, y) == pytest.approx(2 * brier(p, y), rel=1e-12)


# --------------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize("func", [ece, mce, reliability_bins])
@pytest.mark.parametrize(
    ("conf", "correct", "bins", "message"),
    [
        ([], [], 10, "confidences is empty: there are no samples"),
        ([0.5, np.nan], [1, 0], 10, r"confidences contains NaN \(1 value\(s\), first at index 1\)"),
        ([0.5, np.inf], [1, 0], 10, r"confidences contains Inf \(1 value\(s\), first at index 1\)"),
        ([0.5, 1.2], [1, 0], 10, r"confidences must lie in \[0, 1\]; found 1.2 at flat index 1"),
        ([0.5, 0.6], [1, 2], 10, "correct must contain only 0 and 1; found 2 at index 1"),
        ([0.5, 0.6], [1], 10, r"correct has shape \(1,\), expected the shape of confidences \(2,\)"),
        ([0.5], [1], 0, "bins must be >= 1, got 0"),
        ([0.5], [1], True, "bins must be an integer"),
        ([0.5], [1], [0.0, 0.6, 0.6, 1.0], "bins edges must be strictly increasing"),
        ([0.5], [1], [0.0], "bins must be a number of bins or >= 2 edges"),
        ([0.5], [1], [0.0, np.nan, 1.0], r"bins contains NaN"),
    ],
)
def test_calibration_invalid_inputs(
    func: object, conf: list, correct: list, bins: object, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        func(conf, correct, bins)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("probs", "labels", "message"),
    [
        ([], [], "probs is empty: there are no samples"),
        ([0.5, np.nan], [1, 0], r"probs contains NaN"),
        ([0.5, -np.inf], [1, 0], r"probs contains Inf"),
        ([0.5, 1.5], [1, 0], r"probs must lie in \[0, 1\]; found 1.5"),
        ([0.5, 0.5], [1, 3], "labels must contain only 0 and 1; found 3 at index 1"),
        ([0.5, 0.5], [1], r"labels has shape \(1,\), expected the shape of probs \(2,\)"),
        ([[0.5, 0.4]], [0], "probs rows must sum to 1; row 0 sums to 0.9"),
        ([[0.5, 0.5]], [2], r"labels must be class indices in \[0, 2\)"),
        ([[0.5, 0.5]], [0.0], "labels must be integer class indices"),
        ([[0.5, 0.5]], [0, 1], r"labels has 2 entries, expected one per row of probs \(1\)"),
        ([[[0.5]]], [0], "probs must be"),
    ],
)
def test_brier_invalid_inputs(probs: list, labels: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        brier(probs, labels)
