"""Bootstrap intervals over streams, against a plain resampling loop and scipy's percentile bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from streambench.protocols.metrics.bootstrap import bootstrap_micro_f1, bootstrap_ratio, spread


def _loop_ratio(num: np.ndarray, den: np.ndarray, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        idx = rng.integers(0, num.size, size=num.size)
        out.append(num[idx].sum() / den[idx].sum())
    return np.array(out)


def test_ratio_interval_equals_a_plain_resampling_loop() -> None:
    rng = np.random.default_rng(1)
    num, den = rng.uniform(1, 5, 30), rng.uniform(1, 2, 30)
    ci = bootstrap_ratio(num, den, n_resamples=500, seed=7)
    ref = np.quantile(_loop_ratio(num, den, 500, 7), [0.025, 0.975])
    assert (ci.low, ci.high) == pytest.approx(tuple(ref))
    assert ci.estimate == pytest.approx(num.sum() / den.sum()) and ci.low <= ci.estimate <= ci.high
    assert ci.n_streams == 30 and ci.n_resamples == 500


def test_mean_interval_agrees_with_scipy_percentile_bootstrap() -> None:
    values = np.random.default_rng(2).normal(10, 2, 200)
    ci = bootstrap_ratio(values, np.ones_like(values), n_resamples=4000, seed=3)
    ref = stats.bootstrap((values,), np.mean, n_resamples=4000, method="percentile", random_state=3)
    assert ci.low == pytest.approx(ref.confidence_interval.low, abs=0.05)
    assert ci.high == pytest.approx(ref.confidence_interval.high, abs=0.05)


def test_micro_f1_interval() -> None:
    tp, fp, fn = np.array([8, 5, 9, 0]), np.array([2, 5, 1, 3]), np.array([1, 4, 0, 2])
    ci = bootstrap_micro_f1(tp, fp, fn, n_resamples=300, seed=0)
    p, r = 22 / (33 + 1e-9), 22 / (29 + 1e-9)
    assert ci.estimate == pytest.approx(2 * p * r / (p + r + 1e-9))
    assert 0 <= ci.low <= ci.estimate <= ci.high <= 1
    same = bootstrap_micro_f1([5, 5], [1, 1], [1, 1], n_resamples=50)
    assert same.low == same.high == pytest.approx(same.estimate)  # identical streams: no spread
    assert bootstrap_micro_f1(tp, fp, fn, seed=0) == bootstrap_micro_f1(tp, fp, fn, seed=0)


def test_spread_and_validation() -> None:
    assert spread([1, 2, 3, 4, 5]) == pytest.approx(2 / 3)
    assert spread([0, 0, 0]) == 0.0
    with pytest.raises(ValueError, match="at least one stream"):
        bootstrap_ratio([], [])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ratio([1.0], [1.0], confidence=1.5)
    with pytest.raises(ValueError, match="denominators must be > 0"):
        bootstrap_ratio([1.0], [0.0])
