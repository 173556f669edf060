"""Fresh sources per live session (harness/execution/capacity_search.py ``fresh``, protocols/capacity.py
``arrival_schedule(fresh=True)``): every session plays a source of its own, so a content cache shared
across sessions (adapters/offenders/capacity_cheats.py ``SessionCacheAdapter``) finds no payload twice and
gains nothing; with the data set's streams replayed across sessions it finds many."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.offenders.capacity_cheats import HITS
from streambench.harness.execution.capacity_search import ServingPool, SourceStreams, run_search
from streambench.protocols.capacity import CapacityConfig, arrival_schedule
from tests.harness.execution.capacity_sim import SimClock, SimLane, _core, _stream

CACHE = "streambench.adapters.offenders.capacity_cheats:SessionCacheAdapter"
SETTINGS = {"confidence": 0.8, "target_miss_rate": 0.05, "slack_misses": 0, "min_point_s": 2.0}


def _fresh(live: int, duration_s: float, salt: int) -> SourceStreams:
    count = live * 2
    return SourceStreams.of([_stream(f"f{salt}-{k}", 40.0, 100, 1000 * salt + k) for k in range(count)])


def _hits(fresh: bool) -> int:
    clock = SimClock()
    lane = SimLane(clock, _core("replicas", 1, adapter=CACHE), 1_000_000)
    config = CapacityConfig.model_validate(
        {**SETTINGS, "streams": 4, "f1_reference": "same_units", "budget_s": 1e4}
    )
    before = HITS[0]
    run_search(
        SourceStreams.of([_stream("a", 40.0, 100, 0), _stream("b", 40.0, 100, 1)]),
        config,
        ServingPool([lane], lambda k, m: lane.request(m)),
        clock,
        fresh=_fresh if fresh else None,
    )
    return HITS[0] - before


def test_a_cross_session_cache_hits_on_replayed_sources_and_never_on_fresh_ones() -> None:
    assert _hits(fresh=False) > 100  # two sources played by every session: most frames were seen
    assert _hits(fresh=True) == 0


def test_fresh_schedules_give_every_session_its_own_source() -> None:
    times = [np.arange(1, 26, dtype=np.int64) * 40_000_000 for _ in range(12)]
    schedule = arrival_schedule(4, times, 2_000_000_000, 40_000_000, seed=3, fresh=True)
    assert schedule.session_source.tolist() == list(range(schedule.num_sessions))
    replayed = arrival_schedule(4, times, 2_000_000_000, 40_000_000, seed=3)
    assert len(set(replayed.session_source.tolist())) < replayed.num_sessions or replayed.num_sessions <= 12
    with pytest.raises(ValueError, match="fresh sources are too few"):
        arrival_schedule(4, times[:3], 2_000_000_000, 40_000_000, seed=3, fresh=True)
