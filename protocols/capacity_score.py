"""The capacity protocol's score (issue 28): one point (N streams) from what the harness recorded, and the
verdict that drives the search (protocols/capacity.py). Pure: recorded arrays in, figures out.

Per frame (``../shared/DESIGN.md`` "Time and delay", paced clock): response = completion - arrival
(counted from the scheduled arrival, so a late release or a queue is never hidden: no coordinated
omission), queue wait = start of service - arrival, a deadline miss = response > deadline or the frame
was never answered (dropped, or still queued when a hopeless point was cut short).

Accuracy is F1@Δt (seed 004 §6.2.2 (1), Strict, micro) at Δt = the deadline on the computation-aware
clock: a prediction counts from the completion of the frame that emitted it, so a late answer costs F1
exactly as it would in deployment. It counts the classes the online protocol's headline F1@Δt counts
(:func:`f1_columns`: every class not in ``exclude_classes`` but the background, where the data names one;
protocols/online.py), from the same
functions, so the two protocols' F1 of one model on one data set agree.

Its reference (``CapacityConfig.f1_reference``): ``same_units`` the same outputs on the algorithmic clock
(``t_pred`` = arrival of the emitting frame: what they score served instantly, i.e. the one-stream figure
of these very units, free of the data's sampling noise between points), or ``one_stream`` the F1@deadline
measured at N = 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field

from streambench.protocols.capacity import (
    ArrivalSchedule,
    CapacityConfig,
    SearchStatus,
    early_stopping_passes,
    frames_still_needed,
    miss_rate_upper_bound,
)
from streambench.protocols.metrics import (
    apply_thresholds,
    class_counts,
    f1_from_counts,
    gather_decisions,
    select_in_window,
    window_bound_ns,
)
from streambench.protocols.metrics.checks import IntArray
from streambench.protocols.online_events import f1_classes

__all__ = ["NOT_SERVED", "CapacityPoint", "CapacityScore", "ServedFrames", "f1_columns", "score_point"]

NOT_SERVED = -1
"""``released_ns`` / ``start_ns`` / ``finish_ns`` of a frame that never got there."""
KEEPS_UP_GROWTH = 0.05
"""A queue whose wait grows by more than 0.05 s per second of the point cannot keep up."""


@dataclass(frozen=True)
class ServedFrames:
    """What the harness measured for each frame of an :class:`ArrivalSchedule` (``[F]``, ns from the
    point's start on the harness's clock) and the outputs (``[P]``: the schedule frame that emitted each
    prediction, the frame of its session it labels, its scores ``[P, C]``)."""

    released_ns: IntArray
    start_ns: IntArray
    finish_ns: IntArray
    dropped: np.ndarray
    batch_size: IntArray
    pred_frame: IntArray
    pred_refers: IntArray
    pred_scores: np.ndarray
    aborted: str | None = None


class CapacityPoint(BaseModel):
    """One N of the curve."""

    streams: int
    duration_s: float
    frames: int = Field(description="frames released")
    served: int
    dropped: int
    late: int = Field(description="answered after the deadline")
    misses: int = Field(description="late, dropped or never answered")
    miss_rate: float
    miss_rate_bound: float = Field(description="upper confidence bound of the miss rate (Clopper-Pearson)")
    latency_pass: bool = Field(description="LoadGen's early-stopping rule")
    frames_needed: int = Field(description="more frames, all on time, the rule would need to pass")
    response_p50_ms: float | None
    response_p99_ms: float | None
    response_max_ms: float | None
    wait_p50_ms: float | None
    wait_p99_ms: float | None
    release_lag_p99_us: float | None = Field(description="the dispatcher's lateness in releasing a frame")
    mean_batch: float | None
    offered_fps: float
    served_fps: float
    wait_growth: float | None = Field(description="slope of queue wait against arrival time (s per s)")
    keeps_up: bool
    f1: float | None = Field(
        description="F1@deadline on the computation-aware clock, over the classes online's F1 counts"
    )
    f1_unloaded: float | None = Field(description="the same outputs on the algorithmic clock")
    f1_reference: float | None
    accuracy_pass: bool
    passed: bool
    aborted: str | None = None
    verdict: str
    harness_cpu_share: float | None = Field(None, description="this process's CPU time / wall time")
    workers_cpu_share: float | None = Field(None, description="the workers' CPU time / wall time")


class CapacityScore(BaseModel):
    """The search's answer: the capacity, its interval and the curve it measured."""

    deadline_ms: float
    capacity: int = Field(description="largest N that passed (0: not even one stream)")
    interval: tuple[int, int | None] = Field(description="capacity lies in [low, high]; high None: unknown")
    status: SearchStatus
    planned_frames: int
    one_stream_f1: float | None
    curve: list[CapacityPoint]
    notes: list[str] = Field(default_factory=list)


