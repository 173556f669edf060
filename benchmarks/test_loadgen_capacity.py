"""Capacity beside MLPerf LoadGen: one system under test, two harnesses, in one job (docs/performance.md,
"Capacity beside MLPerf LoadGen").

Opt-in (not collected by ``pytest`` alone; needs ``mlcommons-loadgen``, in the ``dev`` extra)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_loadgen_capacity.py -s

The system under test is the capacity protocol's own serving worker (harness/execution/serving_worker.py:
a sealed process, one adapter instance per stream, one frame per message as a replica lane is sent them),
serving ``busywait`` of 7 ms (its capacity is known: ``floor(T / S) = 5`` streams at T = 40 ms), the same
7 ms slept rather than spun (its control on a shared machine: other tenants cannot stretch a sleep as they
stretch a spin) and the reference GRU (``reference-gru``). Each is searched for its capacity at a 40 ms
deadline three ways:

- ``streambench``: ``run --protocol capacity``'s search (harness/execution/capacity_search.py): N periodic
  25 frames/s streams with staggered phases, a point passing when LoadGen's early-stopping bound of the
  deadline-miss rate is <= 1 % at 99 %;
- LoadGen ``MultiStream``: a query of N samples (one frame of each of N streams) issued as the previous one
  completes; a point passes when LoadGen's early-stopping estimate of the 99th-percentile query latency is
  within the deadline;
- LoadGen ``Server``: single-sample queries at ``25 N`` per second with Poisson arrivals, LoadGen's own
  latency constraint (99th percentile within the deadline, with early stopping) deciding the point.

LoadGen's points are searched by the same steps and bisection (protocols/capacity.py's ``CapacitySearch``);
each runs at least 662 queries and 2 s (``min_query_count``, ``min_duration``: streambench's planned frames
and ``min_point_s``). Dispatch overhead per frame: the median response to a frame of the ``null`` adapter
through the same sealed worker (the pipe's round trip included) and in this process (the harness alone),
for each harness. ``test_point_by_point`` measures the 7 ms SUTs at N = 1 .. 7 with the three in turn,
twice, so that every harness sees the same minutes of a shared machine. The tables it prints are recorded
in docs/performance.md with the machine and date.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streambench.adapters.registry import create_adapter
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams, make_warmup_stream
from streambench.harness.execution.capacity_search import ServingPool, SourceStreams, run_search
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.load_generator import (
    PointSetup,
    WallClock,
    assign_least_loaded,
    run_point,
)
from streambench.harness.execution.sealed_feed import encode_frame
from streambench.harness.execution.serving_pool import in_process_pool, sealed_pool
from streambench.harness.execution.serving_worker import FIRST, LAST, encode_batch
from streambench.harness.execution.setup import data_bound_of
from streambench.protocols.capacity import (
    CapacityConfig,
    CapacitySearch,
    arrival_schedule,
    max_passing_misses,
    planned_frames,
    point_duration_s,
)
from streambench.protocols.capacity_score import CapacityPoint, CapacityScore, score_point

pytestmark = pytest.mark.benchmark
lg = pytest.importorskip("mlperf_loadgen")

DATA = SyntheticConfig(seed=0, num_streams=12, duration_s=10)  # 25 frames/s: T = 40 ms
DEADLINE_MS = 40.0
SUTS = {
    "busy-wait 7 ms": ("busywait", {"duration_us": 7000}),
    "sleep 7 ms": ("busywait", {"duration_us": 7000, "sleep": True}),
    "reference GRU": ("reference-gru", {}),
}
"""The systems under test. ``sleep 7 ms`` is the busy-wait's control on a shared machine: the same service
time in the same worker, without using the CPU, so other tenants stretch it only by a wake-up."""


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} cores"


# -- the system under test as LoadGen sees it ----------------------------------------------------------


class LaneSut:
    """LoadGen's SUT on a streambench serving lane: slot ``i`` is a live stream playing the data set's
    streams back to back (a fresh session key each, ``FIRST`` / ``LAST`` flags as the load generator sets
    them); every sample is one frame of its slot, sent alone and answered before the next (a replica lane's
    dispatch). ``issue`` hands the samples to a thread of this process, which talks to the lane."""

    def __init__(self, lane: Any, sources: SourceStreams, slots: int, slot_of: Callable[[int, int], int]):
        self.lane = lane
        self.sources = sources
        self.slot_of = slot_of  # (position in the query, samples issued so far) -> slot
        self.keys = itertools.count(1)
        self.session = [self._session(i) for i in range(slots)]
        self.issued = 0
        self.todo: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.failed: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _session(self, slot: int) -> list[int]:
        """[key, source stream, next frame]"""
        return [next(self.keys), (slot + next(self.keys)) % len(self.sources.encoded), 0]

    def issue(self, samples: Sequence[Any]) -> None:
        slots = [self.slot_of(k, self.issued + k) for k in range(len(samples))]
        self.issued += len(samples)
        self.todo.put(list(zip(samples, slots, strict=True)))

    def _serve(self) -> None:
        encoded = self.sources.encoded
        while (work := self.todo.get()) is not None:
            for sample, slot in work:
                key, source, frame = self.session[slot]
                frames = encoded[source]
                flags = (FIRST if frame == 0 else 0) | (LAST if frame == len(frames) - 1 else 0)
                self.lane.send(encode_batch([(key, flags, frames[frame])]))
                reply = self.lane.receive()
                if reply[:1] != b"R":
                    self.failed.append(reply[:200].decode(errors="replace"))
                self.session[slot] = self._session(slot) if flags & LAST else [key, source, frame + 1]
                lg.QuerySamplesComplete([lg.QuerySampleResponse(sample.id, 0, 0)])

    def close(self) -> None:
        self.todo.put(None)
        self.thread.join(30)


@dataclass
class LoadGenPoint:
    """One LoadGen run, as its detail log (``mlperf_log_detail.txt``) states it."""

    n: int
    passed: bool
    valid: str
    p50_ms: float
    p99_ms: float
    estimate_ms: float | None  # MultiStream: LoadGen's early-stopping estimate of the p99 query latency
    queries: int
    over_latency: int | None  # Server: queries over the latency bound
    needed: int | None  # queries the early-stopping rule needed (or would need, all in time) to pass
    seconds: float


def _detail(path: Path) -> dict[str, Any]:
    """LoadGen's detail log: ``:::MLLOG {json}`` lines, key -> value (the last of each key)."""
    entries: dict[str, Any] = {}
    for line in path.read_text().splitlines():
        if line.startswith(":::MLLOG "):
            entry = json.loads(line[len(":::MLLOG ") :])
            entries[entry["key"]] = entry["value"]
    return entries


