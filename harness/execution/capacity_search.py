"""The capacity search as the harness runs it: points of N live streams, each released, served
and timed by the load generator (harness/execution/load_generator.py), scored by the protocol
(protocols/capacity_score.py), the next N chosen by the protocol's search (protocols/capacity.py), all
within a wall-time budget.

Each point is planned long enough for LoadGen's early-stopping rule to pass with
``CapacityConfig.slack_misses`` misses; a point that missed too few frames to fail but was too short to
pass is measured again, longer (LoadGen's "run at least X more queries"), while the budget allows. A
point that would not fit in what is left of the budget is not started: the search ends with its bracket.
Workers persist across points (``Z`` forgets every stream between them; ``P`` builds instances before a
point, untimed).

Each point plays fresh sources where the data set makes them (a new stream for every session, so a cache
shared across sessions finds nothing twice), else the data set's streams replayed (the score says so).
After it, a sample of its sessions is replayed unloaded by the reference worker, the reference "F1 held"
is judged against (harness/execution/capacity_replay.py), and the machine's load during it is read
(other processes' CPU from ``/proc/stat``; the selftest's busy-wait probe before and after the search;
protocols/capacity_load.py judges what bounded the figure). A point that failed on time through one stall
(every miss within ``stall_window_s``, on time for as long after) is measured again, at most
``remeasures`` times, each attempt kept. An adapter failure ends the search; the points decided before it
are kept, and ``on_point`` gets the score after every decided point (the caller writes it). Progress:
harness/execution/capacity_progress.py.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from streambench.adapters.contract import Stream
from streambench.harness.execution.capacity_progress import (
    PROGRESS_EVERY_NS,
    PointProgress,
    ProgressClock,
    frames_of,
    point_name,
)
from streambench.harness.execution.capacity_replay import (
    ReferenceLane,
    SearchFailure,
    describe_failure,
    replay_unloaded,
)
from streambench.harness.execution.executor import StreamProgress
from streambench.harness.execution.host_timing import process_cpu_ns
from streambench.harness.execution.load_generator import (
    Lane,
    LoopClock,
    PointSetup,
    ServingTimeout,
    assign_least_loaded,
    run_point,
)
from streambench.harness.execution.sealed_feed import encode_frame
from streambench.harness.execution.selftest_checks import judge_busy_wait
from streambench.harness.execution.serving_worker import ServingError
from streambench.harness.instruments.interference import busy_wait_probe, system_busy_ns
from streambench.protocols.capacity import (
    CapacityConfig,
    CapacitySearch,
    arrival_schedule,
    max_passing_misses,
    planned_frames,
    point_duration_s,
)
from streambench.protocols.capacity_load import judge_bound
from streambench.protocols.capacity_score import CapacityFailure, CapacityPoint, CapacityScore, score_point

__all__ = ["PROGRESS_EVERY_NS", "FreshSources", "ServingPool", "SourceStreams", "point_name", "run_search"]


@dataclass(frozen=True)
class SourceStreams:
    """The data-set streams the live streams play: their frames encoded once (as a sealed worker receives
    them), frame times relative to their start (ns), labels, the frame period, and their ids."""

    encoded: list[list[bytes]]
    times_ns: list[np.ndarray]
    labels: list[np.ndarray]
    num_classes: int
    period_ns: int
    ids: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, streams: Sequence[Stream], within_ns: int | None = None) -> SourceStreams:
        """``streams`` encoded; ``within_ns``: only their frames that arrive before then (ns from their
        start: those a point of that length can release)."""
        times = [np.round((s.frame_times - s.t0) * 1e9).astype(np.int64) for s in streams]
        period = int(np.median(np.concatenate([np.diff(np.concatenate(([0], t))) for t in times])))
        kept = [len(t) if within_ns is None else int(np.searchsorted(t, within_ns)) for t in times]
        return cls(
            encoded=[
                [encode_frame(frame) for frame in itertools.islice(s.frames(), n)]
                for s, n in zip(streams, kept, strict=True)
            ],
            times_ns=times,
            labels=[np.asarray(s.labels, dtype=bool) for s in streams],
            num_classes=len(streams[0].classes),
            period_ns=period,
            ids=[s.stream_id for s in streams],
        )

    @property
    def fps(self) -> float:
        return 1e9 / self.period_ns


FreshSources = Callable[[int, float, int], SourceStreams]
"""``(live streams, point duration s, salt)`` -> new streams enough for every session of the point to play
one of its own (capacity_search's callers build them from the data set's generator, a secret seed)."""


@dataclass
class ServingPool:
    """The workers of a search and how to talk to them between points (``request``: a control message
    and its answer); ``pids``: their processes, for the CPU they use (empty: in this process);
    ``reference``: the worker that replays sessions unloaded (None: no unloaded reference);
    ``timeout_s``: the frame timeout (a batch, or a replayed frame, not answered by then fails)."""

    lanes: Sequence[Lane]
    request: Callable[[int, bytes], bytes]
    pids: list[int] = field(default_factory=list)
    reference: ReferenceLane | None = None
    timeout_s: float = 30.0
    broken: bool = False
    """An adapter failure ended the search: its workers are ended at once, not asked to stop."""


def _cpu_ns(pids: Sequence[int]) -> int | None:
    total = 0
    for pid in pids:
        used = process_cpu_ns(pid)
        if used is None:
            return None
        total += used
    return total


@dataclass
class _Search:
    """What every point of one search shares."""

    sources: SourceStreams
    config: CapacityConfig
    pool: ServingPool
    clock: LoopClock
    fresh: FreshSources | None
    one_stream_f1: float | None = None
    salt: int = 0


def _measure(
    n: int, duration_s: float, run: _Search, frames: Callable[[int, int], None] | None = None
) -> CapacityPoint:
    """One point of ``n`` streams for ``duration_s``: its sources (fresh ones when the data set makes
    them), the loaded run, the unloaded replay of a sample of its sessions, its score and the machine's
    load during it. A failure of the adapter raises :class:`SearchFailure`."""
    config, pool = run.config, run.pool
    run.salt += 1
    sources = run.fresh(n, duration_s, run.salt) if run.fresh is not None else run.sources
    schedule = arrival_schedule(
        n,
        sources.times_ns,
        round(duration_s * 1e9),
        sources.period_ns,
        config.phase_seed,
        run.fresh is not None,
    )
    lanes = len(pool.lanes)
    lane_of = assign_least_loaded(n, lanes)
    phase = "between points"
    try:
        for k in range(lanes):  # instances for every stream the worker holds, and one to change sessions
            pool.request(k, b"P" + int(np.count_nonzero(lane_of == k) + 1).to_bytes(4, "little"))
        setup = PointSetup(
            schedule=schedule,
            lane_of_channel=lane_of,
            encoded=sources.encoded,
            num_classes=sources.num_classes,
            deadline_ns=config.deadline_ns(sources.period_ns),
            max_batch=config.lane_batch(),
            max_wait_ns=config.max_wait_us * 1000,
            policy=config.policy,
            max_misses=max_passing_misses(schedule.num_frames, config.target_miss_rate, config.confidence),
            timeout_ns=round(pool.timeout_s * 1e9),
            stall_ns=round(config.stall_window_s * 1e9) if config.remeasures else 0,
        )
        machine_before = system_busy_ns()
        cpu_before, workers_before, wall_before = (
            time.process_time_ns(),
            _cpu_ns(pool.pids),
            time.perf_counter_ns(),
        )
        clock = ProgressClock(run.clock, schedule.arrival_ns, frames) if frames is not None else run.clock
        phase = "point"
        served = run_point(setup, pool.lanes, clock)
        wall = max(time.perf_counter_ns() - wall_before, 1)
        harness_cpu = time.process_time_ns() - cpu_before
        workers_after, machine_after = _cpu_ns(pool.pids), system_busy_ns()
        phase = "between points"
        for k in range(lanes):
            pool.request(k, b"Z")
        unloaded = None
        if pool.reference is not None and served.aborted is None and config.f1_reference == "unloaded":
            phase = "unloaded replay"
            unloaded = replay_unloaded(
                schedule,
                sources.encoded,
                pool.reference,
                config.reference_frames,
                pool.timeout_s,
                sources.num_classes,
            )
            pool.reference.request(b"Z")
    except (ServingError, ServingTimeout) as exc:
        raise SearchFailure(describe_failure(exc, n, phase, schedule, sources.ids)) from None
    point = score_point(schedule, served, sources.labels, config, run.one_stream_f1, unloaded)
    point.harness_cpu_share = harness_cpu / wall
    workers = None
    if workers_before is not None and workers_after is not None and pool.pids:
        workers = workers_after - workers_before
        point.workers_cpu_share = workers / wall
    if machine_before is not None and machine_after is not None:
        own = harness_cpu + (workers or 0)
        point.others_cpu = max(machine_after - machine_before - own, 0) / wall
    point.load_average = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return point


def _probe(when: str) -> str:
    """The selftest's busy-wait judgement of the machine now (1 ms, 40 frames)."""
    figures = judge_busy_wait(1000.0, busy_wait_probe(1000.0, 40), 0.02)
    return f"{when}: {figures.verdict}"


