"""Real-time metrics: per-frame latency statistics, FPS and real-time factor (RTF).

Definitions follow seed 004 (``seeds/004_45b65944d7246517.txt``) §6.2.2 (2): ``Latency_avg``,
``Latency_p50 / p95 / p99``, ``Latency_max``, ``FPS = 1 / Latency_avg`` and
``RTF = processing time / stream duration``. Latencies come in as integer nanoseconds (the unit the
engine records, ``time.perf_counter_ns()``) and are reported in milliseconds, converted once here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import check_int_vector

PercentileMethod = Literal[
    "linear",
    "lower",
    "higher",
    "nearest",
    "midpoint",
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "median_unbiased",
    "normal_unbiased",
]
"""The methods of ``numpy.percentile``; the default ``"linear"`` is Hyndman & Fan type 7."""

NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Per-frame latency statistics in milliseconds over ``n`` samples.

    ``std_ms`` is the population standard deviation (``ddof=0``); the percentiles were computed with
    ``numpy.percentile(..., method=percentile_method)``. ``fps`` is ``1 / mean`` (:func:`fps`), ``None``
    when the mean latency is 0 (below the clock's resolution).
    """

    n: int
    mean_ms: float
    std_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    min_ms: float
    fps: float | None
    percentile_method: str = "linear"


def latency_summary(latency_ns: npt.ArrayLike, method: PercentileMethod = "linear") -> LatencySummary:
    """Summary statistics of per-frame latencies given in integer nanoseconds — seed 004 §6.2.2 (2).

    Reports the seed's ``Latency_avg / p50 / p95 / p99 / max`` and ``FPS``, plus min and the standard
    deviation, all in milliseconds (``ns / 1e6``, computed in float64). Conventions where libraries differ:
    percentiles use numpy's ``"linear"`` method by default (Hyndman & Fan type 7, the default of
    numpy and R; other ``numpy.percentile`` methods may be named and are recorded in the result);
    the standard deviation is the population one (``ddof=0``).

    ``latency_ns`` must be a non-empty 1-D integer array of non-negative values.
    """
    lat = check_int_vector(latency_ns, "latency_ns")
    if lat.size == 0:
        raise ValueError("latency_ns is empty: no latency statistics without samples")
    if lat.min() < 0:
        raise ValueError("latency_ns must be non-negative")
    if method not in get_args(PercentileMethod):
        raise ValueError(f"method must be one of numpy.percentile's methods, got {method!r}")
    ns = lat.astype(np.float64)
    p50, p95, p99 = np.percentile(ns, [50.0, 95.0, 99.0], method=method) / NS_PER_MS
    mean_ms = float(ns.mean() / NS_PER_MS)
    return LatencySummary(
        n=int(lat.size),
        mean_ms=mean_ms,
        std_ms=float(ns.std() / NS_PER_MS),
        p50_ms=float(p50),
        p95_ms=float(p95),
        p99_ms=float(p99),
        max_ms=float(lat.max() / NS_PER_MS),
        min_ms=float(lat.min() / NS_PER_MS),
        fps=fps(mean_ms / 1e3) if mean_ms > 0 else None,
        percentile_method=method,
    )


def _check_seconds(x: object, name: str, *, positive: bool) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number of seconds, got {x!r}")
    value = float(x)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if positive and value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def fps(mean_latency_s: float) -> float:
    """Throughput in frames per second: ``FPS = 1 / Latency_avg`` — seed 004 §6.2.2 (2).

    ``mean_latency_s`` is the mean per-frame latency in seconds (> 0). This is the unpaced,
    batch-1 throughput (one frame at a time), not the rate of a pipelined system.
    Seed example: 15 ms per frame gives 66.7 FPS.
    """
    return 1.0 / _check_seconds(mean_latency_s, "mean_latency_s", positive=True)


def rtf(processing_s: float, duration_s: float) -> float:
    """Real-time factor ``RTF = processing time / stream duration`` — seed 004 §6.2.2 (2).

    RTF < 1 is faster than real time. Both arguments in seconds: ``processing_s >= 0`` (the summed
    processing time) and ``duration_s > 0`` (the stream's real duration). Per frame, this is the mean
    latency over the frame period: seed example, 15 ms per frame of a 30 fps video gives
    ``RTF = 15 / 33.3 = 0.45``.
    """
    processing = _check_seconds(processing_s, "processing_s", positive=False)
    duration = _check_seconds(duration_s, "duration_s", positive=True)
    return processing / duration