def _needed(early: str, queries: int) -> int | None:
    """From LoadGen's early-stopping text: the queries its rule needs ("Processed at least 662 queries"),
    or would need ("Would need to run at least 8761 more queries"); a successful Server run says neither."""
    found = re.search(r"Processed at least (\d+) queries", early)
    if found:
        return int(found.group(1))
    more = re.search(r"Would need to run at least (\d+) more queries", early)
    return queries + int(more.group(1)) if more else None


def loadgen_point(scenario: str, n: int, pool: ServingPool, sources: SourceStreams) -> LoadGenPoint:
    """One LoadGen run of N streams (MultiStream: N samples a query; Server: 25 N queries/s)."""
    settings = lg.TestSettings()
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_query_count = planned_frames(CapacityConfig())  # 662: LoadGen's count for 1 % at 99 %
    settings.min_duration_ms = 2000
    if scenario == "MultiStream":
        settings.scenario = lg.TestScenario.MultiStream
        settings.multi_stream_samples_per_query = n
        settings.multi_stream_expected_latency_ns = int(DEADLINE_MS * 1e6)
        slot_of: Callable[[int, int], int] = lambda position, issued: position  # noqa: E731
    else:
        settings.scenario = lg.TestScenario.Server
        settings.server_target_qps = sources.fps * n
        settings.server_target_latency_ns = int(DEADLINE_MS * 1e6)
        settings.server_target_latency_percentile = 0.99
        slot_of = lambda position, issued: issued % n  # noqa: E731
    pool.request(0, b"P" + (n + 1).to_bytes(4, "little"))
    sut_lane = LaneSut(pool.lanes[0], sources, n, slot_of)
    sut = lg.ConstructSUT(sut_lane.issue, lambda: None)
    qsl = lg.ConstructQSL(1024, 1024, lambda samples: None, lambda samples: None)
    with tempfile.TemporaryDirectory() as out:
        log = lg.LogSettings()
        log.log_output.outdir = out
        log.log_output.copy_summary_to_stdout = False
        started = time.perf_counter()
        try:
            lg.StartTestWithLogSettings(sut, qsl, settings, log)
        finally:
            seconds = time.perf_counter() - started
            sut_lane.close()
            lg.DestroyQSL(qsl)
            lg.DestroySUT(sut)
            pool.request(0, b"Z")
        detail = _detail(Path(out) / "mlperf_log_detail.txt")
    assert not sut_lane.failed, sut_lane.failed[:3]
    early = str(detail.get("early_stopping_result", ""))
    queries = int(detail["result_query_count"])
    estimate = re.search(r"Early stopping [\d.]+th percentile estimate: (\d+)", early)
    estimate_ms = int(estimate.group(1)) / 1e6 if estimate else None
    valid = str(detail["result_validity"])
    # MultiStream: per query (its last sample's completion); the plain keys are per sample (results.cc)
    per = "per_query_" if scenario == "MultiStream" else ""
    return LoadGenPoint(
        n=n,
        passed=(estimate_ms is not None and estimate_ms <= DEADLINE_MS)
        if scenario == "MultiStream"
        else valid == "VALID",
        valid=valid,
        p50_ms=detail[f"result_50.00_percentile_{per}latency_ns"] / 1e6,
        p99_ms=detail[f"result_99.00_percentile_{per}latency_ns"] / 1e6,
        estimate_ms=estimate_ms,
        queries=queries,
        over_latency=detail.get("result_overlatency_query_count") if scenario == "Server" else None,
        needed=_needed(early, queries),
        seconds=seconds,
    )


