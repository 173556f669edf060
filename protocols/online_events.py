"""The online protocol's event-level figures (protocols/online.py): how long after an event
starts (or ends) the model flags it, what it misses, how often it raises a false alarm, and the event
F1 with a collar, per event class (DCASE-style, sed_eval's conventions:
:mod:`streambench.protocols.metrics.event_detection`).

Events need a background: a class that marks "no event" (class 0 of every built-in data set;
``data.background_class`` of ``audio_files``). Every other scored class is an event class; where the
classes have no background (e.g. real / fake utterances) the figures are null with the reason.

- **Reference events**: per event class, each run of frames labelled with it; the event starts at the
  start of its first frame's capture interval (the previous frame's arrival, ``t0`` for frame 0) and
  ends at its last frame's arrival (DESIGN.md "The data contract").
- **Detected events, on the computation-aware clock** (DESIGN.md "Time and delay"): each frame is
  decided by the latest prediction that refers to it (the offline view; a frame without one is
  inactive), and a run of frames decided active is one detection. A detection counts from the moment
  the prediction that decided its first frame *finished* — the recorded latencies replayed with frames
  arriving at their stream time, under the run's pacing policy (protocols/pacing.py) — and ends when
  the prediction of the first frame after it finished (that frame's arrival when it has none; the
  stream's last finish when the detection lasts to the end). So a frame-synchronous model flags an
  onset one frame period plus its latency after the event started at the earliest. Optional smoothing
  of the detections (``min_duration_s``, ``min_gap_s``) is off by default.
- **Failed streams** (protocols/online_units.py): their reference events are all missed, and the
  complement of their reference — the frame rule's answer — counts as detections that match nothing
  (false alarms, no delay); their duration counts in the hours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.protocols.metrics.checks import FloatArray
from streambench.protocols.metrics.event_detection import (
    DelaySummary,
    delay_summary,
    event_detection,
    event_prf,
    frame_runs,
    smooth_events,
)
from streambench.protocols.metrics.event_matching import first_flag_delays
from streambench.protocols.recording import FailedStream, StreamRecording

__all__ = [
    "ClassEventFigures",
    "DelayFigures",
    "EventFigures",
    "EventsConfig",
    "F1Classes",
    "StreamEvents",
    "background_class",
    "event_figures",
    "f1_classes",
    "failed_stream_events",
    "kept_classes",
    "no_events_reason",
    "scored_classes",
    "stream_events",
]

BACKGROUND = "background"
"""The background's name in the built-in data sets; ``audio_files`` names its own (``background_class``)."""


class EventsConfig(BaseModel):
    """How events are matched (sed_eval's ``EventBasedMetrics`` conventions) and smoothed."""

    model_config = ConfigDict(extra="forbid")

    t_collar_s: float = Field(
        0.200, gt=0, description="onset collar: a detection matches when its onset is within this (sed_eval)"
    )
    evaluate_offset: bool = Field(
        False,
        description="also require the offset within max(t_collar_s, percentage_of_length x reference "
        "length) (sed_eval's default; off here: a detection is judged by its onset)",
    )
    percentage_of_length: float = Field(0.5, ge=0, le=1, description="offset tolerance share (sed_eval)")
    min_duration_s: float = Field(0.0, ge=0, description="drop detections shorter than this (0: off)")
    min_gap_s: float = Field(0.0, ge=0, description="merge detections at most this far apart (0: off)")


class DelayFigures(BaseModel):
    """Distribution of the delays of the matched events (ms): count, median, 90th percentile (numpy's
    linear interpolation), min, max. Negative: flagged before the reference boundary, within the collar."""

    n: int
    median_ms: float
    p90_ms: float
    min_ms: float
    max_ms: float


