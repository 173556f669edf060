"""The capacity protocol's load generator, batcher and search (harness/execution/load_generator.py,
batcher.py, capacity_search.py) driven on a simulated clock: every worker takes a known service time per
batch, so what the loop does is exact and needs no wall clock."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.registry import create_adapter
from streambench.harness.execution.batcher import DynamicBatcher
from streambench.harness.execution.capacity_search import ServingPool, SourceStreams, run_search
from streambench.harness.execution.load_generator import PointSetup, assign_least_loaded, run_point
from streambench.harness.execution.serving_worker import ServingCore, _decode_batch
from streambench.protocols.capacity import CapacityConfig, arrival_schedule
from streambench.protocols.capacity_score import NOT_SERVED, score_point

CLASSES = ("background", "event")


def _stream(name: str, period_ms: float, frames: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    payloads = rng.normal(size=(frames, 4)).astype(np.float32)
    times = np.arange(1, frames + 1) * period_ms / 1000

    def source() -> list[Frame]:
        return [Frame(index=i, t=float(times[i]), inputs={"audio": payloads[i]}) for i in range(frames)]

    labels = np.zeros((frames, 2), dtype=bool)
    labels[:, 0] = True
    return Stream(name, CLASSES, labels, times, source, ("audio",))


class SimLane:
    """A worker whose batch of B frames takes ``service_ns(B)`` on the simulated clock; it records what it
    was sent (time, keys, frame indices) and serves it with a real adapter in this process."""

    def __init__(self, clock: SimClock, core: ServingCore, service_ns: int, per_frame_ns: int = 0) -> None:
        self.clock, self.core = clock, core
        self.service_ns, self.per_frame_ns = service_ns, per_frame_ns
        self.done_at = 0
        self.sent: list[tuple[int, list[int], list[int]]] = []
        self._reply = b""

    def send(self, message: bytes) -> None:
        items = _decode_batch(message)
        self.sent.append((self.clock.t, [k for k, _, _ in items], [f.index for _, _, f in items]))
        size = len(items)
        del items  # frames of this process the peeker was not handed: it would (rightly) object
        self._reply = self.core.serve(message)
        self.done_at = self.clock.t + self.service_ns + self.per_frame_ns * size

    def receive(self) -> bytes:
        return self._reply

    def fileno(self) -> int | None:
        return -1

    def request(self, message: bytes) -> bytes:
        if message[:1] == b"P":
            self.core.prepare(int.from_bytes(message[1:5], "little"))
        else:
            self.core.reset()
        return b""


class SimClock:
    """Time jumps to the next event: a reply or the loop's own deadline."""

    def __init__(self) -> None:
        self.t = 0

    def now(self) -> int:
        return self.t

    def wait(self, busy: list[SimLane], until: int | None) -> list[SimLane]:  # type: ignore[override]
        events = [lane.done_at for lane in busy] + ([until] if until is not None else [])
        assert events, "the loop waited with nothing to wait for"
        self.t = max(self.t, min(events))
        return [lane for lane in busy if lane.done_at <= self.t]


PEEKER = "streambench.adapters.offenders.cross_stream:CrossStreamPeekerAdapter"


def _core(serving: str, max_batch: int, adapter: str = PEEKER, scan_every: int = 1000) -> ServingCore:
    """The cross-stream peeker by default (an honest model with a batch mode; scanning the process only
    every ``scan_every`` calls, the scan being slow in a test process)."""
    bound = {"classes": CLASSES, "input_dims": {"audio": 4}}
    options = {"scan_every": scan_every} if adapter == PEEKER else {}
    return ServingCore(lambda: create_adapter(adapter, options, data_bound=bound), serving, max_batch)


def _setup(sources: SourceStreams, n: int, duration_ns: int, lanes: int, **kw: object) -> PointSetup:
    schedule = arrival_schedule(n, sources.times_ns, duration_ns, sources.period_ns, int(kw.pop("seed", 0)))
    return PointSetup(
        schedule=schedule,
        lane_of_channel=assign_least_loaded(n, lanes),
        encoded=sources.encoded,
        num_classes=2,
        deadline_ns=int(kw.pop("deadline_ns", sources.period_ns)),
        max_batch=int(kw.pop("max_batch", 1)),
        max_wait_ns=int(kw.pop("max_wait_ns", 0)),
        policy=kw.pop("policy", "queue"),  # type: ignore[arg-type]
        max_misses=kw.pop("max_misses", None),  # type: ignore[arg-type]
    )


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


def test_batcher_waits_for_a_fuller_batch_at_most_max_wait() -> None:
    batcher = DynamicBatcher(max_batch=3, max_wait_ns=1000, policy="queue")
    batcher.add(0, stream=7, arrival_ns=100)
    assert batcher.take(500) is None and batcher.due_at() == 1100
    batcher.add(1, stream=8, arrival_ns=600)
    assert batcher.take(1100) == ([(0, 7), (1, 8)], [])  # the oldest waited max_wait: sent as it is
    for f, s in [(2, 1), (3, 1), (4, 2), (5, 3)]:
        batcher.add(f, stream=s, arrival_ns=2000 + f)
    # full at once, one frame per stream: stream 1's second frame waits for the next batch
    assert batcher.take(2010) == ([(2, 1), (4, 2), (5, 3)], [])
    assert batcher.take(2010) is None and batcher.waiting == 1
    drop = DynamicBatcher(max_batch=1, max_wait_ns=0, policy="drop")
    for f in range(3):
        drop.add(f, stream=0, arrival_ns=f)
    assert drop.take(5) == ([(2, 0)], [0, 1])  # drop to the newest


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


@pytest.mark.parametrize(("service_ms", "lanes", "expected"), [(7, 2, 10), (9, 1, 4), (3, 2, 26)])
def test_search_finds_k_times_floor_t_over_s(service_ms: int, lanes: int, expected: int) -> None:
    """K workers of service time S and staggered streams of period T: every frame is on time while a
    worker holds at most floor(T / S) streams (its work per period fits in the period), and one more
    overloads it. Zero harness cost on the simulated clock: capacity is exactly K * floor(T / S)."""
    sources = SourceStreams.of([_stream("a", 40.0, 250, 0)])
    clock = SimClock()
    pool_lanes = [SimLane(clock, _core("replicas", 1), service_ms * 1_000_000) for _ in range(lanes)]
    pool = ServingPool(pool_lanes, lambda k, m: pool_lanes[k].request(m))
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
    score = run_search(sources, config, ServingPool([lane], lambda k, m: lane.request(m)), clock)
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
            sources, config, ServingPool([lane], lambda k, m, x=lane: x.request(m)), clock
        )
    assert scores["replicas"].capacity == 16  # floor(40 / 2.5)
    assert scores["batched"].capacity > 2 * scores["replicas"].capacity