def loadgen_search(scenario: str, pool: ServingPool, sources: SourceStreams) -> list[LoadGenPoint]:
    search = CapacitySearch(max_streams=4096)
    points = []
    while (n := search.next_streams()) is not None:
        point = loadgen_point(scenario, n, pool, sources)
        points.append(point)
        search.record(n, point.passed)
    return sorted(points, key=lambda p: p.n)


# -- dispatch overhead per frame --------------------------------------------------------------------------


def _streambench_point(
    n: int, seconds: float, pool: ServingPool, sources: SourceStreams, config: CapacityConfig
) -> CapacityPoint:
    """One point of N streams for ``seconds`` through ``pool``'s lane as the search runs one: its instances
    prepared, the schedule released and served by the load generator (cut short once it cannot pass), every
    stream forgotten after it, scored by the protocol."""
    schedule = arrival_schedule(
        n, sources.times_ns, round(seconds * 1e9), sources.period_ns, config.phase_seed
    )
    pool.request(0, b"P" + (n + 1).to_bytes(4, "little"))
    limit = max_passing_misses(schedule.num_frames, config.target_miss_rate, config.confidence)
    setup = PointSetup(
        schedule, assign_least_loaded(n, 1), sources.encoded, sources.num_classes,
        config.deadline_ns(sources.period_ns), 1, 0, config.policy, limit,
    )  # fmt: skip
    try:
        served = run_point(setup, pool.lanes, WallClock())
    finally:
        pool.request(0, b"Z")
    return score_point(schedule, served, sources.labels, config, None)


def _streambench_null(pool: ServingPool, sources: SourceStreams, n: int = 8) -> tuple[float, float]:
    """Median response (ms) of ``null`` frames, N = 8 streams for 4 s, through ``pool``'s lane, and the
    99th percentile of the dispatcher's release lag (ms): how late after its arrival a frame was released."""
    point = _streambench_point(n, 4.0, pool, sources, CapacityConfig(deadline_ms=1000.0))
    return float(point.response_p50_ms or 0.0), float(point.release_lag_p99_us or 0.0) / 1e3