class ClassEventFigures(BaseModel):
    """One event class (``name``), or every event class pooled (``name`` "*")."""

    name: str
    reference_events: int
    detected_events: int
    matched: int
    missed: int = Field(description="reference events no detection matched")
    false_alarms: int = Field(description="detections that matched no reference event")
    false_alarms_per_hour: float | None = Field(description="false alarms per hour of scored stream time")
    precision: float | None = Field(description="matched / detected; null with no detection")
    recall: float | None = Field(description="matched / reference; null with no reference event")
    f1: float | None = Field(description="event-based F1 with the collar; null when precision or recall is")
    onset_delay: DelayFigures | None = Field(description="detected minus reference onset; null: no match")
    offset_delay: DelayFigures | None = Field(description="detected minus reference offset; null: no match")
    flagged: int | None = Field(None, description="reference events a detection flags, on time or not")
    flag_delay: DelayFigures | None = Field(
        None, description="onset of the first detection flagging each reference event minus its onset"
    )


class EventFigures(BaseModel):
    """The event-level figures of the test streams (module docstring)."""

    clock: str
    background_class: str
    settings: EventsConfig
    hours: float = Field(description="scored stream time, hours")
    streams: int
    failed_streams: int
    overall: ClassEventFigures = Field(description="every event class pooled (micro; delays pooled)")
    macro_f1: float | None = Field(description="mean of the classes' F1 where defined (sed_eval's)")
    classes: list[ClassEventFigures]


def background_class(classes: Sequence[str], named: str | None) -> str | None:
    """The class that marks "no event": ``named`` (the data set's) when it is one of ``classes``, else a
    class named ``"background"``, else None."""
    if named is not None and named in classes:
        return named
    return BACKGROUND if BACKGROUND in classes else None


