"""Hardware normalisation and multi-objective figures — seed 004 §6.3.1 and §6.3.3.

- speed-up against a baseline and FLOPs-normalised latency (§6.3.1 (2));
- energy per frame, ``Power_avg × Latency_avg`` (§6.3.3 "能耗与效率");
- the composite score ``α·F1 + β/Latency + γ/Memory`` (§6.3.3 "综合评分");
- the Pareto front of a set of operating points (§6.3.3 "Pareto 前沿分析").

Units are in the names: seconds, milliseconds, watts, joules, gigabytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = [
    "composite_score",
    "energy_per_frame",
    "flops_normalised_latency",
    "pareto_front",
    "speedup",
]


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {x}")
    return x


def speedup(baseline_latency: float, method_latency: float) -> float:
    """``Speedup = Latency_baseline / Latency_method`` — seed 004 §6.3.1 (2).

    Both latencies in the same unit, measured on the same machine (the same environment
    fingerprint); > 1 means the method is faster than the baseline.
    """
    return _positive(baseline_latency, "baseline_latency") / _positive(method_latency, "method_latency")


def flops_normalised_latency(latency: float, flops_measured: float, flops_baseline: float) -> float:
    """``Latency_normalized = Latency_measured × (FLOPs_baseline / FLOPs_measured)`` — seed 004 §6.3.1 (2).

    Removes the model-size difference so that only algorithmic efficiency is compared; the result is
    in the unit of ``latency``. FLOPs are per frame.
    """
    return (
        _positive(latency, "latency")
        * _positive(flops_baseline, "flops_baseline")
        / _positive(flops_measured, "flops_measured")
    )


def energy_per_frame(power_w: float, latency_s: float) -> float:
    """Energy per frame in joules, ``Energy/frame = Power_avg × Latency_avg`` — seed 004 §6.3.3.

    ``power_w`` is the mean power over the measured window (W), ``latency_s`` the mean per-frame
    latency (s). Seed example: 300 W × 0.015 s = 4.5 J. This is the seed's estimate from averages;
    an energy counter read at window edges divided by the frames in the window is the measured value
    where the hardware has one.
    """
    return _positive(power_w, "power_w") * _positive(latency_s, "latency_s")


def composite_score(
    f1: float,
    latency_ms: float,
    memory_gb: float,
    alpha: float = 0.6,
    beta: float = 0.3,
    gamma: float = 0.1,
) -> float:
    """``Score = α·F1 + β·(1/Latency) + γ·(1/Memory)`` — seed 004 §6.3.3 "综合评分".

    Units as in the seed's table: F1 as a fraction in [0, 1], latency in milliseconds, memory in GB;
    default weights α = 0.6, β = 0.3, γ = 0.1. The seed itself recommends the Pareto analysis over any
    single composite number (§6.5 (5)); the score depends on these units and weights, so report them.
    """
    if not 0.0 <= f1 <= 1.0:
        raise ValueError(f"f1 must be a fraction in [0, 1], got {f1}")
    for name, weight in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"{name} must be finite and >= 0, got {weight}")
    return alpha * f1 + beta / _positive(latency_ms, "latency_ms") + gamma / _positive(memory_gb, "memory_gb")


def pareto_front(points: npt.ArrayLike, maximize: Sequence[bool]) -> np.ndarray:
    """Indices of the non-dominated points, in input order — seed 004 §6.3.3 "Pareto 前沿分析".

    ``points`` is ``[N, M]`` (one row per model or run, one column per objective); ``maximize[m]``
    says whether objective m is better high (F1) or low (latency, energy, memory). A point is
    dominated when another is at least as good on every objective and better on one; duplicates do
    not dominate each other, so both stay on the front. O(N² M) memory and time by broadcasting,
    meant for the tens to thousands of runs of a comparison.
    """
    arr = np.asarray(points, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0:
        raise ValueError(f"points must be a non-empty [N, M] array, got shape {arr.shape}")
    if len(maximize) != arr.shape[1]:
        raise ValueError(f"maximize has {len(maximize)} entries, points have {arr.shape[1]} objectives")
    if not np.isfinite(arr).all():
        raise ValueError("points contain NaN or Inf")
    signed = arr * np.where(np.asarray(maximize, dtype=bool), 1.0, -1.0)  # higher is better everywhere
    at_least = (signed[:, None, :] >= signed[None, :, :]).all(axis=2)  # [i, j]: i at least as good as j
    better = (signed[:, None, :] > signed[None, :, :]).any(axis=2)
    dominated = (at_least & better).any(axis=0)
    return np.flatnonzero(~dominated)
