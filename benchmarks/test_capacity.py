"""The capacity protocol against the truth where it is known, and the harness's own cost (issue 28).

Opt-in (not collected by ``pytest`` alone)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_capacity.py -s

- ``test_busywait_capacity_against_prediction``: the busy-wait adapter of service time S on K sealed
  replicas, 25 frames/s streams with staggered phases and a deadline of one period T = 40 ms. A replica
  holding n streams has n * S of work per period; every frame is on time while n * S <= T, so the capacity
  is K * floor(T / S), less what the harness adds per frame (the pipe and the dispatcher, h ~ 0.7 ms here:
  with h, floor(T / (S + h))). Settings where n * (S + h) still fits in T (S = 13 ms would not: 3 x 13.7 >
  40) measure K * floor(T / S) itself; S = 3 ms (13 x 3.7 > 40) shows the harness's cost. The whole search
  (LoadGen's bound at 1 % and 99 %), within 10 %. This machine has 2 cores: K <= 2, and with K = 2 the two
  busy workers and the load generator share them (the result says so).
- ``test_dispatcher_cost_per_frame``: the load generator and dispatcher alone (a worker in this process
  that answers at once without reading the frames): CPU per frame and frames/s on one core, and where the
  time goes (cProfile); then the same through one sealed ``null`` worker (the pipe's round trip).
- ``test_batched_against_replicas_for_the_reference_model``: the reference model, one replica against
  one batching worker (up to 64 streams a batch, 2 ms wait).

A busy machine moves every figure (the load average is printed with them): run it on a quiet one.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import struct
import time

import numpy as np
import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams, make_warmup_stream
from streambench.harness.execution.capacity_search import SourceStreams, run_search
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.load_generator import (
    PointSetup,
    WallClock,
    assign_least_loaded,
    run_point,
)
from streambench.harness.execution.sealed_feed import encode_frame
from streambench.harness.execution.serving_pool import sealed_pool
from streambench.harness.execution.setup import data_bound_of
from streambench.protocols.capacity import CapacityConfig, arrival_schedule
from streambench.protocols.capacity_score import CapacityScore, score_point

pytestmark = pytest.mark.benchmark

DATA = SyntheticConfig(seed=0, num_streams=12, duration_s=10)  # 25 frames/s: T = 40 ms


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} cores"


def _search(adapter: str, options: dict[str, object], config: CapacityConfig) -> CapacityScore:
    streams = make_streams(DATA)
    warmup = [encode_frame(f) for f in make_warmup_stream(DATA, 100).frames()]
    run = RunConfig(adapter=adapter, adapter_options=options, data=DATA)
    with sealed_pool(run, config, data_bound_of(streams[0]), warmup) as (pool, _record):
        return run_search(SourceStreams.of(streams), config, pool, WallClock())


def _curve(score: CapacityScore) -> str:
    rows = [
        f"    N={p.streams:<5d} {'pass' if p.passed else 'fail'}  frames {p.frames:6d}  misses {p.misses:5d} "
        f"p50 {p.response_p50_ms or 0:7.2f} ms  p99 {p.response_p99_ms or 0:8.2f} ms  "
        f"CPU: harness {100 * (p.harness_cpu_share or 0):4.0f} %, "
        f"workers {100 * (p.workers_cpu_share or 0):4.0f} %"
        for p in score.curve
    ]
    return "\n".join(rows)


HARNESS_BOUND = pytest.mark.xfail(
    reason="2 cores: two busy replicas and the load generator contend (the result notes it is CPU-bound by "
    "the harness); measured 4 of 6 here",
    strict=False,
)


@pytest.mark.parametrize(
    ("service_ms", "replicas"),
    [(7.0, 1), (3.0, 1), (12.0, 1), (9.0, 2), pytest.param(12.0, 2, marks=HARNESS_BOUND)],
)
def test_busywait_capacity_against_prediction(service_ms: float, replicas: int) -> None:
    predicted = replicas * int(40 // service_ms)
    started = time.perf_counter()
    score = _search(
        "busywait", {"duration_us": service_ms * 1000}, CapacityConfig(replicas=replicas, budget_s=600)
    )
    error = (score.capacity - predicted) / predicted
    print(
        f"\nbusywait S = {service_ms:g} ms on K = {replicas}: predicted K*floor(T/S) = {predicted}, measured "
        f"{score.capacity} (interval {score.interval}, {score.status}), error {100 * error:+.1f} %, "
        f"search {time.perf_counter() - started:.0f} s, {_load()}\n{_curve(score)}\n    notes: {score.notes}"
    )
    assert abs(error) <= 0.10


class EchoLane:
    """A worker in this process that answers every frame at once with no prediction and never reads the
    frames: what is left is the load generator's and the dispatcher's own work."""

    def __init__(self) -> None:
        self._reply = b""

    def send(self, message: bytes) -> None:
        (count,) = struct.unpack_from("<I", message, 1)
        self._reply = b"R" + struct.pack("<II", count, 0) + bytes(4 * count)

    def receive(self) -> bytes:
        return self._reply

    def fileno(self) -> int | None:
        return None


def _dispatch(rate: int, max_batch: int, profile: bool = False) -> tuple[float, float, bool, str]:
    """(CPU µs per frame, frames/s served, kept up, profile) of 2 s of ``rate`` frames/s (100 frames/s
    streams) through an :class:`EchoLane`. Frames/s served is the frames over the wall time the point
    took, start and wind-down included (a point that falls behind takes longer than its schedule's 2 s);
    kept up: the protocol's own verdict (its queue did not grow); CPU: the load generator's thread's."""
    data = SyntheticConfig(seed=0, num_streams=4, duration_s=10, fps=100)
    sources = SourceStreams.of(make_streams(data))
    n = rate // 100
    schedule = arrival_schedule(n, sources.times_ns, 2_000_000_000, sources.period_ns, 0)
    setup = PointSetup(
        schedule,
        assign_least_loaded(n, 1),
        sources.encoded,
        sources.num_classes,
        10**9,
        max_batch,
        0,
        "queue",
    )
    profiler = cProfile.Profile() if profile else None
    cpu, wall = time.thread_time_ns(), time.perf_counter_ns()
    if profiler is not None:
        profiler.enable()
    served = run_point(setup, [EchoLane()], WallClock())
    if profiler is not None:
        profiler.disable()
    cpu, wall = time.thread_time_ns() - cpu, time.perf_counter_ns() - wall
    point = score_point(schedule, served, sources.labels, CapacityConfig(deadline_ms=1000))
    text = ""
    if profiler is not None:
        stats = pstats.Stats(profiler)
        total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:8]  # type: ignore[attr-defined]
        text = "\n".join(
            f"      {100 * row[2] / total:5.1f} %  {func[2]} ({os.path.basename(func[0])})"
            for func, row in rows
        )
    served_fps = schedule.num_frames / (wall / 1e9)
    return cpu / schedule.num_frames / 1000, served_fps, point.keeps_up, text