def _percentile_ms(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) / 1e6 if values.size else None


def _units(schedule: ArrivalSchedule) -> tuple[IntArray, IntArray]:
    """(schedule index of each (session, frame) in session order, offset of each session in it)."""
    order = np.lexsort((schedule.frame, schedule.session)).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(schedule.session_frames)[:-1])).astype(np.int64)
    return order, offsets


def f1_columns(config: CapacityConfig, num_classes: int) -> tuple[np.ndarray, str]:
    """The label columns F1@deadline counts and the rule in words: the online protocol's
    (:func:`~streambench.protocols.online_events.scored_classes` over the classes left by
    ``exclude_classes``, the background from ``background_class``), so both protocols count the same
    classes. Without the class names (``config.classes`` None) every class counts. A ValueError names a bad
    ``exclude_classes`` or ``classes`` as the online protocol does."""
    classes = config.classes
    if classes is None:
        if config.exclude_classes:
            raise ValueError("exclude_classes needs the class names (the run fills classes from the data)")
        return np.ones(num_classes, dtype=bool), "every class (the class names are unknown)"
    if len(classes) != num_classes:
        raise ValueError(f"classes: {len(classes)} names {list(classes)} for labels of {num_classes} classes")
    counted = f1_classes(classes, config.exclude_classes, config.background_class, config.binary_f1)
    return counted.columns, counted.rule


def _f1(
    schedule: ArrivalSchedule,
    served: ServedFrames,
    labels: Sequence[np.ndarray],
    deadline_ms: float,
    config: CapacityConfig,
) -> tuple[float, float]:
    """(F1@deadline computation-aware, F1@deadline algorithmic) over every released frame."""
    order, offsets = _units(schedule)
    sessions = schedule.session[served.pred_frame]
    inside = served.pred_refers < schedule.session_frames[sessions]  # a label past the point's cut
    emit, refers = served.pred_frame[inside], served.pred_refers[inside]
    units = order[offsets[sessions[inside]] + refers]
    stacked = np.concatenate([np.asarray(lab, dtype=bool) for lab in labels])
    starts = np.concatenate(([0], np.cumsum([len(lab) for lab in labels])[:-1])).astype(np.int64)
    gt = stacked[starts[schedule.session_source[schedule.session]] + schedule.frame]
    released = served.released_ns != NOT_SERVED
    decided = apply_thresholds(served.pred_scores[inside], np.full(gt.shape[1], config.decision_threshold))
    columns, _ = f1_columns(config, gt.shape[1])
    window = window_bound_ns(deadline_ms)
    figures = []
    for t_pred in (served.finish_ns[emit], schedule.arrival_ns[emit]):
        chosen = select_in_window(units, t_pred - schedule.arrival_ns[units], gt.shape[0], window, "strict")
        pred = gather_decisions(chosen, decided, gt.shape[1])
        # online's headline F1: micro over the counted classes (each class's counts are its own column's)
        counts = class_counts(gt[released][:, columns], pred[released][:, columns])
        figures.append(f1_from_counts(counts, "micro"))
    return figures[0], figures[1]


def _growth(arrival: np.ndarray, wait: np.ndarray) -> float | None:
    if arrival.size < 3 or np.ptp(arrival) == 0:
        return None
    return float(np.polyfit(arrival / 1e9, wait / 1e9, 1)[0])


