"""The capacity search as the harness runs it (issue 28): points of N live streams, each released, served
and timed by the load generator (harness/execution/load_generator.py), scored by the protocol
(protocols/capacity_score.py), the next N chosen by the protocol's search (protocols/capacity.py), all
within a wall-time budget.

Each point is planned long enough for LoadGen's early-stopping rule to pass with
``CapacityConfig.slack_misses`` misses; a point that missed too few frames to fail but was too short to
pass is measured again, longer (LoadGen's "run at least X more queries"), while the budget allows. A
point that would not fit in what is left of the budget is not started: the search ends with its bracket.
Workers persist across points (``Z`` forgets every stream between them; ``P`` builds instances before a
point, untimed).

Progress (issue 28, item 4: "the progress bar names the point being measured"): before each point the
hook gets its name, N and the search's phase (``N = 8 streams (step up)``, ``N = 6 streams (bisect 4..8)``);
during it, a hook that follows frames (:class:`~streambench.harness.execution.executor.StreamProgress`)
gets the frames that have arrived of the point's planned ones, at most every :data:`PROGRESS_EVERY_NS` of
the loop's clock, from the loop's wait (:class:`_ProgressClock`): nothing is added per frame, and per pass
of the loop one comparison (the clock is read about once a report, not once a pass).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from streambench.adapters.contract import Stream
from streambench.harness.execution.executor import StreamProgress
from streambench.harness.execution.host_timing import process_cpu_ns
from streambench.harness.execution.load_generator import (
    LEAD_NS,
    Lane,
    LoopClock,
    PointSetup,
    assign_least_loaded,
    run_point,
)
from streambench.harness.execution.sealed_feed import encode_frame
from streambench.protocols.capacity import (
    CapacityConfig,
    CapacitySearch,
    arrival_schedule,
    max_passing_misses,
    planned_frames,
    point_duration_s,
)
from streambench.protocols.capacity_score import CapacityPoint, CapacityScore, score_point

__all__ = ["PROGRESS_EVERY_NS", "ServingPool", "SourceStreams", "point_name", "run_search"]

PointProgress = Callable[[int, int, str], None]
"""(points done, points planned so far, what is being measured), before and after each point; a
:class:`~streambench.harness.execution.executor.StreamProgress` also gets ``frames(point name, frames
arrived, frames planned)`` during each point."""

PROGRESS_EVERY_NS = 100_000_000
"""Progress within a point is reported at most this often (0.1 s of the loop's clock)."""


@dataclass(frozen=True)
class SourceStreams:
    """The data-set streams the live streams play: their frames encoded once (as a sealed worker receives
    them), frame times relative to their start (ns), labels, and the frame period."""

    encoded: list[list[bytes]]
    times_ns: list[np.ndarray]
    labels: list[np.ndarray]
    num_classes: int
    period_ns: int

    @classmethod
    def of(cls, streams: Sequence[Stream]) -> SourceStreams:
        times = [np.round((s.frame_times - s.t0) * 1e9).astype(np.int64) for s in streams]
        period = int(np.median(np.concatenate([np.diff(np.concatenate(([0], t))) for t in times])))
        return cls(
            encoded=[[encode_frame(frame) for frame in s.frames()] for s in streams],
            times_ns=times,
            labels=[np.asarray(s.labels, dtype=bool) for s in streams],
            num_classes=len(streams[0].classes),
            period_ns=period,
        )

    @property
    def fps(self) -> float:
        return 1e9 / self.period_ns


@dataclass
class ServingPool:
    """The workers of a search and how to talk to them between points (``request``: a control message
    and its answer); ``pids``: their processes, for the CPU they use (empty: in this process)."""

    lanes: Sequence[Lane]
    request: Callable[[int, bytes], bytes]
    pids: list[int] = field(default_factory=list)


def _cpu_ns(pids: Sequence[int]) -> int | None:
    total = 0
    for pid in pids:
        used = process_cpu_ns(pid)
        if used is None:
            return None
        total += used
    return total


def point_name(n: int, search: CapacitySearch, again: bool = False) -> str:
    """What the progress display calls the next point: its N and the search's phase, e.g. ``N = 8
    streams (step up)``, ``N = 12 streams (bisect 8..16)``; ``again``: measured again, longer."""
    if search.fixed is not None:
        phase = "one stream first" if n == 1 and n != search.fixed else "fixed N"
    elif search.high is None:
        phase = "step up"
    else:
        phase = f"bisect {search.low}..{search.high}"
    return f"N = {n} stream{'' if n == 1 else 's'} ({phase}{', again, longer' if again else ''})"


class _ProgressClock:
    """The loop's clock, reporting the frames that have arrived of the point's ``arrival_ns`` (sorted, ns
    from the point's start) to ``report`` at most every :data:`PROGRESS_EVERY_NS`. Only ``wait`` is
    wrapped (once per pass of the loop, not per frame): ``now`` is the clock's own bound method. A pass
    costs one comparison: the clock is read only after a wait the next report cut short, one whose limit
    (the next arrival, a batcher's due time, a timeout, or none) lay beyond the report's time. Once that
    time has passed every limit the loop sets lies beyond it (whatever has arrived is released first), so
    the report comes within a pass of its time; before it, only the passes between the last arrival before
    it and it read the clock. A wait never outlasts the next report, so the display moves while a worker
    is busy or nothing arrives."""

    def __init__(self, clock: LoopClock, arrival_ns: np.ndarray, report: Callable[[int, int], None]) -> None:
        self.now = clock.now  # the loop binds it: no extra call per frame
        self._wait = clock.wait
        self._arrival = arrival_ns
        self._report = report
        self._base = clock.now() + LEAD_NS  # where the loop's point starts, to within its set-up
        self._next = self._base - LEAD_NS + PROGRESS_EVERY_NS

    def wait(self, busy: Sequence[Lane], until: int | None) -> list[Lane]:
        due = self._next
        if until is not None and until <= due:  # the report is not due before the loop's next event
            return self._wait(busy, until)
        ready = self._wait(busy, due)
        now = self.now()
        if now >= due:
            self._next = now + PROGRESS_EVERY_NS
            arrived = int(np.searchsorted(self._arrival, now - self._base, side="right"))
            self._report(arrived, len(self._arrival))
        return ready


def _measure(
    n: int,
    duration_s: float,
    sources: SourceStreams,
    config: CapacityConfig,
    pool: ServingPool,
    clock: LoopClock,
    one_stream_f1: float | None,
    frames: Callable[[int, int], None] | None = None,
) -> CapacityPoint:
    schedule = arrival_schedule(
        n, sources.times_ns, round(duration_s * 1e9), sources.period_ns, config.phase_seed
    )
    lanes = len(pool.lanes)
    lane_of = assign_least_loaded(n, lanes)
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
    )
    cpu_before, workers_before, wall_before = (
        time.process_time_ns(),
        _cpu_ns(pool.pids),
        time.perf_counter_ns(),
    )
    if frames is not None:  # after the workers' set-up: the point starts now
        clock = _ProgressClock(clock, schedule.arrival_ns, frames)
    try:
        served = run_point(setup, pool.lanes, clock)
    finally:
        for k in range(lanes):
            pool.request(k, b"Z")
    wall = max(time.perf_counter_ns() - wall_before, 1)
    workers_after = _cpu_ns(pool.pids)
    point = score_point(schedule, served, sources.labels, config, one_stream_f1)
    point.harness_cpu_share = (time.process_time_ns() - cpu_before) / wall
    if workers_before is not None and workers_after is not None and pool.pids:
        point.workers_cpu_share = (workers_after - workers_before) / wall
    return point


