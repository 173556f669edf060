"""The capacity protocol's load generator (harness/execution/load_generator.py) driven on a simulated
clock (tests/harness/execution/capacity_sim.py): no frame released early, a queue that cannot keep up
reported."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streambench.harness.execution.capacity_search import SourceStreams
from streambench.harness.execution.load_generator import run_point
from streambench.protocols.capacity import CapacityConfig
from streambench.protocols.capacity_score import NOT_SERVED, score_point
from tests.harness.execution.capacity_sim import SimClock, SimLane, _core, _setup, _stream


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    periods=st.lists(st.sampled_from([5.0, 10.0, 20.0, 33.4, 40.0]), min_size=1, max_size=3),
    n=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    service_us=st.integers(50, 20_000),
    max_batch=st.integers(1, 6),
    max_wait_us=st.sampled_from([0, 500, 5_000]),
    policy=st.sampled_from(["queue", "drop"]),
)
@pytest.mark.slow
def test_the_dispatcher_never_releases_a_frame_early(
    periods: list[float], n: int, seed: int, service_us: int, max_batch: int, max_wait_us: int, policy: str
) -> None:
    sources = SourceStreams.of([_stream(f"s{k}", p, 12, k) for k, p in enumerate(periods)])
    clock = SimClock()
    lane = SimLane(clock, _core("batched", max_batch), service_us * 1000)
    setup = _setup(
        sources,
        n,
        400_000_000,
        1,
        seed=seed,
        max_batch=max_batch,
        max_wait_ns=max_wait_us * 1000,
        policy=policy,
    )
    served = run_point(setup, [lane], clock)
    arrival = setup.schedule.arrival_ns
    released = served.released_ns != NOT_SERVED
    assert released.all()  # nothing cut short: every frame was released...
    assert np.all(served.released_ns >= arrival)  # ...never before its arrival
    done = served.start_ns != NOT_SERVED
    assert np.all(served.start_ns[done] >= served.released_ns[done])
    assert np.all(served.finish_ns[done] >= served.start_ns[done])
    assert np.array_equal(done | served.dropped, np.ones_like(done))  # served or dropped, never both
    assert not (done & served.dropped).any()
    if policy == "queue":
        assert not served.dropped.any()
    order: dict[int, int] = {}
    for _, keys, indices in lane.sent:  # a batch: at most max_batch, one frame per stream, in order
        assert len(keys) == len(set(keys)) <= max_batch
        for key, index in zip(keys, indices, strict=True):
            assert index > order.get(key, -1)
            order[key] = index


def test_a_queue_that_cannot_keep_up_is_reported() -> None:
    """4 streams at 25 frames/s on one worker of 15 ms a frame: 100 frames/s offered, 66.7 served; the
    queue grows by 33.3 frames/s, each 15 ms of wait: 0.5 s of wait per second."""
    sources = SourceStreams.of([_stream("a", 40.0, 100, 0)])
    clock = SimClock()
    config = CapacityConfig()
    setup = _setup(sources, 4, 2_000_000_000, 1)
    served = run_point(setup, [SimLane(clock, _core("replicas", 1), 15_000_000)], clock)
    point = score_point(setup.schedule, served, sources.labels, config)
    assert not point.keeps_up and not point.passed
    assert point.wait_growth == pytest.approx(0.5, abs=0.03)
    assert point.served_fps == pytest.approx(1000 / 15, rel=0.02)
    assert point.verdict.startswith("cannot keep up: queue wait grows 0.5")
    # cut short once it cannot pass: fewer frames released, the reason recorded
    setup = _setup(sources, 4, 2_000_000_000, 1, max_misses=3)
    cut = run_point(setup, [SimLane(clock, _core("replicas", 1), 15_000_000)], clock)
    assert cut.aborted is not None and (cut.released_ns == NOT_SERVED).any()
    assert "cut short" in score_point(setup.schedule, cut, sources.labels, config).verdict