def _loadgen_null(pool: ServingPool, sources: SourceStreams) -> tuple[float, float]:
    """Median latency (ms) of ``null`` single-sample queries through ``pool``'s lane: MultiStream (issued as
    the previous completes) and Server (8 streams' rate, Poisson, issued at their scheduled times)."""
    return loadgen_point("MultiStream", 1, pool, sources).p50_ms, loadgen_point(
        "Server", 8, pool, sources
    ).p50_ms


# -- the job ---------------------------------------------------------------------------------------------


def _pools(adapter: str, options: dict[str, object], sealed: bool) -> Any:
    streams = make_streams(DATA)
    warmup = [encode_frame(f) for f in make_warmup_stream(DATA, 100).frames()]
    config = CapacityConfig(deadline_ms=DEADLINE_MS, budget_s=900)
    bound = data_bound_of(streams[0])
    if sealed:
        run = RunConfig(adapter=adapter, adapter_options=options, data=DATA)
        return sealed_pool(run, config, bound, warmup)
    data_bound = {"classes": tuple(bound["classes"]), "input_dims": dict(bound["input_dims"])}
    pool, record = in_process_pool(lambda: create_adapter(adapter, options, data_bound), config, warmup)
    return contextlib.nullcontext((pool, record))


def _ours(label: str, score: CapacityScore, seconds: float) -> str:
    at = next((p for p in score.curve if p.streams == score.capacity), None)
    if at is None:
        return f"| {label} | streambench capacity | 0 | {list(score.interval)} | — | — | {seconds:.0f} s |"
    return (
        f"| {label} | streambench capacity | {score.capacity} | [{score.interval[0]}, {score.interval[1]}] | "
        f"{at.response_p50_ms:.2f} / {at.response_p99_ms:.2f} | miss bound {100 * at.miss_rate_bound:.2f} % "
        f"over {at.frames} frames ({at.misses} misses) | {seconds:.0f} s |"
    )


def _theirs(label: str, scenario: str, points: list[LoadGenPoint], seconds: float) -> str:
    passing = [p for p in points if p.passed]
    failing = [p for p in points if not p.passed]
    high = failing[0].n - 1 if failing else None
    if not passing:
        return f"| {label} | LoadGen {scenario} | 0 | [0, {high}] | — | — | {seconds:.0f} s |"
    best = passing[-1]
    if best.estimate_ms is not None:
        early = f"p99 estimate {best.estimate_ms:.2f} ms over {best.queries} queries (needed {best.needed})"
    else:
        early = f"{best.over_latency} of {best.queries} queries over 40 ms"
    return (
        f"| {label} | LoadGen {scenario} | {best.n} | [{best.n}, {high}] | {best.p50_ms:.2f} / "
        f"{best.p99_ms:.2f} | {early} | {seconds:.0f} s |"
    )


TABLE = "| SUT | harness | capacity | interval | p50 / p99 ms at capacity | early stopping | search |"


