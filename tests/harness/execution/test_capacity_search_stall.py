"""A point decided by one noisy stall is measured again (harness/execution/capacity_search.py), on the
simulated clock (tests/harness/execution/capacity_sim.py): a worker that stalls once for 150 ms in the
middle of a point misses a few frames within one short window and then keeps up; the point is measured
again (at most ``remeasures`` times, each attempt recorded) instead of ending the search. A worker that
cannot keep up misses all along and is not measured again."""

from __future__ import annotations

from streambench.harness.execution.capacity_search import ServingPool, SourceStreams, run_search
from streambench.protocols.capacity import CapacityConfig
from tests.harness.execution.capacity_sim import SimClock, SimLane, _core, _stream, reference

LOOSE = {
    "confidence": 0.8,
    "target_miss_rate": 0.05,
    "slack_misses": 0,
    "min_point_s": 2.0,
    "budget_s": 10_000,
}


class StallingLane(SimLane):
    """A 1 ms worker whose ``stall_at``-th batch takes 150 ms more, once."""

    def __init__(self, clock: SimClock, stall_at: int) -> None:
        super().__init__(clock, _core("replicas", 1, adapter="null"), 1_000_000)
        self.stall_at, self.batches = stall_at, 0

    def send(self, message: bytes) -> None:
        super().send(message)
        self.batches += 1
        if self.batches == self.stall_at:
            self.done_at += 150_000_000


def _search(lane: SimLane, clock: SimClock, **settings: object):  # type: ignore[no-untyped-def]
    config = CapacityConfig.model_validate({**LOOSE, "streams": 2, "stall_window_s": 0.3, **settings})
    pool = ServingPool([lane], lambda k, m: lane.request(m), reference=reference(adapter="null"))
    return run_search(SourceStreams.of([_stream("a", 40.0, 250, 0)]), config, pool, clock)


def test_one_stall_is_measured_again_and_recorded() -> None:
    clock = SimClock()
    score = _search(StallingLane(clock, stall_at=70), clock)  # N = 1 sends about 50 batches: N = 2 stalls
    one, two = score.curve
    assert one.passed and not one.attempts
    assert two.passed and len(two.attempts) == 1  # the stalled attempt, then a clean one
    assert two.attempts[0].startswith("attempt 1: misses ")
    assert score.capacity == 2 and any("one stall were measured again" in n for n in score.notes)


def test_without_re_measurement_the_stall_ends_the_search() -> None:
    clock = SimClock()
    score = _search(StallingLane(clock, stall_at=70), clock, remeasures=0)
    assert score.capacity == 1 and not score.curve[1].passed and not score.curve[1].attempts
    assert score.curve[1].aborted is not None  # cut short at once, as before re-measurement existed


def test_a_worker_that_cannot_keep_up_is_not_measured_again() -> None:
    clock = SimClock()
    slow = SimLane(clock, _core("replicas", 1, adapter="null"), 30_000_000)  # one stream fits, two do not
    score = _search(slow, clock)
    assert score.capacity == 1 and not score.curve[1].passed and score.curve[1].attempts == []