def kept_classes(classes: Sequence[str], excluded: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """The classes every figure of the online protocol keeps (``exclude_classes`` left out): a bool mask over
    ``classes`` and the kept names in order. ValueError: an unknown excluded name, or nothing left."""
    unknown = sorted(set(excluded) - set(classes))
    if unknown:
        raise ValueError(f"exclude_classes: unknown class(es) {unknown}; the classes are {list(classes)}")
    keep = np.array([c not in excluded for c in classes])
    if not keep.any():
        raise ValueError("exclude_classes leaves no class to score")
    return keep, [c for c, k in zip(classes, keep, strict=True) if k]


def scored_classes(
    names: Sequence[str], background: str | None, excluded: Sequence[str], binary_f1: str
) -> tuple[np.ndarray, str]:
    """Which of the kept classes ``names`` every F1 of the online protocol counts, and why.

    Whenever the data names a background (``background`` is one of ``names``) and ``binary_f1`` is
    "positive" (the default), every F1 counts the *other* classes, binary and multi-class alike: the event
    classes a detector is asked to find (DCASE / sed_eval's event classes; scikit-learn's
    ``f1_score(..., labels=[every class but the background])``). Counted in, the background dominates
    micro F1 — in a one-hot binary task micro F1 over both classes equals the frame accuracy. With
    ``binary_f1`` "all_classes", or where no background is kept, every kept class counts. A background
    that is the only class kept is counted (there is nothing else)."""
    kept_background = background is not None and background in names and len(names) > 1
    if kept_background and binary_f1 != "all_classes":
        scored = np.array([n != background for n in names])
        others = [n for n in names if n != background]
        if len(others) == 1:
            rule = (
                f"binary task: F1 of the positive class {others[0]!r} (background {background!r} left out; "
                "binary_f1 = 'all_classes' gives micro F1 over both, which equals frame accuracy)"
            )
        else:
            listed = f"the classes {others}" if len(others) <= 6 else f"the {len(others)} event classes"
            rule = (
                f"{listed}, micro and macro (background {background!r} left out; binary_f1 = 'all_classes' "
                "counts it too, as f1_micro_all_classes does)"
            )
        if excluded:
            rule += f"; excluded: {list(excluded)}"
        return scored, rule
    rule = f"every class but the excluded {list(excluded)}" if excluded else "every class"
    if kept_background:
        rule += " (binary_f1 = 'all_classes', the background included)"
    return np.ones(len(names), dtype=bool), rule


@dataclass(frozen=True)
class F1Classes:
    """The classes every F1 of the online protocol counts, worked out once (:func:`f1_classes`)."""

    keep: np.ndarray
    """bool over the data's classes: those ``exclude_classes`` leaves."""
    names: list[str]
    """the kept classes' names, in order."""
    background: str | None
    """the background among the data's classes (None: there is none)."""
    scored: np.ndarray
    """bool over ``names``: those F1 counts (every one but the background, where the data names one)."""
    rule: str
    """why those classes, in words (``OnlineScore.scored_rule``)."""

    @property
    def columns(self) -> np.ndarray:
        """bool over the data's classes: the label columns F1 counts."""
        columns = self.keep.copy()
        columns[self.keep] = self.scored
        return columns


def f1_classes(
    classes: Sequence[str], excluded: Sequence[str], named_background: str | None, binary_f1: str
) -> F1Classes:
    """:func:`kept_classes`, :func:`background_class` and :func:`scored_classes` in the order every
    protocol scoring the online F1 applies them (online, capacity): one rule, one place. ValueError as
    :func:`kept_classes`."""
    keep, names = kept_classes(classes, excluded)
    background = background_class(classes, named_background)
    scored, rule = scored_classes(names, background, excluded, binary_f1)
    return F1Classes(keep=keep, names=names, background=background, scored=scored, rule=rule)


def no_events_reason(
    classes: Sequence[str], background: str | None, event_columns: Sequence[int]
) -> str | None:
    """Why a score has no event figures (None: it has them)."""
    if background is None:
        return (
            f"the classes {list(classes)} have no background class, so the labels are not events against "
            "a background (audio_files data: set data.background_class)"
        )
    if not event_columns:
        return "no event class is scored: every class but the background is excluded"
    return None


@dataclass
class StreamEvents:
    """Events of one stream per event class (seconds from its start), its duration, and the detections
    that match nothing (a failed stream's)."""

    reference: list[FloatArray]
    detected: list[FloatArray]
    duration_s: float
    unmatched_detections: list[int] = field(default_factory=list)


def _reference(labels: np.ndarray, columns: Sequence[int], arrival_ns: np.ndarray) -> list[FloatArray]:
    starts_ns = np.concatenate(([0], arrival_ns[:-1]))
    out = []
    for col in columns:
        first, stop = frame_runs(labels[:, col])
        out.append(np.column_stack((starts_ns[first], arrival_ns[stop - 1])) / 1e9)
    return out


def stream_events(
    rec: StreamRecording,
    labels: np.ndarray,
    decided: np.ndarray,
    kept: np.ndarray,
    t_pred_ns: np.ndarray,
    columns: Sequence[int],
    settings: EventsConfig,
) -> StreamEvents:
    """The events of a measured stream (module docstring): ``labels`` ``[T, K]`` and ``decided``
    ``[P, K]`` over the scored classes, ``columns`` the event classes among them; ``kept`` and
    ``t_pred_ns`` each prediction's replay (protocols/pacing.py ``paced_emit_times``)."""
    arrival = rec.frame_times_ns - rec.t0_ns
    chosen = np.full(rec.num_frames, -1, dtype=np.int64)
    idx = np.flatnonzero(kept).astype(np.int64)
    np.maximum.at(chosen, rec.refers_to[idx], idx)  # the latest kept prediction of each frame
    has = chosen >= 0
    finish = arrival.copy()
    finish[has] = t_pred_ns[chosen[has]] - rec.t0_ns
    boundary = np.append(finish, max(int(arrival[-1]), int(finish.max())))
    detected = []
    for col in columns:
        active = np.zeros(rec.num_frames, dtype=bool)
        active[has] = decided[chosen[has], col]
        first, stop = frame_runs(active)
        onset = boundary[first]
        events = np.column_stack((onset, np.maximum(boundary[stop], onset))) / 1e9
        detected.append(
            smooth_events(events, min_duration_s=settings.min_duration_s, min_gap_s=settings.min_gap_s)
        )
    return StreamEvents(_reference(labels, columns, arrival), detected, int(arrival[-1]) / 1e9)


def failed_stream_events(failed: FailedStream, labels: np.ndarray, columns: Sequence[int]) -> StreamEvents:
    """A failed stream: its reference events, no detection to match, the complement's runs unmatched."""
    arrival = failed.frame_times_ns - failed.t0_ns
    return StreamEvents(
        reference=_reference(labels, columns, arrival),
        detected=[np.zeros((0, 2)) for _ in columns],
        duration_s=int(arrival[-1]) / 1e9,
        unmatched_detections=[int(frame_runs(~labels[:, col])[0].size) for col in columns],
    )


def _delays(summary: DelaySummary | None) -> DelayFigures | None:
    if summary is None:
        return None
    return DelayFigures(
        n=summary.n,
        median_ms=1e3 * summary.median_s,
        p90_ms=1e3 * summary.p90_s,
        min_ms=1e3 * summary.min_s,
        max_ms=1e3 * summary.max_s,
    )


def _defined(x: float) -> float | None:
    return None if math.isnan(x) else x


def _class_figures(
    name: str,
    reference: int,
    detected: int,
    matched: int,
    onset: FloatArray,
    offset: FloatArray,
    hours: float,
    flags: FloatArray,
) -> ClassEventFigures:
    precision, recall, f1 = event_prf(matched, reference, detected)
    false_alarms = detected - matched
    return ClassEventFigures(
        name=name,
        reference_events=reference,
        detected_events=detected,
        matched=matched,
        missed=reference - matched,
        false_alarms=false_alarms,
        false_alarms_per_hour=false_alarms / hours if hours > 0 else None,
        precision=_defined(precision),
        recall=_defined(recall),
        f1=_defined(f1),
        onset_delay=_delays(delay_summary(onset)),
        offset_delay=_delays(delay_summary(offset)),
        flagged=int(flags.size),
        flag_delay=_delays(delay_summary(flags)),
    )


def event_figures(
    streams: Sequence[StreamEvents],
    names: Sequence[str],
    background: str,
    settings: EventsConfig,
    policy: str,
    failed_streams: int,
) -> EventFigures:
    """Match every stream's events (:func:`~streambench.protocols.metrics.event_detection.event_detection`)
    and summarise them per event class (``names``) and pooled."""
    result = event_detection(
        [s.reference for s in streams],
        [s.detected for s in streams],
        durations_s=[s.duration_s for s in streams],
        t_collar_s=settings.t_collar_s,
        evaluate_offset=settings.evaluate_offset,
        percentage_of_length=settings.percentage_of_length,
    )
    hours = result.duration_s / 3600.0
    extra = [
        sum(s.unmatched_detections[c] for s in streams if s.unmatched_detections) for c in range(len(names))
    ]
    collar = settings.t_collar_s
    flags = [  # how late the model first flagged each event, whether the collar matched it or not
        np.concatenate([first_flag_delays(s.reference[c], s.detected[c], collar) for s in streams])
        for c in range(len(names))
    ]
    classes = [
        _class_figures(
            name,
            counts.reference,
            counts.detected + extra[c],
            counts.matched,
            counts.onset_delays_s,
            counts.offset_delays_s,
            hours,
            flags[c],
        )
        for c, (name, counts) in enumerate(zip(names, result.classes, strict=True))
    ]
    overall = _class_figures(
        "*",
        sum(c.reference_events for c in classes),
        sum(c.detected_events for c in classes),
        sum(c.matched for c in classes),
        np.concatenate([c.onset_delays_s for c in result.classes]),
        np.concatenate([c.offset_delays_s for c in result.classes]),
        hours,
        np.concatenate(flags),
    )
    defined = [c.f1 for c in classes if c.f1 is not None]
    return EventFigures(
        clock="computation-aware: a detection counts from the moment its prediction finished, the recorded "
        f"latencies replayed with frames arriving at their stream time ({policy} policy)",
        background_class=background,
        settings=settings,
        hours=hours,
        streams=len(streams),
        failed_streams=failed_streams,
        overall=overall,
        macro_f1=sum(defined) / len(defined) if defined else None,
        classes=classes,
    )