def run_search(
    sources: SourceStreams,
    config: CapacityConfig,
    pool: ServingPool,
    clock: LoopClock,
    progress: PointProgress | None = None,
    fresh: FreshSources | None = None,
    on_point: Callable[[CapacityScore], object] | None = None,
) -> CapacityScore:
    """Search the capacity (module docstring); the points' wall time counts against ``config.budget_s``
    on ``clock``. ``fresh``: new sources for each point (else ``sources`` are replayed); ``on_point``: the
    score so far after each decided point (the caller writes it). An adapter failure ends the search: the
    score keeps the points decided and the failure."""
    search = CapacitySearch(config.max_streams, config.growth, fixed=config.streams)
    follows = progress if isinstance(progress, StreamProgress) else None
    run = _Search(sources, config, pool, clock, fresh)
    probes = [_probe("before the search")]
    started = clock.now()
    curve: list[CapacityPoint] = []
    out_of_budget = False
    failure: CapacityFailure | None = None

    def fits(seconds: float) -> bool:
        return seconds * 1.1 + 0.5 <= config.budget_s - (clock.now() - started) / 1e9

    def measure(n: int, seconds: float, name: str) -> CapacityPoint:
        if progress is not None:
            progress(len(curve), len(curve) + 1, name)
        return _measure(n, seconds, run, frames_of(follows, name))

    while (n := search.next_streams()) is not None:
        duration = point_duration_s(n, sources.fps, config)
        if not fits(duration):
            out_of_budget = True
            break
        name = point_name(n, search)
        try:
            point = measure(n, duration, name)
            while _undecided(point, config):
                longer = (point.frames + point.frames_needed) * 1.1 / (n * sources.fps)
                if longer > config.max_point_s or not fits(longer):
                    break
                name = point_name(n, search, again=True)
                point = measure(n, longer, name)
            earlier: list[str] = []
            while _one_stall(point, config) and len(earlier) < config.remeasures and fits(point.duration_s):
                earlier.append(f"attempt {len(earlier) + 1}: {point.verdict}")
                name = point_name(n, search, again=True).replace("again, longer", "again: one stall")
                point = measure(n, point.duration_s, name)
            point.attempts = earlier
        except SearchFailure as exc:
            failure, pool.broken = exc.record, True
            break
        if n == 1:
            run.one_stream_f1 = point.f1
        curve.append(point)
        search.record(n, point.passed)
        if progress is not None:
            progress(len(curve), len(curve), f"{name}: {'passes' if point.passed else 'fails'}")
        if on_point is not None:
            on_point(_score(search, curve, config, sources, pool, run, out_of_budget, None, probes, False))
    probes.append(_probe("after the search"))
    return _score(search, curve, config, sources, pool, run, out_of_budget, failure, probes, True)


