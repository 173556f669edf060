"""The interval of a speed-up measured from two independent runs — seed 004 §6.3.1 (2).

``Speedup = Latency_baseline / Latency_method``, each latency the run's mean per frame: its total time over
its frames (the ratio estimator of :func:`streambench.protocols.metrics.bootstrap.bootstrap_ratio`). The two
runs are independent measurements, each with its own streams, so the interval takes both runs' spread:

Two-sample percentile bootstrap (Efron & Tibshirani 1993, §8.3 "the two-sample problem" and §13.3 "the
percentile interval"): each resample draws the baseline's streams with replacement and, independently,
the method's streams with replacement, and recomputes the ratio of the two means; the interval is the
``(1 − confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the resampled ratios. Streams, not frames,
are the unit (frames of a stream are autocorrelated; DESIGN.md "Results"), as for every other interval of
a run. Chosen over the delta method and Fieller's interval because it assumes no normal law for a ratio
that is skewed and bounded by 0, needs no covariance estimate of numerator and denominator, and uses the
same samples and the same percentile rule as each run's own latency interval. The percentile interval
respects monotone transformations, so the interval of ``1 / speed-up`` (the method's latency relative
to the baseline's) is ``[1 / high, 1 / low]``. Seeded, so the interval is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import check_int

__all__ = ["RatioInterval", "bootstrap_speedup"]


@dataclass(frozen=True, slots=True)
class RatioInterval:
    """A ratio of two runs' means with its two-sample bootstrap interval."""

    estimate: float
    low: float
    high: float
    confidence: float
    n_baseline_streams: int
    n_method_streams: int
    n_resamples: int


def _totals(
    sums: npt.ArrayLike, counts: npt.ArrayLike, name: str
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    total = np.asarray(sums, dtype=np.float64)
    frames = np.asarray(counts, dtype=np.float64)
    if total.ndim != 1 or total.shape != frames.shape or total.size == 0:
        raise ValueError(
            f"{name}: per-stream sums {total.shape} and frame counts {frames.shape} must be equal, non-empty "
            "1-D arrays"
        )
    if not (np.isfinite(total).all() and np.isfinite(frames).all()):
        raise ValueError(f"{name}: per-stream sums and frame counts must be finite")
    if np.any(frames <= 0) or np.any(total < 0):
        raise ValueError(f"{name}: frame counts must be > 0 and sums >= 0")
    if total.sum() <= 0:
        raise ValueError(f"{name}: the mean is 0 (every stream's sum is 0); a ratio needs a positive mean")
    return total, frames


def _resampled_means(
    total: np.ndarray, frames: np.ndarray, n_resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """``[R]``: the ratio estimator Σ total / Σ frames of each resample of the streams (with replacement)."""
    n = total.size
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_resamples).astype(np.float64)  # [R, S]
    return np.asarray((weights @ total) / (weights @ frames))


def bootstrap_speedup(
    baseline_sums: npt.ArrayLike,
    baseline_frames: npt.ArrayLike,
    method_sums: npt.ArrayLike,
    method_frames: npt.ArrayLike,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> RatioInterval:
    """``(Σ baseline_sums / Σ baseline_frames) / (Σ method_sums / Σ method_frames)`` with its two-sample
    percentile bootstrap interval (module docstring).

    ``*_sums`` are ``[S]``: each stream's total latency (any one unit, the same for both runs);
    ``*_frames`` ``[S]``: each stream's measured frames. The runs may have different numbers of streams.
    """
    base_total, base_frames = _totals(baseline_sums, baseline_frames, "baseline")
    method_total, method_frames_ = _totals(method_sums, method_frames, "method")
    check_int(n_resamples, "n_resamples", minimum=1)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    base_means = _resampled_means(base_total, base_frames, n_resamples, rng)
    method_means = _resampled_means(method_total, method_frames_, n_resamples, rng)
    if np.any(method_means <= 0):  # a resample of only zero-time streams: the ratio is unbounded
        raise ValueError("method: a resample of its streams has mean 0; the speed-up is unbounded")
    stats = base_means / method_means
    estimate = (base_total.sum() / base_frames.sum()) / (method_total.sum() / method_frames_.sum())
    low, high = np.quantile(stats, [(1 - confidence) / 2, (1 + confidence) / 2])
    return RatioInterval(
        float(estimate),
        float(low),
        float(high),
        confidence,
        int(base_total.size),
        int(method_total.size),
        n_resamples,
    )
