"""The capacity protocol's plan: how many live streams one machine serves at deadline.

Pure: no I/O, no clock, no model. The harness (harness/execution/load_generator.py) releases the frames
this module schedules, serves them and records when each was served; protocols/capacity_score.py scores
what it recorded. Definitions followed:

- **Early stopping** (MLPerf LoadGen, ``loadgen/early_stopping.cc`` and the inference rules' appendix
  "Early Stopping Criterion"): with ``t`` frames over their deadline, the smallest number ``h`` of frames
  on time such that a system whose on-time rate is only ``p - d`` would show ``t`` or fewer misses among
  ``h + t`` frames with probability below ``1 - c``: ``I_{p-d}(h, t + 1) < 1 - c`` (the binomial CDF as a
  regularised incomplete beta). A point passes when ``n >= h + t`` frames were measured (LoadGen's
  Server rule); LoadGen's own ``d = 0``, ``c = 0.99``. Equivalently the one-sided Clopper-Pearson upper
  bound of the miss rate at confidence ``c`` is at most ``1 - p`` (:func:`miss_rate_upper_bound`).
- **Arrivals** (LoadGen MultiStream with one stream per channel, Triton perf_analyzer's concurrency): N
  live streams, each releasing its frames at its own frame times with a seeded random phase in
  ``[0, T)``; a live stream plays data-set streams back to back (each one *session*, a fresh state).
- **Search** (LoadGen's peak-performance search, perf_analyzer ``--binary-search``): exponential steps in
  N until a point fails, then bisection of the bracket; where the budget ends first, the bracket is the
  answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.protocols.metrics.checks import IntArray
from streambench.protocols.pacing import PacingPolicy

__all__ = [
    "NAME",
    "ArrivalSchedule",
    "CapacityConfig",
    "CapacitySearch",
    "Serving",
    "arrival_schedule",
    "early_stopping_passes",
    "frames_still_needed",
    "max_passing_misses",
    "min_passing_frames",
    "miss_rate_upper_bound",
    "overlatency_odds",
    "planned_frames",
    "point_duration_s",
]

NAME = "capacity"
Serving = Literal["replicas", "batched"]
F1Reference = Literal["unloaded", "same_units", "one_stream"]


class CapacityConfig(BaseModel):
    """What the capacity protocol measures and how the system under test serves (docs/capacity.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    deadline_ms: float | None = Field(
        None, gt=0, description="a frame is late when answered after this; None: one frame period"
    )
    target_miss_rate: float = Field(0.01, gt=0, lt=1, description="largest deadline-miss rate allowed")
    confidence: float = Field(0.99, gt=0, lt=1, description="of the miss-rate bound (LoadGen: 0.99)")
    f1_tolerance: float = Field(0.01, ge=0, le=1, description="F1@deadline may fall this much (1 point)")
    f1_reference: F1Reference = Field(
        "unloaded",
        description="unloaded: the model's own output on the same frames served unloaded (a replay of a "
        "sample of the point's sessions by a worker that serves nothing else); same_units: the point's own "
        "outputs on the algorithmic clock; one_stream: the F1@deadline measured with one stream (neither "
        "of the last two sees a model that answers differently when behind)",
    )
    reference_frames: int = Field(
        1000, ge=1, description="frames of the point's sessions replayed unloaded (whole sessions, at random)"
    )
    remeasures: int = Field(
        2,
        ge=0,
        description="times a point that failed on one stall (misses within stall_window_s) is re-measured",
    )
    stall_window_s: float = Field(1.0, gt=0, description="misses within this span are one stall")
    decision_threshold: float = Field(0.5, description="a class is predicted when its score >= this")
    exclude_classes: tuple[str, ...] = Field((), description="classes left out of F1 (as online's)")
    binary_f1: Literal["positive", "all_classes"] = Field(
        "positive",
        description="where the data names a background: F1 of the other classes, or of every class (the "
        "online protocol's rule, protocols/online.py)",
    )
    classes: tuple[str, ...] | None = Field(
        None, description="data-bound: the data's class names, filled by the run (None: every class counts)"
    )
    background_class: str | None = Field(
        None, description="data-bound: the data's 'no event' class, filled by the run (None: one so named)"
    )
    budget_s: float = Field(300.0, gt=0, description="wall time of the whole search")
    min_point_s: float = Field(2.0, gt=0, description="shortest measurement of one N")
    max_point_s: float = Field(120.0, gt=0, description="longest measurement of one N")
    slack_misses: int = Field(
        1, ge=0, description="a point is planned long enough to pass with this many misses"
    )
    max_streams: int = Field(4096, ge=1, description="the search stops here (capacity: at least this)")
    growth: float = Field(2.0, gt=1, description="factor of the exponential steps")
    streams: int | None = Field(None, ge=1, description="measure this N only (and N = 1), no search")
    serving: Serving = Field("replicas", description="replicas: K workers; batched: one batching worker")
    replicas: int = Field(1, ge=1, description="workers (replicas mode)")
    max_batch: int = Field(8, ge=1, description="largest batch (batched mode; Triton max_batch_size)")
    max_wait_us: int = Field(
        0, ge=0, description="how long a frame may wait for others to join its batch (Triton µs)"
    )
    policy: PacingPolicy = Field("queue", description="a late worker queues, or drops to the newest frame")
    phase_seed: int = Field(0, ge=0, description="seed of the streams' phases and data-set streams")

    def deadline_ns(self, period_ns: int) -> int:
        """The deadline in ns: ``deadline_ms``, else one frame period."""
        return period_ns if self.deadline_ms is None else round(self.deadline_ms * 1e6)

    def lanes(self) -> int:
        """Serving workers: K replicas, or the one batching worker."""
        return self.replicas if self.serving == "replicas" else 1

    def lane_batch(self) -> int:
        """The batch size of one worker: 1 for a replica."""
        return 1 if self.serving == "replicas" else self.max_batch


# -- early stopping (MLPerf LoadGen) ------------------------------------------------------------------


def overlatency_odds(h: int, t: int, p: float, d: float = 0.0) -> float:
    """LoadGen's ``odds(h, t, p, d)``: the probability that a system on time with rate ``p - d`` shows at
    most ``t`` late frames among ``h + t``, ``sum_{k<=t} C(h+t, k) q^k (1-q)^(h+t-k)`` with ``q = 1 - p + d``
    (= ``BetaRegularized[p - d, h, 1 + t]``), summed in log space."""
    n, q = h + t, 1.0 - (p - d)
    if h <= 0:
        return 1.0
    k = np.arange(1, t + 1, dtype=np.float64)
    log_choose = np.concatenate(([0.0], np.cumsum(np.log(n - k + 1) - np.log(k))))
    terms = log_choose + np.arange(t + 1) * math.log(q) + (n - np.arange(t + 1)) * math.log1p(-q)
    top = float(terms.max())
    return float(min(1.0, math.exp(top) * float(np.exp(terms - top).sum())))


def min_passing_frames(t: int, p: float, c: float, d: float = 0.0) -> int:
    """LoadGen's ``MinPassingQueriesFinder(t, p, d, c)``: the smallest ``h`` with ``odds(h, t, p, d) < 1 - c``
    (strictly, as its binary search), found by doubling then bisection (odds fall as ``h`` grows)."""
    if not (0 < p - d < 1 and 0 < c < 1 and t >= 0):
        raise ValueError(
            f"early stopping needs 0 < p - d < 1, 0 < c < 1 and t >= 0; got p={p}, d={d}, c={c}, t={t}"
        )
    low, high = 0, 1
    while overlatency_odds(high, t, p, d) >= 1 - c:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if overlatency_odds(middle, t, p, d) < 1 - c:
            high = middle
        else:
            low = middle
    return high


def early_stopping_passes(frames: int, misses: int, target_miss_rate: float, confidence: float) -> bool:
    """LoadGen's Server verdict: ``frames >= h + t`` for ``t = misses``, ``p = 1 - target_miss_rate``."""
    return frames >= min_passing_frames(misses, 1.0 - target_miss_rate, confidence) + misses


def frames_still_needed(frames: int, misses: int, target_miss_rate: float, confidence: float) -> int:
    """LoadGen's recommendation: frames to add, every one on time, for the point to pass (0 if it does)."""
    needed = min_passing_frames(misses, 1.0 - target_miss_rate, confidence) + misses
    return max(needed - frames, 0)


def miss_rate_upper_bound(frames: int, misses: int, confidence: float) -> float:
    """One-sided upper confidence bound of the miss rate: the rate ``u`` at which ``misses`` or fewer of
    ``frames`` has probability ``1 - confidence`` (Clopper-Pearson; the bound LoadGen's rule compares
    with ``1 - p``). Bisection to 1e-9."""
    if frames <= 0:
        return 1.0
    if misses >= frames:
        return 1.0
    low, high = misses / frames, 1.0
    for _ in range(60):
        middle = (low + high) / 2
        if overlatency_odds(frames - misses, misses, 1.0 - middle) > 1 - confidence:
            low = middle
        else:
            high = middle
    return high


def max_passing_misses(frames: int, target_miss_rate: float, confidence: float) -> int:
    """The most misses ``frames`` frames may hold and still pass LoadGen's rule (-1: none can pass): a
    point past it is lost whatever comes, so the load generator cuts it short."""
    low, high = -1, frames  # passes with `low` misses (vacuously for -1); fails with `high`
    if early_stopping_passes(frames, frames, target_miss_rate, confidence):
        return frames
    while high - low > 1:
        middle = (low + high) // 2
        if early_stopping_passes(frames, middle, target_miss_rate, confidence):
            low = middle
        else:
            high = middle
    return low


def planned_frames(config: CapacityConfig) -> int:
    """Frames a point needs to pass with ``slack_misses`` misses (LoadGen's SingleStream floor with one:
    662 at 1 % and 99 %)."""
    t = config.slack_misses
    return min_passing_frames(t, 1.0 - config.target_miss_rate, config.confidence) + t


# -- the arrival schedule -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ArrivalSchedule:
    """Every frame one point releases, in release order (arrays ``[F]``; times in ns from the point's
    start). A *session* is one data-set stream played on one live stream (a fresh state); sessions are
    numbered per point (arrays ``[S]``)."""

    arrival_ns: IntArray
    channel: IntArray
    session: IntArray
    frame: IntArray
    session_channel: IntArray
    session_source: IntArray
    session_frames: IntArray
    phase_ns: IntArray
    duration_ns: int
    num_streams: int
    period_ns: int
    first_of_session: np.ndarray = field(repr=False)
    last_of_session: np.ndarray = field(repr=False)

    @property
    def num_frames(self) -> int:
        return int(self.arrival_ns.size)

    @property
    def num_sessions(self) -> int:
        return int(self.session_channel.size)


def arrival_schedule(
    num_streams: int,
    source_times_ns: Sequence[IntArray],
    duration_ns: int,
    period_ns: int,
    seed: int,
    fresh: bool = False,
) -> ArrivalSchedule:
    """N live streams for ``duration_ns``: stream ``c`` starts at a phase ``U[0, period_ns)`` drawn from
    ``seed`` and plays data-set streams drawn (with replacement, from the same seed) back to back: each
    source ``s`` lasts ``source_times_ns[s][-1]`` (its frame times relative to its ``t0``), its frames
    arriving at the session's start plus their times. Frames arriving at or after ``duration_ns`` are not
    released (the last session of a stream is cut there). Ties in arrival keep stream order. ``fresh``:
    every session plays a source of its own, the next one in order (no source is played twice); a
    ValueError says when there are too few."""
    if num_streams < 1:
        raise ValueError(f"num_streams must be >= 1, got {num_streams}")
    if duration_ns <= 0 or period_ns <= 0:
        raise ValueError(f"duration_ns and period_ns must be > 0 (got {duration_ns}, {period_ns})")
    if not source_times_ns:
        raise ValueError("source_times_ns is empty: a live stream needs data-set streams to play")
    rng = np.random.default_rng([seed, num_streams])
    phase = rng.integers(0, period_ns, size=num_streams, dtype=np.int64)
    spans = np.array([int(times[-1]) for times in source_times_ns], dtype=np.int64)
    if np.any(spans <= 0):
        raise ValueError("every source stream must last longer than 0 ns")
    arrivals, channels, sessions, frames = [], [], [], []
    session_channel: list[int] = []
    session_source: list[int] = []
    session_frames: list[int] = []
    for c in range(num_streams):
        start = int(phase[c])
        while start < duration_ns:
            source = len(session_source) if fresh else int(rng.integers(0, len(source_times_ns)))
            if source >= len(source_times_ns):
                raise ValueError(f"{len(source_times_ns)} fresh sources are too few for the sessions planned")
            times = start + np.asarray(source_times_ns[source], dtype=np.int64)
            kept = int(np.searchsorted(times, duration_ns, side="left"))
            if kept == 0:
                break
            arrivals.append(times[:kept])
            channels.append(np.full(kept, c, dtype=np.int64))
            sessions.append(np.full(kept, len(session_channel), dtype=np.int64))
            frames.append(np.arange(kept, dtype=np.int64))
            session_channel.append(c)
            session_source.append(source)
            session_frames.append(kept)
            start += int(spans[source])
    arrival = np.concatenate(arrivals)
    order = np.argsort(arrival, kind="stable")
    frame = np.concatenate(frames)[order]
    session = np.concatenate(sessions)[order]
    counts = np.array(session_frames, dtype=np.int64)
    return ArrivalSchedule(
        arrival_ns=arrival[order],
        channel=np.concatenate(channels)[order],
        session=session,
        frame=frame,
        session_channel=np.array(session_channel, dtype=np.int64),
        session_source=np.array(session_source, dtype=np.int64),
        session_frames=counts,
        phase_ns=phase,
        duration_ns=int(duration_ns),
        num_streams=num_streams,
        period_ns=int(period_ns),
        first_of_session=frame == 0,
        last_of_session=frame == counts[session] - 1,
    )


def point_duration_s(num_streams: int, fps: float, config: CapacityConfig) -> float:
    """How long to measure N streams: long enough for :func:`planned_frames` whatever the phases (each
    stream loses at most one frame to its phase), within the point limits."""
    wanted = (math.ceil(planned_frames(config) / num_streams) + 1) / fps
    return float(min(max(wanted, config.min_point_s), config.max_point_s))


# -- the search -----------------------------------------------------------------------------------------

SearchStatus = Literal["searching", "found", "at_least", "budget", "fixed", "failed"]


@dataclass
class CapacitySearch:
    """Exponential steps in N (1, then x ``growth``) until a point fails, then bisection between the largest
    passing N (``low``) and the smallest failing one (``high``). ``fixed``: measure N = 1 and that N only.
    The search assumes that passing is monotone in N, as LoadGen's does."""

    max_streams: int
    growth: float = 2.0
    fixed: int | None = None
    low: int = 0
    high: int | None = None
    measured: dict[int, bool] = field(default_factory=dict)

    def next_streams(self) -> int | None:
        """The next N to measure, or None when the search is over."""
        if self.fixed is not None:
            todo = [n for n in dict.fromkeys((1, self.fixed)) if n not in self.measured]
            return todo[0] if todo else None
        if self.high is None:
            if self.low >= self.max_streams:
                return None
            step = max(self.low + 1, math.ceil(self.low * self.growth)) if self.low else 1
            return min(step, self.max_streams)
        if self.high - self.low <= 1:
            return None
        return (self.low + self.high) // 2

    def record(self, num_streams: int, passed: bool) -> None:
        self.measured[num_streams] = passed
        if passed:
            self.low = max(self.low, num_streams)
        else:
            self.high = num_streams if self.high is None else min(self.high, num_streams)

    def status(self, out_of_budget: bool, failed: bool = False) -> SearchStatus:
        if failed:
            return "failed"
        if self.fixed is not None:
            return "fixed"
        if self.next_streams() is not None:
            return "budget" if out_of_budget else "searching"
        return "at_least" if self.high is None and self.low >= self.max_streams else "found"

    def interval(self) -> tuple[int, int | None]:
        """(largest N that passed, largest N not yet failed: ``high - 1``; None: no failing N known)."""
        return self.low, None if self.high is None else self.high - 1
