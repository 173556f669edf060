"""Latency statistics, FPS and RTF (seed 004 §6.2.2 (2))."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols.metrics import LatencySummary, fps, latency_summary, rtf


def test_seed_worked_example_fps_and_rtf() -> None:
    # seed 004 §6.2.2 (2): 30 fps video, 15 ms per frame -> FPS = 1000/15 = 66.7, RTF = 15/33.3 = 0.45
    assert round(fps(0.015), 1) == 66.7
    assert fps(0.015) == pytest.approx(1000 / 15)
    assert rtf(0.015, 1 / 30) == pytest.approx(0.45)
    # the same over a whole stream: 300 frames (10 s) at 15 ms each
    assert rtf(300 * 0.015, 10.0) == pytest.approx(0.45)


def test_fps_from_summary_of_constant_latency() -> None:
    summary = latency_summary(np.full(100, 15_000_000, dtype=np.int64))
    assert summary.mean_ms == 15.0
    assert fps(summary.mean_ms / 1e3) == pytest.approx(66.666666, rel=1e-6)


def test_ns_to_ms_conversion_hand_case() -> None:
    # 1, 2, 3, 4 ms in ns; linear percentiles: p50 = 2.5, p95 = 3 + 0.85 = 3.85, p99 = 3.97
    s = latency_summary(np.array([4_000_000, 1_000_000, 3_000_000, 2_000_000], dtype=np.int64))
    assert (s.n, s.mean_ms, s.p50_ms, s.max_ms, s.min_ms) == (4, 2.5, 2.5, 4.0, 1.0)
    assert s.std_ms == pytest.approx(np.sqrt(1.25))  # population std (ddof=0)
    assert s.p95_ms == pytest.approx(3.85)
    assert s.p99_ms == pytest.approx(3.97)
    assert s.percentile_method == "linear"
    assert isinstance(s, LatencySummary)
    assert latency_summary(np.array([1_500])).mean_ms == 0.0015  # sub-millisecond values keep precision


@pytest.mark.parametrize("seed", range(3))
def test_against_numpy_on_random_data(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lat = rng.integers(1_000_000, 50_000_000, size=1001, dtype=np.int64)
    s = latency_summary(lat)
    ms = lat / 1e6
    assert s.n == 1001
    assert s.mean_ms == pytest.approx(ms.mean(), rel=1e-12)
    assert s.std_ms == pytest.approx(ms.std(), rel=1e-9)
    assert s.p50_ms == pytest.approx(np.percentile(ms, 50), rel=1e-12)
    assert s.p95_ms == pytest.approx(np.percentile(ms, 95), rel=1e-12)
    assert s.p99_ms == pytest.approx(np.percentile(ms, 99), rel=1e-12)
    assert s.max_ms == ms.max()
    assert s.min_ms == ms.min()


def test_other_percentile_method_is_recorded() -> None:
    lat = np.arange(1, 11, dtype=np.int64) * 1_000_000  # 1..10 ms
    linear = latency_summary(lat)
    lower = latency_summary(lat, method="lower")
    assert linear.p95_ms == pytest.approx(9.55)
    assert lower.p95_ms == 9.0
    assert lower.percentile_method == "lower"


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (np.array([], dtype=np.int64), "empty"),
        (np.array([1.5, 2.0]), "latency_ns"),
        (np.array([[1, 2]]), "latency_ns"),
        (np.array([5, -1]), "non-negative"),
    ],
)
def test_latency_validation(value: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        latency_summary(value)


def test_latency_method_validation() -> None:
    with pytest.raises(ValueError, match="method"):
        latency_summary(np.array([1, 2]), method="type7")  # type: ignore[arg-type]


def test_fps_rtf_validation() -> None:
    with pytest.raises(ValueError, match="mean_latency_s"):
        fps(0.0)
    with pytest.raises(ValueError, match="mean_latency_s"):
        fps(float("nan"))
    with pytest.raises(ValueError, match="duration_s"):
        rtf(1.0, 0.0)
    with pytest.raises(ValueError, match="processing_s"):
        rtf(-1.0, 2.0)
    with pytest.raises(ValueError, match="processing_s"):
        rtf("1", 2.0)  # type: ignore[arg-type]
    assert rtf(0.0, 2.0) == 0.0


def test_summary_carries_fps_of_the_mean() -> None:
    # seed 004 §6.2.2 (2): 15 ms per frame -> 66.7 FPS
    summary = latency_summary(np.full(10, 15_000_000, dtype=np.int64))
    assert summary.fps == pytest.approx(1000 / 15)
    assert latency_summary(np.zeros(3, dtype=np.int64)).fps is None