@pytest.mark.parametrize("label", list(SUTS))
def test_capacity_beside_loadgen(label: str) -> None:
    """The SUT's capacity at 40 ms by streambench's search, LoadGen's MultiStream and its Server scenario,
    one after the other on the same serving worker."""
    adapter, options = SUTS[label]
    sources = SourceStreams.of(make_streams(DATA))
    rows = []
    print(f"\n{label}: {_load()}, {time.strftime('%Y-%m-%d %H:%M')}")
    with _pools(adapter, options, sealed=True) as (pool, _):
        started = time.perf_counter()
        score = run_search(sources, CapacityConfig(deadline_ms=DEADLINE_MS, budget_s=900), pool, WallClock())
        rows.append(_ours(label, score, time.perf_counter() - started))
        print(rows[-1], _load(), flush=True)
        for p in score.curve:
            print(f"    streambench N={p.streams}: {p.verdict}, p50 {p.response_p50_ms} ms")
        for scenario in ("MultiStream", "Server"):
            started = time.perf_counter()
            points = loadgen_search(scenario, pool, sources)
            rows.append(_theirs(label, scenario, points, time.perf_counter() - started))
            print(rows[-1], _load(), flush=True)
            for point in points:
                print(f"    {scenario} N={point.n}: {point}")
    print(f"\n{TABLE}\n| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))


def _capacity_of(passed: dict[int, bool]) -> int:
    """The largest N below which every N measured passed (passing assumed monotone in N, as both do)."""
    capacity = 0
    for n in sorted(passed):
        if not passed[n]:
            break
        capacity = n
    return capacity


@pytest.mark.parametrize("label", ["busy-wait 7 ms", "sleep 7 ms"])
def test_point_by_point(label: str) -> None:
    """The 7 ms SUTs at N = 1 .. 7, each N measured by the three harness settings in turn (streambench's
    point as its search measures one, LoadGen MultiStream, LoadGen Server), twice: on a shared machine the
    SUT itself changes from minute to minute, and interleaving gives every harness the same minutes. A
    harness's capacity in a round is the largest N below which all passed."""
    adapter, options = SUTS[label]
    sources = SourceStreams.of(make_streams(DATA))
    config = CapacityConfig(deadline_ms=DEADLINE_MS)
    rows = []
    print(f"\n{label} point by point: {_load()}, {time.strftime('%Y-%m-%d %H:%M')}")
    with _pools(adapter, options, sealed=True) as (pool, _):
        for round_ in (1, 2):
            passed: dict[str, dict[int, bool]] = {"streambench": {}, "MultiStream": {}, "Server": {}}
            for n in range(1, 8):
                point = _streambench_point(n, point_duration_s(n, sources.fps, config), pool, sources, config)
                # latency alone, as LoadGen judges its points: F1 held needs the model's unloaded outputs,
                # which the search records and a point measured alone does not
                ok = passed["streambench"][n] = point.latency_pass
                line = [
                    f"N={n} streambench {'pass' if ok else 'fail'} ({point.misses} misses, p50 "
                    f"{point.response_p50_ms or 0:.2f}, p99 {point.response_p99_ms or 0:.2f})"
                ]
                for scenario in ("MultiStream", "Server"):
                    theirs = loadgen_point(scenario, n, pool, sources)
                    passed[scenario][n] = theirs.passed
                    line.append(
                        f"{scenario} {'pass' if theirs.passed else 'fail'} (p50 {theirs.p50_ms:.2f}, p99 "
                        f"{theirs.p99_ms:.2f}, estimate {theirs.estimate_ms}, over {theirs.over_latency})"
                    )
                print("    " + " · ".join(line), _load(), flush=True)
            rows.append(
                f"| {round_} | "
                + " | ".join(str(_capacity_of(passed[h])) for h in passed)
                + f" | {_load()} |"
            )
            print(rows[-1], flush=True)
    print("\n| round | streambench | LoadGen MultiStream | LoadGen Server | load |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(rows))


def test_dispatch_overhead_per_frame() -> None:
    """The median response to a ``null`` frame by each harness, through a sealed worker and in process."""
    sources = SourceStreams.of(make_streams(DATA))
    rows = []
    print(f"\n{_load()}, {time.strftime('%Y-%m-%d %H:%M')}")
    for sealed in (True, False):
        with _pools("null", {}, sealed=sealed) as (pool, _):
            (ours, lag), (multi, server) = _streambench_null(pool, sources), _loadgen_null(pool, sources)
            where = "sealed worker" if sealed else "in this process"
            rows.append(f"| {where} | {ours:.3f} (release lag p99 {lag:.3f}) | {multi:.3f} | {server:.3f} |")
            print(rows[-1], _load(), flush=True)
    print("\n| null SUT | streambench p50 ms | LoadGen MultiStream p50 ms | LoadGen Server p50 ms |")
    print("| --- | --- | --- | --- |")
    print("\n".join(rows))