def score_point(
    schedule: ArrivalSchedule,
    served: ServedFrames,
    labels: Sequence[np.ndarray],
    config: CapacityConfig,
    one_stream_f1: float | None = None,
) -> CapacityPoint:
    """Score one point: ``labels[s]`` are the reference labels ``[T_s, C]`` of data-set stream ``s``
    (sessions index them through ``schedule.session_source``); ``one_stream_f1`` the N = 1 figure, for
    ``f1_reference = "one_stream"`` (None at N = 1 itself: the point is its own reference)."""
    deadline_ns = config.deadline_ns(schedule.period_ns)
    deadline_ms = deadline_ns / 1e6
    arrival = schedule.arrival_ns
    released = served.released_ns != NOT_SERVED
    done = served.finish_ns != NOT_SERVED
    response = (served.finish_ns - arrival)[done]
    wait = (served.start_ns - arrival)[done]
    late = int((response > deadline_ns).sum())
    frames = int(released.sum())
    misses = frames - int(done.sum()) + late
    latency_pass = served.aborted is None and early_stopping_passes(
        frames, misses, config.target_miss_rate, config.confidence
    )
    needed = frames_still_needed(frames, misses, config.target_miss_rate, config.confidence)
    duration_s = schedule.duration_ns / 1e9
    span = (served.finish_ns[done].max() - arrival[done].min()) / 1e9 if done.any() else 0.0
    growth = _growth(arrival[done], wait)
    drop_rate = float(served.dropped.sum()) / max(frames, 1)
    keeps_up = (growth is None or growth <= KEEPS_UP_GROWTH) and drop_rate <= config.target_miss_rate
    f1 = f1_unloaded = None
    if served.aborted is None and frames:
        f1, f1_unloaded = _f1(schedule, served, labels, deadline_ms, config)
    reference = f1_unloaded if config.f1_reference == "same_units" or one_stream_f1 is None else one_stream_f1
    accuracy_pass = f1 is not None and reference is not None and f1 >= reference - config.f1_tolerance
    # offered: the frames released over the time they were released in (a point cut short, too)
    offered_span = (arrival[released].max() + schedule.period_ns) / 1e9 if frames else duration_s
    offered = frames / offered_span
    served_fps = float(done.sum()) / span if span > 0 else 0.0
    point = CapacityPoint(
        streams=schedule.num_streams,
        duration_s=duration_s,
        frames=frames,
        served=int(done.sum()),
        dropped=int(served.dropped.sum()),
        late=late,
        misses=misses,
        miss_rate=misses / max(frames, 1),
        miss_rate_bound=miss_rate_upper_bound(frames, misses, config.confidence),
        latency_pass=latency_pass,
        frames_needed=needed,
        response_p50_ms=_percentile_ms(response, 50),
        response_p99_ms=_percentile_ms(response, 99),
        response_max_ms=float(response.max()) / 1e6 if response.size else None,
        wait_p50_ms=_percentile_ms(wait, 50),
        wait_p99_ms=_percentile_ms(wait, 99),
        release_lag_p99_us=(
            float(np.percentile(served.released_ns[released] - arrival[released], 99)) / 1e3
            if frames
            else None
        ),
        mean_batch=float(served.batch_size[done].mean()) if done.any() else None,
        offered_fps=offered,
        served_fps=served_fps,
        wait_growth=growth,
        keeps_up=keeps_up,
        f1=f1,
        f1_unloaded=f1_unloaded,
        f1_reference=reference,
        accuracy_pass=accuracy_pass,
        passed=latency_pass and accuracy_pass,
        aborted=served.aborted,
        verdict="",
    )
    point.verdict = _verdict(point, config, deadline_ms)
    return point


def _verdict(point: CapacityPoint, config: CapacityConfig, deadline_ms: float) -> str:
    """One line saying why the point passed or failed."""
    if not point.keeps_up:
        growth = f"queue wait grows {point.wait_growth:.2f} s per s, " if point.wait_growth else ""
        cut = f" (cut short: {point.aborted})" if point.aborted else ""
        return (
            f"cannot keep up: {growth}offered {point.offered_fps:.0f} frames/s, served "
            f"{point.served_fps:.0f} frames/s, {point.dropped} dropped{cut}"
        )
    limit = f"{100 * config.target_miss_rate:g} %"
    if point.aborted is not None:
        return f"cut short: {point.aborted} at {deadline_ms:g} ms"
    if not point.latency_pass:
        more = f"; {point.frames_needed} more frames on time would pass" if point.frames_needed else ""
        return (
            f"misses {point.misses} of {point.frames} frames at {deadline_ms:g} ms: bound "
            f"{100 * point.miss_rate_bound:.2f} % > {limit}{more}"
        )
    if not point.accuracy_pass:
        return (
            f"F1@{deadline_ms:g}ms {point.f1:.4f} fell more than {config.f1_tolerance:g} below "
            f"{point.f1_reference:.4f}"
        )
    return f"passes: miss-rate bound {100 * point.miss_rate_bound:.2f} % <= {limit}, F1 held"
