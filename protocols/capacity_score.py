"""The capacity protocol's score: one point (N streams) from what the harness recorded, and the
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

Its reference (``CapacityConfig.f1_reference``, protocols/capacity_accuracy.py): ``unloaded`` (default) the
model's own outputs on the same frames served unloaded, compared over those frames; ``same_units`` the
loaded outputs on the algorithmic clock, or ``one_stream`` the F1@deadline measured at N = 1 (older
configurations: neither sees a model that answers differently when it falls behind).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

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
from streambench.protocols.capacity_accuracy import (
    AGREEMENT_FLOOR,
    Outputs,
    UnloadedReference,
    agreement_over,
    f1_over,
    frame_labels,
    unit_decisions,
)
from streambench.protocols.capacity_records import CapacityFailure, Interference
from streambench.protocols.metrics.checks import IntArray
from streambench.protocols.online_events import f1_classes

__all__ = [
    "NOT_SERVED",
    "CapacityFailure",
    "CapacityPoint",
    "CapacityScore",
    "Interference",
    "ServedFrames",
    "f1_columns",
    "score_point",
]

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
    f1_reference: float | None = Field(
        description="what F1 is held against: the model's unloaded F1 on the replayed frames (unloaded)"
    )
    f1_compared: float | None = Field(
        None, description="unloaded reference: the loaded F1@deadline over the same replayed frames"
    )
    reference_frames: int | None = Field(None, description="frames of the unloaded replay")
    agreement: float | None = Field(
        None, description="share of the replayed frames decided as the model decided them unloaded"
    )
    outputs_changed: bool = Field(False, description=f"agreement below {AGREEMENT_FLOOR:g}: answers changed")
    accuracy_pass: bool
    passed: bool
    aborted: str | None = None
    verdict: str
    harness_cpu_share: float | None = Field(None, description="this process's CPU time / wall time")
    workers_cpu_share: float | None = Field(None, description="the workers' CPU time / wall time")
    miss_span_s: float | None = Field(None, description="span of the misses' arrivals (one stall: short)")
    recovered_s: float | None = Field(None, description="how long the point ran on time after its last miss")
    others_cpu: float | None = Field(
        None, description="cores other processes used during the point (/proc/stat less the run's own)"
    )
    load_average: float | None = Field(None, description="the 1-minute load average after the point")
    attempts: list[str] = Field(
        default_factory=list, description="earlier attempts at this N, re-measured (their verdicts)"
    )


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
    failure: CapacityFailure | None = Field(None, description="the adapter failure that ended the search")
    sources: Literal["fresh", "replayed"] = Field(
        "replayed",
        description="fresh: new streams per live session (synthetic data); replayed: the data set's streams "
        "played again across sessions (a content cache shared across sessions could gain)",
    )
    f1_reference: str = Field("same_units", description="what F1 was held against (CapacityConfig)")
    interference: Interference | None = None


def _percentile_ms(values: np.ndarray, q: float) -> float | None:
    return float(np.percentile(values, q)) / 1e6 if values.size else None


def f1_columns(config: CapacityConfig, num_classes: int) -> tuple[np.ndarray, str]:
    """The label columns F1@deadline counts and the rule in words: the online protocol's
    (:func:`~streambench.protocols.online_events.f1_classes` over the classes left by
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


@dataclass(frozen=True)
class _Accuracy:
    f1: float
    f1_unloaded: float
    reference: float | None
    compared: float | None = None
    agreement: float | None = None
    frames: int | None = None


def _accuracy(
    schedule: ArrivalSchedule,
    served: ServedFrames,
    labels: Sequence[np.ndarray],
    deadline_ms: float,
    config: CapacityConfig,
    one_stream_f1: float | None,
    unloaded: UnloadedReference | None,
) -> _Accuracy:
    """F1@deadline of the loaded outputs (computation-aware, every released frame), the same outputs on
    the algorithmic clock, and the reference ``config.f1_reference`` names (capacity_accuracy.py); with
    the unloaded reference, the loaded F1 over the replayed frames it is compared with and the share of
    them answered as unloaded."""
    gt = frame_labels(schedule, labels)
    num_classes = gt.shape[1]
    columns, _ = f1_columns(config, num_classes)
    released = served.released_ns != NOT_SERVED
    loaded = Outputs(served.pred_frame, served.pred_refers, served.pred_scores)
    arrival, emit = schedule.arrival_ns, loaded.pred_frame
    on_time = unit_decisions(schedule, loaded, served.finish_ns[emit], deadline_ms, config, num_classes)
    instant = unit_decisions(schedule, loaded, arrival[emit], deadline_ms, config, num_classes)
    f1, f1_unloaded = f1_over(gt, on_time, released, columns), f1_over(gt, instant, released, columns)
    if config.f1_reference != "unloaded":
        same = config.f1_reference == "same_units" or one_stream_f1 is None
        return _Accuracy(f1, f1_unloaded, f1_unloaded if same else one_stream_f1)
    if unloaded is None:
        return _Accuracy(f1, f1_unloaded, None)
    frames = unloaded.frames & released
    alone = unit_decisions(
        schedule, unloaded.outputs, arrival[unloaded.outputs.pred_frame], deadline_ms, config, num_classes
    )
    agreement = None if config.policy == "drop" else agreement_over(instant, alone, frames, columns)
    return _Accuracy(
        f1,
        f1_unloaded,
        f1_over(gt, alone, frames, columns),
        f1_over(gt, on_time, frames, columns),
        agreement,
        int(frames.sum()),
    )


def _miss_span_s(
    schedule: ArrivalSchedule, served: ServedFrames, deadline_ns: int
) -> tuple[float | None, float | None]:
    """(span of the arrivals of the released frames that missed: late, dropped or unanswered; how long
    the point ran on time after the last of them), in s; (None, None) without a miss."""
    released = served.released_ns != NOT_SERVED
    late = (served.finish_ns == NOT_SERVED) | (served.finish_ns - schedule.arrival_ns > deadline_ns)
    missed = schedule.arrival_ns[released & late]
    if not missed.size:
        return None, None
    last = schedule.arrival_ns[released].max()
    return float(np.ptp(missed)) / 1e9, float(last - missed.max()) / 1e9


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
    unloaded: UnloadedReference | None = None,
) -> CapacityPoint:
    """Score one point: ``labels[s]`` are the reference labels ``[T_s, C]`` of data-set stream ``s``
    (sessions index them through ``schedule.session_source``); ``one_stream_f1`` the N = 1 figure, for
    ``f1_reference = "one_stream"`` (None at N = 1 itself: the point is its own reference); ``unloaded``
    the model's unloaded outputs on some of the point's sessions, for ``f1_reference = "unloaded"`` (None:
    F1 cannot be held, the point does not pass)."""
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
    held = None
    if served.aborted is None and frames:
        held = _accuracy(schedule, served, labels, deadline_ms, config, one_stream_f1, unloaded)
    compared = None if held is None else held.compared if held.compared is not None else held.f1
    reference = None if held is None else held.reference
    accuracy_pass = (
        compared is not None and reference is not None and compared >= reference - config.f1_tolerance
    )
    agreement = None if held is None else held.agreement
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
        f1=None if held is None else held.f1,
        f1_unloaded=None if held is None else held.f1_unloaded,
        f1_reference=reference,
        f1_compared=None if held is None else held.compared,
        reference_frames=None if held is None else held.frames,
        agreement=agreement,
        outputs_changed=agreement is not None and agreement < AGREEMENT_FLOOR,
        accuracy_pass=accuracy_pass,
        passed=latency_pass and accuracy_pass,
        aborted=served.aborted,
        verdict="",
    )
    point.miss_span_s, point.recovered_s = _miss_span_s(schedule, served, deadline_ns)
    point.verdict = _verdict(point, config, deadline_ms)
    if point.outputs_changed and point.agreement is not None and "answers changed" not in point.verdict:
        point.verdict += (
            f"; answers changed under load on {100 * (1 - point.agreement):.1f} % of replayed frames"
        )
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
        if point.f1_reference is None:
            return "F1 not held: no unloaded reference was measured"
        changed = ""
        if point.outputs_changed and point.agreement is not None:
            changed = f"; answers changed under load on {100 * (1 - point.agreement):.1f} % of those frames"
        compared = point.f1_compared if point.f1_compared is not None else point.f1
        against = (
            f"the model's unloaded {point.f1_reference:.4f} on the same {point.reference_frames} frames"
            if point.f1_compared is not None
            else f"{point.f1_reference:.4f}"
        )
        fell = f"fell more than {config.f1_tolerance:g} below {against}{changed}"
        return f"F1@{deadline_ms:g}ms {compared:.4f} {fell}"
    return f"passes: miss-rate bound {100 * point.miss_rate_bound:.2f} % <= {limit}, F1 held"
