"""Confidence intervals bootstrapped over streams (DESIGN.md "Results": frames in a stream are
autocorrelated, so streams, not frames, are the unit of resampling).

Percentile bootstrap (Efron & Tibshirani 1993, §13.3): resample the S streams with replacement
``n_resamples`` times, recompute the statistic from the resampled streams' sums, and take the
``(1 − confidence) / 2`` and ``(1 + confidence) / 2`` quantiles. Seeded, so the interval is reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import check_int
from streambench.protocols.metrics.events import EPS


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with its bootstrap interval over ``n_streams`` streams."""

    estimate: float
    low: float
    high: float
    confidence: float
    n_streams: int
    n_resamples: int


def _resample(n_streams: int, n_resamples: int, seed: int) -> npt.NDArray[np.int64]:
    """``[R, S]`` counts: how often each stream is drawn in each resample."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_streams, size=(n_resamples, n_streams))
    counts = np.zeros((n_resamples, n_streams), dtype=np.int64)
    np.add.at(counts, (np.arange(n_resamples)[:, None], draws), 1)
    return counts


def _interval(estimate: float, stats: np.ndarray, confidence: float, n_streams: int) -> Interval:
    low, high = np.quantile(stats, [(1 - confidence) / 2, (1 + confidence) / 2])
    return Interval(float(estimate), float(low), float(high), confidence, n_streams, int(stats.size))


def _check(n_streams: int, n_resamples: int, confidence: float) -> None:
    if n_streams < 1:
        raise ValueError("need at least one stream to bootstrap")
    check_int(n_resamples, "n_resamples", minimum=1)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def bootstrap_micro_f1(
    tp: npt.ArrayLike,
    fp: npt.ArrayLike,
    fn: npt.ArrayLike,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Interval of the micro F1 (seed 004 §6.2.1 formula, with its 1e-9 epsilons) from per-stream counts.

    ``tp``, ``fp``, ``fn`` are ``[S]``: each stream's counts summed over its units and classes.
    """
    counts = np.stack([np.asarray(tp), np.asarray(fp), np.asarray(fn)]).astype(np.float64)  # [3, S]
    _check(counts.shape[1], n_resamples, confidence)

    def f1(sums: np.ndarray) -> np.ndarray:
        p = sums[0] / (sums[0] + sums[1] + EPS)
        r = sums[0] / (sums[0] + sums[2] + EPS)
        return np.asarray(2 * p * r / (p + r + EPS))

    weights = _resample(counts.shape[1], n_resamples, seed)  # [R, S]
    stats = f1(counts @ weights.T)  # [3, R] -> [R]
    return _interval(float(f1(counts.sum(axis=1))), stats, confidence, counts.shape[1])


def bootstrap_ratio(
    numerators: npt.ArrayLike,
    denominators: npt.ArrayLike,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Interval of ``Σ numerators / Σ denominators`` over streams (e.g. mean latency = total time /
    frames, RTF = processing time / duration)."""
    num = np.asarray(numerators, dtype=np.float64)
    den = np.asarray(denominators, dtype=np.float64)
    if num.shape != den.shape or num.ndim != 1:
        raise ValueError(f"numerators {num.shape} and denominators {den.shape} must be equal 1-D arrays")
    _check(num.size, n_resamples, confidence)
    if np.any(den <= 0):
        raise ValueError("denominators must be > 0")
    weights = _resample(num.size, n_resamples, seed)
    stats = (weights @ num) / (weights @ den)
    return _interval(float(num.sum() / den.sum()), stats, confidence, num.size)


def spread(values_ns: npt.ArrayLike) -> float:
    """Relative spread ``IQR / median`` of per-frame latencies (0 when the median is 0)."""
    arr = np.asarray(values_ns, dtype=np.float64)
    if arr.size == 0:
        raise ValueError("values_ns is empty")
    q1, median, q3 = np.percentile(arr, [25, 50, 75])
    return float((q3 - q1) / median) if median > 0 else 0.0