def run_search(
    sources: SourceStreams,
    config: CapacityConfig,
    pool: ServingPool,
    clock: LoopClock,
    progress: PointProgress | None = None,
) -> CapacityScore:
    """Search the capacity (module docstring); the points' wall time counts against ``config.budget_s``
    on ``clock``."""
    search = CapacitySearch(config.max_streams, config.growth, fixed=config.streams)
    follows = progress if isinstance(progress, StreamProgress) else None
    started = clock.now()
    curve: list[CapacityPoint] = []
    out_of_budget = False
    one_stream_f1: float | None = None
    while (n := search.next_streams()) is not None:
        duration = point_duration_s(n, sources.fps, config)
        left_s = config.budget_s - (clock.now() - started) / 1e9
        if duration * 1.1 + 0.5 > left_s:
            out_of_budget = True
            break
        name = point_name(n, search)
        if progress is not None:
            progress(len(curve), len(curve) + 1, name)
        point = _measure(n, duration, sources, config, pool, clock, one_stream_f1, _frames_of(follows, name))
        while _undecided(point, config):
            longer = (point.frames + point.frames_needed) * 1.1 / (n * sources.fps)
            left_s = config.budget_s - (clock.now() - started) / 1e9
            if longer > config.max_point_s or longer * 1.1 + 0.5 > left_s:
                break
            name = point_name(n, search, again=True)
            if progress is not None:
                progress(len(curve), len(curve) + 1, name)
            frames = _frames_of(follows, name)
            point = _measure(n, longer, sources, config, pool, clock, one_stream_f1, frames)
        if n == 1:
            one_stream_f1 = point.f1
        curve.append(point)
        search.record(n, point.passed)
        if progress is not None:
            progress(len(curve), len(curve), f"{name}: {'passes' if point.passed else 'fails'}")
    low, high = search.interval()
    notes = _notes(len(pool.lanes), bool(pool.pids), config)
    if out_of_budget:
        notes.append(f"the budget ({config.budget_s:g} s) ended the search: the capacity lies in the bracket")
    return CapacityScore(
        deadline_ms=config.deadline_ns(sources.period_ns) / 1e6,
        capacity=low,
        interval=(low, high),
        status=search.status(out_of_budget),
        planned_frames=planned_frames(config),
        one_stream_f1=one_stream_f1,
        curve=sorted(curve, key=lambda p: p.streams),
        notes=notes,
    )


def _frames_of(follows: StreamProgress | None, name: str) -> Callable[[int, int], None] | None:
    """``(frames arrived, frames planned)`` of the point called ``name``, for a hook that follows frames."""
    if follows is None:
        return None
    hook = follows
    return lambda done, total: hook.frames(name, done, total)


def _undecided(point: CapacityPoint, config: CapacityConfig) -> bool:
    """Too few frames to pass, too few misses to fail: LoadGen would run more."""
    return (
        not point.latency_pass
        and point.aborted is None
        and point.keeps_up
        and point.frames_needed > 0
        and point.miss_rate <= config.target_miss_rate
    )


def _notes(lanes: int, separate: bool, config: CapacityConfig) -> list[str]:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
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
