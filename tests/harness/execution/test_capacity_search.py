"""The capacity search (harness/execution/capacity_search.py) driven on a simulated clock
(tests/harness/execution/capacity_sim.py): the capacity found exactly, the budget, batching."""

from __future__ import annotations

import pytest

from streambench.harness.execution.capacity_search import ServingPool, SourceStreams, run_search
from streambench.protocols.capacity import CapacityConfig
from tests.harness.execution.capacity_sim import SimClock, SimLane, _core, _stream, reference


@pytest.mark.parametrize(("service_ms", "lanes", "expected"), [(7, 2, 10), (9, 1, 4), (3, 2, 26)])
def test_search_finds_k_times_floor_t_over_s(service_ms: int, lanes: int, expected: int) -> None:
    """K workers of service time S and staggered streams of period T: every frame is on time while a
    worker holds at most floor(T / S) streams (its work per period fits in the period), and one more
    overloads it. Zero harness cost on the simulated clock: capacity is exactly K * floor(T / S)."""
    sources = SourceStreams.of([_stream("a", 40.0, 250, 0)])
    clock = SimClock()
    pool_lanes = [SimLane(clock, _core("replicas", 1), service_ms * 1_000_000) for _ in range(lanes)]
    pool = ServingPool(pool_lanes, lambda k, m: pool_lanes[k].request(m), reference=reference())
    config = CapacityConfig(replicas=lanes, budget_s=10_000, min_point_s=1.0)
    score = run_search(sources, config, pool, clock)
    assert score.capacity == expected and score.status == "found"
    assert score.interval == (expected, expected)
    passed = {p.streams: p.passed for p in score.curve}
    assert passed[expected] and not passed[expected + 1]


def test_the_budget_ends_the_search_with_a_bracket() -> None:
    sources = SourceStreams.of([_stream("a", 40.0, 250, 0)])
    clock = SimClock()
    lane = SimLane(clock, _core("replicas", 1), 1_000_000)
    config = CapacityConfig(budget_s=40, min_point_s=1.0)  # N = 1 alone takes 26.5 s of it
    score = run_search(
        sources, config, ServingPool([lane], lambda k, m: lane.request(m), reference=reference()), clock
    )
    assert score.status == "budget" and any("budget" in note for note in score.notes)
    assert score.capacity >= 1 and score.interval[1] is None  # no failing N reached: the bracket is open


@pytest.mark.slow
def test_batched_serving_amortises_on_the_simulated_clock() -> None:
    """A batch of B costs 2 ms + 0.5 ms x B: batching 8 streams costs 6 ms where 8 replicas' turns cost
    20 ms, so one batching worker holds more streams than one replica."""
    sources = SourceStreams.of([_stream("a", 40.0, 250, 0)])
    scores = {}
    for serving, max_batch in (("replicas", 1), ("batched", 16)):
        clock = SimClock()
        lane = SimLane(clock, _core(serving, max_batch), 2_000_000, per_frame_ns=500_000)
        config = CapacityConfig(serving=serving, max_batch=max_batch, budget_s=10_000, min_point_s=1.0)  # type: ignore[arg-type]
        scores[serving] = run_search(
            sources,
            config,
            ServingPool([lane], lambda k, m, x=lane: x.request(m), reference=reference(serving, max_batch)),
            clock,
        )
    assert scores["replicas"].capacity == 16  # floor(40 / 2.5)
    assert scores["batched"].capacity > 2 * scores["replicas"].capacity