def _score(
    search: CapacitySearch,
    curve: list[CapacityPoint],
    config: CapacityConfig,
    sources: SourceStreams,
    pool: ServingPool,
    run: _Search,
    out_of_budget: bool,
    failure: CapacityFailure | None,
    probes: list[str],
    ended: bool,
) -> CapacityScore:
    """The score of the points decided so far (``ended``: the search is over)."""
    low, high = search.interval()
    notes = _notes(len(pool.lanes), bool(pool.pids), config)
    if out_of_budget:
        notes.append(f"the budget ({config.budget_s:g} s) ended the search: the capacity lies in the bracket")
    if failure is not None:
        notes.append(
            f"the adapter failed at {failure.where()}: the search ended there (capacity.json's failure)"
        )
    if run.fresh is None:
        notes.append(
            f"sources replayed: the data set's {len(sources.encoded)} streams are played again across live "
            "sessions, so a model that caches answers by content across sessions could gain"
        )
    remeasured = sum(len(p.attempts) for p in curve)
    if remeasured:
        notes.append(f"{remeasured} point(s) failed by one stall were measured again (each point's attempts)")
    deadline_ms = config.deadline_ns(sources.period_ns) / 1e6
    bound = judge_bound(curve, len(pool.lanes), _cores(), probes, deadline_ms) if ended else None
    if bound is not None and bound.bound_by == "machine load" and bound.reason:
        notes.append(f"load-bound: {bound.reason}")
    return CapacityScore(
        deadline_ms=config.deadline_ns(sources.period_ns) / 1e6,
        capacity=low,
        interval=(low, high),
        status=search.status(out_of_budget, failed=failure is not None) if ended else "searching",
        planned_frames=planned_frames(config),
        one_stream_f1=run.one_stream_f1,
        curve=sorted(curve, key=lambda p: p.streams),
        notes=notes,
        failure=failure,
        sources="fresh" if run.fresh is not None else "replayed",
        f1_reference=config.f1_reference
        if pool.reference is not None or config.f1_reference != "unloaded"
        else "none",
        interference=bound,
    )


