"""Differences between two runs with an interval, and latency percentiles with theirs.

Two methods, each named where its numbers are shown:

* **From the stored intervals** (:func:`mover_difference`): F1@Δt, mean latency and RTF carry a
  percentile-bootstrap interval over streams in ``result.json`` (protocols/metrics/bootstrap.py). The
  interval of the difference ``b − a`` is recovered from the two by MOVER, the "method of variance
  estimates recovery" (Zou & Donner 2008, *Construction of confidence limits about effect measures: a
  general approach*, Stat. Med. 27:1693; after Newcombe 1998):
  ``L = d − √((b − l_b)² + (u_a − a)²)``, ``U = d + √((u_b − b)² + (a − l_a)²)``. It treats the runs as
  independent; two runs of the same streams are positively correlated, so the interval is then wider
  than a paired one would be (conservative), never narrower.
* **Recomputed from the recorded latencies** (:func:`percentile_difference`): p50 / p95 / p99 have no
  stored interval. Each run's test streams are resampled with replacement (streams are the unit of
  resampling, as for every interval of the harness: frames within a stream are autocorrelated), the
  percentile recomputed from the pooled frames of the resample (numpy's ``linear`` method, as the
  result's own), ``resamples`` times, seeded; the two runs are resampled independently and the
  difference's interval is the percentile interval of the resampled differences (Efron & Tibshirani
  1993, §13.3).

A difference is never given an interval the data cannot support: intervals at different confidence
levels, or a run without recorded latencies, give ``None`` with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from streambench.protocols.metrics.bootstrap import Interval

__all__ = [
    "MOVER",
    "STREAM_BOOTSTRAP",
    "Delta",
    "PercentileIntervals",
    "mover_difference",
    "percentile_difference",
    "percentile_intervals",
    "plain_difference",
]

MOVER = "MOVER from the runs' stored bootstrap intervals (independent runs)"
STREAM_BOOTSTRAP = "bootstrap over each run's test streams, recomputed from the recorded latencies"


@dataclass(frozen=True)
class Delta:
    """``value`` = b − a; ``low`` / ``high``: its interval at ``confidence`` (``None``: no interval, see
    ``reason``); ``method``: how the interval was obtained; ``invalid``: why it is not a difference of the
    models (a timing of a run whose measurement is INVALID), shown greyed with it."""

    value: float
    low: float | None = None
    high: float | None = None
    confidence: float | None = None
    method: str | None = None
    reason: str | None = None
    invalid: str | None = None

    @property
    def excludes_zero(self) -> bool:
        """The interval lies entirely on one side of 0: the runs differ at this confidence (never for a
        difference that is not a measurement)."""
        if self.invalid is not None:
            return False
        return self.low is not None and self.high is not None and (self.low > 0 or self.high < 0)


def plain_difference(a: float, b: float, reason: str) -> Delta:
    """``b − a`` of two measured figures that have no interval, with the reason there is none."""
    return Delta(value=b - a, reason=reason)


def mover_difference(a: Interval, b: Interval) -> Delta:
    """``b − a`` with its MOVER interval from the two stored intervals (module docstring)."""
    d = b.estimate - a.estimate
    if not math.isclose(a.confidence, b.confidence):
        return Delta(
            value=d,
            reason=f"the runs' intervals are at different levels ({a.confidence:.0%}, {b.confidence:.0%})",
        )
    low = d - math.hypot(b.estimate - b.low, a.high - a.estimate)
    high = d + math.hypot(b.high - b.estimate, a.estimate - a.low)
    return Delta(value=d, low=low, high=high, confidence=a.confidence, method=MOVER)


@dataclass(frozen=True)
class PercentileIntervals:
    """Each requested percentile's interval over ``streams`` streams: ``low[i]``, ``high[i]`` for
    ``percentiles[i]``; ``resampled``: the ``[resamples, percentiles]`` values the interval came from."""

    percentiles: tuple[float, ...]
    low: np.ndarray
    high: np.ndarray
    confidence: float
    streams: int
    resampled: np.ndarray


def _resampled_percentiles(
    streams: Sequence[np.ndarray], percentiles: Sequence[float], resamples: int, seed: int
) -> np.ndarray:
    """``[resamples, len(percentiles)]``: the percentiles of the pooled frames of each resample of the
    streams (drawn with replacement, as many as there are)."""
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, len(percentiles)))
    for r in range(resamples):
        drawn = rng.integers(0, len(streams), size=len(streams))
        out[r] = np.percentile(np.concatenate([streams[i] for i in drawn]), percentiles)
    return out


def percentile_intervals(
    streams: Sequence[np.ndarray],
    percentiles: Sequence[float] = (50, 95, 99),
    resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> PercentileIntervals:
    """Bootstrap intervals over streams of latency percentiles; ``streams``: each test stream's measured
    per-frame latencies (any unit; a stream without a measured frame is left out)."""
    kept = [np.asarray(s, dtype=np.float64) for s in streams if np.size(s)]
    if not kept:
        raise ValueError("no stream with a measured frame")
    values = _resampled_percentiles(kept, percentiles, resamples, seed)
    low, high = np.quantile(values, [(1 - confidence) / 2, (1 + confidence) / 2], axis=0)
    return PercentileIntervals(tuple(percentiles), low, high, confidence, len(kept), values)


def percentile_difference(
    a: PercentileIntervals, b: PercentileIntervals, estimates_a: Sequence[float], estimates_b: Sequence[float]
) -> list[Delta]:
    """``b − a`` of each percentile (the estimates are the results' own), with the interval of the
    differences of the independently resampled values (module docstring)."""
    if a.percentiles != b.percentiles or a.resampled.shape != b.resampled.shape:
        raise ValueError("the two runs' percentiles were resampled differently")
    differences = b.resampled - a.resampled
    level = a.confidence
    low, high = np.quantile(differences, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return [
        Delta(
            value=eb - ea,
            low=float(lo),
            high=float(hi),
            confidence=level,
            method=STREAM_BOOTSTRAP,
        )
        for ea, eb, lo, hi in zip(estimates_a, estimates_b, low, high, strict=True)
    ]
