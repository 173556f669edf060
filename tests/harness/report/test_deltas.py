"""Differences between runs with their intervals (harness/report/deltas.py): MOVER from two stored
intervals, percentile intervals over streams."""

from __future__ import annotations

import numpy as np
import pytest


def test_mover_interval_of_a_difference_from_two_stored_intervals() -> None:
    """Zou & Donner (2008): with symmetric intervals the difference's half-width is the root sum of the two
    half-widths; asymmetric ones combine the facing sides; different levels give no interval."""
    from streambench.harness.report.deltas import mover_difference
    from streambench.protocols.metrics.bootstrap import Interval

    a = Interval(0.50, 0.40, 0.60, 0.95, 10, 1000)
    b = Interval(0.70, 0.67, 0.73, 0.95, 10, 1000)
    d = mover_difference(a, b)
    half = (0.1**2 + 0.03**2) ** 0.5
    assert d.value == pytest.approx(0.2) and d.low == pytest.approx(0.2 - half)
    assert d.high == pytest.approx(0.2 + half) and d.excludes_zero and d.method and "MOVER" in d.method
    skewed = mover_difference(Interval(1.0, 0.9, 1.5, 0.95, 5, 100), Interval(2.0, 1.0, 2.1, 0.95, 5, 100))
    assert skewed.low == pytest.approx(1.0 - (1.0**2 + 0.5**2) ** 0.5)  # b's low side, a's high side
    assert skewed.high == pytest.approx(1.0 + (0.1**2 + 0.1**2) ** 0.5)
    assert not skewed.excludes_zero
    other_level = mover_difference(a, Interval(0.7, 0.6, 0.8, 0.9, 10, 1000))
    assert other_level.low is None and other_level.reason and "different levels" in other_level.reason


def test_percentile_intervals_resample_streams_and_see_a_shift() -> None:
    """p50 / p99 intervals over streams: a run whose every frame is 1 ms slower differs by exactly 1 ms in
    every resample (same seed, same draws); an identical run by 0, an interval that includes 0."""
    from streambench.harness.report.deltas import percentile_difference, percentile_intervals

    rng = np.random.default_rng(1)
    streams = [rng.lognormal(-3, 0.5, 200) for _ in range(8)]
    a = percentile_intervals(streams, (50, 99), resamples=300, confidence=0.9)
    pooled = np.concatenate(streams)
    assert a.streams == 8 and a.resampled.shape == (300, 2)
    assert a.low[0] <= np.percentile(pooled, 50) <= a.high[0] and a.low[1] < a.high[1]
    slower = percentile_intervals([s + 1.0 for s in streams], (50, 99), resamples=300, confidence=0.9)
    estimates = list(np.percentile(pooled, [50, 99]))
    shifted = percentile_difference(a, slower, estimates, [e + 1.0 for e in estimates])
    assert [d.value for d in shifted] == pytest.approx([1.0, 1.0])
    assert all(d.low == pytest.approx(1.0) and d.high == pytest.approx(1.0) for d in shifted)
    same = percentile_difference(a, a, estimates, estimates)
    assert all(d.value == 0 and not d.excludes_zero for d in same)
