"""The interval of a speed-up from two runs (protocols/metrics/speedup_interval.py; issue 27 item 7):
hand-computed cases, the delta method on many streams, and its coverage."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols.metrics.speedup_interval import bootstrap_speedup

# --- the interval of a speed-up from two runs ------------------------------------------------------------


def test_identical_streams_give_the_hand_computed_ratio_and_no_spread() -> None:
    # baseline: 3 streams of 5 frames, 10 ms each (2 ms per frame); method: 2 streams of 4 frames, 4 ms
    ratio = bootstrap_speedup([10, 10, 10], [5, 5, 5], [4, 4], [4, 4], n_resamples=200)
    assert (ratio.estimate, ratio.low, ratio.high) == (2.0, 2.0, 2.0)
    assert (ratio.n_baseline_streams, ratio.n_method_streams, ratio.n_resamples) == (3, 2, 200)


def test_the_interval_is_the_hand_computed_quantiles_of_a_two_stream_run() -> None:
    """Baseline streams of 1 and 3 ms (one frame each), a method of 1 ms: a resample's baseline mean is 1,
    2 or 3 ms with probabilities 1/4, 1/2, 1/4, so the 2.5 % and 97.5 % quantiles are 1 and 3."""
    ratio = bootstrap_speedup([1.0, 3.0], [1, 1], [1.0, 1.0], [1, 1], n_resamples=4000)
    assert ratio.estimate == 2.0
    assert (ratio.low, ratio.high) == (1.0, 3.0)
    narrow = bootstrap_speedup([1.0, 3.0], [1, 1], [1.0, 1.0], [1, 1], n_resamples=4000, confidence=0.4)
    assert (narrow.low, narrow.high) == (2.0, 2.0)  # the middle 40 % are all 2


def _simulated_run(rng: np.random.Generator, streams: int, mean_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-stream total latency and frames: streams of 20-60 frames whose per-frame mean varies by
    stream (gamma, mean ``mean_ms``, coefficient of variation 0.3)."""
    frames = rng.integers(20, 61, streams)
    per_frame = rng.gamma(1 / 0.09, mean_ms * 0.09, streams)
    return per_frame * frames, frames.astype(float)


def _ratio_estimator_variance(sums: np.ndarray, frames: np.ndarray) -> tuple[float, float]:
    """The ratio estimator Σy/Σx and its linearised variance (Cochran 1977, §6.3)."""
    ratio = sums.sum() / frames.sum()
    n = sums.size
    residual = sums - ratio * frames
    return ratio, float(residual.var(ddof=1) / (n * frames.mean() ** 2))


def test_the_interval_agrees_with_the_delta_method_on_many_streams() -> None:
    """With 400 streams per run the ratio is near normal on the log scale: the bootstrap's bounds agree
    with the delta method's ``S · exp(± 1.96 · sd(log S))`` to within 1 %, and its width to within 8 %."""
    rng = np.random.default_rng(7)
    base, method = _simulated_run(rng, 400, 4.0), _simulated_run(rng, 400, 1.0)
    ratio = bootstrap_speedup(*base, *method, n_resamples=4000, seed=1)
    (rb, vb), (rm, vm) = _ratio_estimator_variance(*base), _ratio_estimator_variance(*method)
    sd_log = np.sqrt(vb / rb**2 + vm / rm**2)
    assert ratio.estimate == pytest.approx(rb / rm, rel=1e-12)
    assert ratio.low == pytest.approx(rb / rm * np.exp(-1.96 * sd_log), rel=0.01)
    assert ratio.high == pytest.approx(rb / rm * np.exp(1.96 * sd_log), rel=0.01)
    assert np.log(ratio.high / ratio.low) == pytest.approx(2 * 1.96 * sd_log, rel=0.08)  # the width
    one_sided = bootstrap_speedup(*base, np.full(400, 1.0), np.ones(400), n_resamples=4000, seed=1)
    assert one_sided.high - one_sided.low < ratio.high - ratio.low  # both runs' spread is in it


def test_the_interval_covers_the_true_speedup_at_its_level() -> None:
    """300 simulated pairs of runs (30 streams each) of known population means 3 and 1.5 ms: the 95 %
    interval covers the true speed-up 2 in 90-98 % of them (binomial sd ≈ 1.3 %)."""
    rng = np.random.default_rng(11)
    covered = 0
    for k in range(300):
        base, method = _simulated_run(rng, 30, 3.0), _simulated_run(rng, 30, 1.5)
        ratio = bootstrap_speedup(*base, *method, n_resamples=400, seed=k)
        covered += ratio.low <= 2.0 <= ratio.high
    assert 0.90 <= covered / 300 <= 0.98


def test_bad_samples_are_named() -> None:
    with pytest.raises(ValueError, match="baseline: per-stream sums"):
        bootstrap_speedup([1.0, 2.0], [1], [1.0], [1])
    with pytest.raises(ValueError, match="method: frame counts must be > 0"):
        bootstrap_speedup([1.0], [1], [1.0], [0])
    with pytest.raises(ValueError, match="method: the mean is 0"):
        bootstrap_speedup([1.0], [1], [0.0, 0.0], [1, 1])
