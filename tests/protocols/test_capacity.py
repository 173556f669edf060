"""The capacity protocol's plan (protocols/capacity.py): LoadGen's early-stopping rule against LoadGen's
own numbers, the miss-rate bound, the arrival schedule and the search."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError
from scipy import stats

from streambench.protocols.capacity import (
    CapacityConfig,
    CapacitySearch,
    arrival_schedule,
    early_stopping_passes,
    frames_still_needed,
    max_passing_misses,
    min_passing_frames,
    miss_rate_upper_bound,
    overlatency_odds,
    planned_frames,
    point_duration_s,
)

# -- early stopping: LoadGen's published values ------------------------------------------------------------


@pytest.mark.parametrize(
    ("t", "p", "h"),
    [
        (0, 0.99, 459),  # ceil(log(0.01) / log(0.99)): no miss at all at the 99th percentile
        (0, 0.90, 44),
        (1, 0.99, 661),  # LoadGen's summary: "Need to process at least 662 queries" (h + 1) at p99
        (1, 0.90, 63),  # ... and "at least 64 queries for early stopping" at p90 (SingleStream)
    ],
)
def test_min_passing_frames_are_loadgens(t: int, p: float, h: int) -> None:
    """loadgen/early_stopping.cc with LoadGen's d = 0, c = 0.99; the SingleStream floors 64 (p90) and
    662 (p99) are what its summary prints ("Need to process at least 64 queries for early stopping")."""
    assert min_passing_frames(t, p, 0.99) == h
    assert overlatency_odds(h, t, p) < 0.01 <= overlatency_odds(h - 1, t, p)  # strictly, as LoadGen


def test_odds_are_the_binomial_cdf() -> None:
    """odds(h, t, p) = P(Binomial(h + t, 1 - p) <= t) = I_p(h, t + 1) (the rules' appendix)."""
    for h, t, p in [(100, 3, 0.97), (2000, 25, 0.99), (40, 0, 0.9), (5000, 60, 0.985)]:
        assert overlatency_odds(h, t, p) == pytest.approx(stats.binom.cdf(t, h + t, 1 - p), rel=1e-9)
        assert overlatency_odds(h, t, p) == pytest.approx(stats.beta.cdf(p, h, t + 1), rel=1e-9)


def test_server_rule_and_its_recommendation() -> None:
    # 662 frames with one miss pass at 1 % / 99 %; with two they need h(2) + 2 frames
    assert early_stopping_passes(662, 1, 0.01, 0.99)
    assert not early_stopping_passes(661, 1, 0.01, 0.99)
    need = min_passing_frames(2, 0.99, 0.99) + 2
    assert frames_still_needed(662, 2, 0.01, 0.99) == need - 662 > 0
    assert frames_still_needed(need, 2, 0.01, 0.99) == 0
    assert max_passing_misses(662, 0.01, 0.99) == 1
    assert max_passing_misses(458, 0.01, 0.99) == -1  # too few frames to pass even with none


@pytest.mark.parametrize(("n", "t"), [(459, 0), (662, 1), (1000, 4), (20000, 150), (50, 50)])
def test_bound_is_clopper_pearson_and_agrees_with_the_rule(n: int, t: int) -> None:
    bound = miss_rate_upper_bound(n, t, 0.99)
    expected = 1.0 if t >= n else stats.beta.ppf(0.99, t + 1, n - t)
    assert bound == pytest.approx(expected, abs=1e-8)
    assert (bound <= 0.01) == early_stopping_passes(n, t, 0.01, 0.99)


def test_planned_frames_is_loadgens_floor() -> None:
    assert planned_frames(CapacityConfig()) == 662
    assert planned_frames(CapacityConfig(slack_misses=0)) == 459
    # 662 frames at 25 frames/s, one more for the phase: 26.52 s for one stream, the floor of 2 s for 64
    assert point_duration_s(1, 25.0, CapacityConfig()) == pytest.approx(26.52)
    sources = _sources([40.0], 250)
    for n in (1, 3, 7):  # whatever the phases, the planned frames fit
        duration = round(point_duration_s(n, 25.0, CapacityConfig(min_point_s=0.1)) * 1e9)
        for seed in range(5):
            assert arrival_schedule(n, sources, duration, 40_000_000, seed).num_frames >= 662
    assert point_duration_s(64, 25.0, CapacityConfig()) == 2.0


# -- the arrival schedule -----------------------------------------------------------------------------------


def _sources(periods_ms: list[float], frames: int) -> list[np.ndarray]:
    return [np.round(np.arange(1, frames + 1) * p * 1e6).astype(np.int64) for p in periods_ms]


def test_schedule_plays_each_stream_at_its_rate_with_a_seeded_phase() -> None:
    sources = _sources([40.0], 25)  # one 1 s stream at 25 frames/s
    schedule = arrival_schedule(3, sources, 2_500_000_000, 40_000_000, seed=7)
    again = arrival_schedule(3, sources, 2_500_000_000, 40_000_000, seed=7)
    assert np.array_equal(schedule.arrival_ns, again.arrival_ns)
    assert not np.array_equal(schedule.phase_ns, arrival_schedule(3, sources, 10**9, 40_000_000, 8).phase_ns)
    assert np.all((schedule.phase_ns >= 0) & (schedule.phase_ns < 40_000_000))
    assert np.all(np.diff(schedule.arrival_ns) >= 0)
    for c in range(3):
        mine = schedule.arrival_ns[schedule.channel == c]
        # back to back: 40 ms apart throughout, the first at phase + 40 ms, none at or after 2.5 s
        assert np.all(np.diff(mine) == 40_000_000)
        assert mine[0] == schedule.phase_ns[c] + 40_000_000
        assert mine[-1] < 2_500_000_000 <= mine[-1] + 40_000_000
    # sessions: a fresh one per data-set stream played; the last of each cut at the point's end
    assert schedule.num_sessions == 9
    assert schedule.first_of_session.sum() == 9 and schedule.last_of_session.sum() == 9
    assert schedule.session_frames.sum() == schedule.num_frames


def test_schedule_refuses_no_streams() -> None:
    with pytest.raises(ValueError, match="num_streams"):
        arrival_schedule(0, _sources([40.0], 5), 10**9, 40_000_000, 0)


# -- the search -------------------------------------------------------------------------------------------


def _run(search: CapacitySearch, capacity: int) -> list[int]:
    measured = []
    while (n := search.next_streams()) is not None:
        measured.append(n)
        search.record(n, n <= capacity)
    return measured


def test_search_steps_up_then_bisects() -> None:
    search = CapacitySearch(max_streams=4096)
    assert _run(search, 37) == [1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37]
    assert search.interval() == (37, 37) and search.status(False) == "found"


def test_search_edges() -> None:
    none = CapacitySearch(max_streams=100)
    assert _run(none, 0) == [1] and none.interval() == (0, 0)
    capped = CapacitySearch(max_streams=20)
    assert _run(capped, 10**6) == [1, 2, 4, 8, 16, 20] and capped.status(False) == "at_least"
    fixed = CapacitySearch(max_streams=20, fixed=12)
    assert _run(fixed, 5) == [1, 12] and fixed.status(False) == "fixed" and fixed.interval() == (1, 11)
    fixed = CapacitySearch(max_streams=20, fixed=12)
    assert _run(fixed, 12) == [1, 12] and fixed.interval() == (12, None)  # at least the N it measured
    cut = CapacitySearch(max_streams=4096)
    for n, ok in [(1, True), (2, True), (4, True), (8, False)]:
        cut.record(n, ok)
    assert cut.status(out_of_budget=True) == "budget" and cut.interval() == (4, 7)


@pytest.mark.parametrize(
    ("field", "value"), [("deadline_ms", 0), ("deadline_ms", -5), ("streams", 0), ("max_batch", 0)]
)
def test_bad_settings_name_the_field(field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        CapacityConfig.model_validate({field: value})