def _undecided(point: CapacityPoint, config: CapacityConfig) -> bool:
    """Too few frames to pass, too few misses to fail: LoadGen would run more."""
    return (
        not point.latency_pass
        and point.aborted is None
        and point.keeps_up
        and point.frames_needed > 0
        and point.miss_rate <= config.target_miss_rate
    )


def _one_stall(point: CapacityPoint, config: CapacityConfig) -> bool:
    """Failed on time with every miss within ``stall_window_s`` and the point on time for at least as long
    after them: one stall, not a model that cannot keep up (which misses all along, and is cut short),
    measured again (at most ``remeasures`` times)."""
    span, after, window = point.miss_span_s, point.recovered_s, config.stall_window_s
    stalled = span is not None and after is not None and span <= window <= after and point.aborted is None
    return not point.latency_pass and not point.outputs_changed and stalled


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _notes(lanes: int, separate: bool, config: CapacityConfig) -> list[str]:
    cores = _cores()
    notes = [
        "the search assumes passing is monotone in N (as LoadGen's); miss counts assume independent frames"
    ]
    if separate and cores < lanes + 1:
        notes.append(
            f"CPU-bound by the harness: {lanes} worker(s) and the load generator share {cores} core(s); "
            "the figure is the machine's with the harness on it, not the model's alone"
        )
    if not separate:
        notes.append(
            "served in the load generator's own process: its figures are the dispatcher's, not a model's"
        )
    return notes