def test_dispatcher_cost_per_frame() -> None:
    lines = [f"\ndispatcher alone, one core ({_load()}):"]
    for max_batch in (1, 32):
        for rate in (10_000, 20_000, 40_000, 80_000):
            cost, served, kept, _ = _dispatch(rate, max_batch)
            lines.append(
                f"    batch <= {max_batch:2d}, offered {rate:6d} frames/s: {served:8.0f} frames/s (wall), "
                f"CPU {cost:5.1f} µs/frame, queue {'kept up' if kept else 'grew'}"
            )
    _, _, _, profile = _dispatch(40_000, 1, profile=True)
    lines.append(
        "    where the time goes (batch 1, 40 000 frames/s; share of profiled time, own time):\n" + profile
    )
    print("\n".join(lines))
    cost, _, kept, _ = _dispatch(20_000, 1)
    assert kept and cost < 50.0  # 20 000 frames/s on one core: under 50 µs a frame


def test_sealed_null_worker_round_trip() -> None:
    """One sealed ``null`` replica: the most frames/s one worker's pipe sustains at a 40 ms deadline."""
    config = CapacityConfig(max_streams=2048, budget_s=300, min_point_s=2.0)
    score = _search("null", {}, config)
    print(
        f"\nsealed null replica: {score.capacity} streams x 25 frames/s = {25 * score.capacity} frames/s at "
        f"40 ms ({score.status}, {_load()})\n{_curve(score)}"
    )
    assert score.capacity >= 1


def test_batched_against_replicas_for_the_reference_model() -> None:
    scores = {}
    for serving in ("replicas", "batched"):
        config = CapacityConfig(serving=serving, max_batch=64, max_wait_us=2000, budget_s=600)  # type: ignore[arg-type]
        scores[serving] = _search("reference", {}, config)
    replicas, batched = scores["replicas"].capacity, scores["batched"].capacity
    print(
        f"\nreference model at 40 ms ({_load()}): one replica {replicas} streams, one batching worker "
        f"{batched} streams (x{batched / max(replicas, 1):.1f})\n  replicas:\n{_curve(scores['replicas'])}"
        f"\n  batched:\n{_curve(scores['batched'])}"
    )
    assert batched > replicas
    assert np.isfinite(scores["batched"].one_stream_f1 or 0.0)
