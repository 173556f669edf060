"""Temporal stability (seed 000 §1-5): the vectorised metrics against the seed's reference loops.

Opt-in (not collected by ``pytest`` alone): ``python -m pytest benchmarks -k stability -s``.
Workload: ``[B, T, D] = [8, 2000, 4096]`` with exactly ``k = 32`` active features per frame and some
temporal persistence. The seed's loops (transcribed in ``tests/protocols/metrics/test_stability.py``:
Jaccard + turnover, flips, lifetime, transient ratio) run once on the full array — about 8 s on the
development machine, so no slice or extrapolation is needed — and must give the same numbers. Target:
the vectorised version at least 20× faster (median of 5 runs against the single reference run).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scipy.signal import lfilter

from streambench.protocols.metrics.stability import temporal_stability
from tests.protocols.metrics.test_stability import (
    seed_compute_flips,
    seed_compute_transient_ratio,
    seed_jaccard_and_turnover,
    seed_lifetimes,
)

pytestmark = pytest.mark.benchmark

B, T, D, K = 8, 2000, 4096, 32
TARGET_SPEEDUP = 20.0


def _topk_stream(rng: np.random.Generator) -> np.ndarray:
    """``[T, D]`` activity with exactly ``K`` features per frame: top-k of AR(1) scores (rho = 0.99).

    Gives Jaccard ~0.72 and lifetime ~6 frames, the order of the seed's per-timestep TopK figures.
    """
    noise = rng.standard_normal((T, D), dtype=np.float32)
    scores = lfilter([1.0], [1.0, -0.99], noise, axis=0)
    idx = np.argpartition(-scores, K, axis=-1)[:, :K]
    out = np.zeros((T, D), dtype=bool)
    np.put_along_axis(out, idx, True, axis=-1)
    return out


@pytest.fixture(scope="module")
def active() -> np.ndarray:
    rng = np.random.default_rng(0)
    a = np.stack([_topk_stream(rng) for _ in range(B)])
    assert a.shape == (B, T, D) and np.all(a.sum(axis=-1) == K)
    return a


def _seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def test_temporal_stability_vectorised(benchmark, active) -> None:  # type: ignore[no-untyped-def]
    res = benchmark.pedantic(temporal_stability, args=(active,), kwargs={"k": K}, rounds=5, iterations=1)
    assert 0.0 < res.jaccard < 1.0 and res.lifetime > 1.0


def test_speedup_against_seed_loops(active) -> None:  # type: ignore[no-untyped-def]
    ours_s, res = _seconds(lambda: temporal_stability(active, k=K), repeats=5)

    pairs_s, (jaccards, turnovers) = _seconds(lambda: seed_jaccard_and_turnover(active, K), repeats=1)
    flips_s, flips = _seconds(lambda: seed_compute_flips(active), repeats=1)
    life_s, lifetimes = _seconds(lambda: seed_lifetimes(active), repeats=1)
    trans_s, transient = _seconds(lambda: seed_compute_transient_ratio(lifetimes), repeats=1)

    # same numbers as the seed's loops
    np.testing.assert_allclose(res.jaccard_per_step.ravel(), jaccards, rtol=0, atol=1e-15)
    np.testing.assert_allclose(res.turnover_per_step.ravel(), turnovers, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(res.flips_per_step.ravel(), flips)
    assert res.lifetime == pytest.approx(float(np.mean(lifetimes)), abs=1e-12)
    assert res.transient_ratio == transient

    reference_s = pairs_s + flips_s + life_s + trans_s
    speedup = reference_s / ours_s
    print(
        f"\ntemporal_stability on [{B}, {T}, {D}], k={K}: {ours_s * 1e3:.1f} ms (median of 5); "
        f"jaccard {res.jaccard:.4f}, lifetime {res.lifetime:.2f}, transient {res.transient_ratio:.4f}, "
        f"turnover {res.turnover:.4f}, flips {res.flips:.2f}\n"
        f"seed loops on the full array (one run): jaccard+turnover {pairs_s:.2f} s, flips {flips_s:.2f} s, "
        f"lifetime {life_s:.2f} s, transient {trans_s * 1e3:.1f} ms, total {reference_s:.2f} s\n"
        f"speed-up {speedup:.0f}x (target >= {TARGET_SPEEDUP:.0f}x)"
    )
    assert speedup >= TARGET_SPEEDUP
