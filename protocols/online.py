"""The online protocol: latency-aware accuracy and speed of a causal model (seed 004 §6.2.2, §6.2.3).

Plan: every stream once, in order, at batch 1 (the harness resets the state per stream and warms
up first). When the decision rule is ``per_class`` a seeded share of the streams is set aside as the
validation split: thresholds are fitted there, frozen, and applied to the test streams; they are
never tuned on the streams being scored (seed 004 §6.2.1 "阈值与校准").

Score (pure, from the recordings): for each unit (a frame, or a segment of ``segment_length_s``) the
latest prediction that refers to it and arrived inside the delay window counts (DESIGN.md "Time and
delay"): Strict ``0 <= delay <= Δt``, Early-ok ``|delay| <= Δt``, on the algorithmic clock
(``t_pred`` = arrival time of the frame at which the prediction was emitted; for a segment
``t_seg`` is the arrival time of its last frame). Acc@Δt is the fraction of units whose predicted
label set equals the reference; F1@Δt aggregates TP/FP/FN micro (and macro) exactly as the seed's
pseudo-code. The offline figures (segment F1, frame accuracy) take the latest prediction per unit
whatever its delay. Latency avg/p50/p95/p99/max, FPS = 1 / mean latency and RTF = processing time /
stream duration follow §6.2.2 (2).

A stream the adapter failed on is never dropped: it counts in every accuracy and F1 figure as answered
wrongly on every unit (the complement of its reference), which can never score above any answer the
model could have given (protocols/online_units.py); the speed figures are over the
frames actually measured. The failed streams are listed in :attr:`OnlineScore.failed`.

Which classes an F1 counts (:func:`~streambench.protocols.online_events.scored_classes`): every class not
in ``exclude_classes`` but the background, whenever the data names one (its "no event" class,
:func:`~streambench.protocols.online_events.background_class`), binary and multi-class alike
(``binary_f1="positive"``, the default; micro and macro): counted in, the background dominates micro F1
(over both classes of a one-hot binary task micro F1 equals the frame accuracy).
:attr:`OnlineScore.scored_classes` names them; ``f1_micro_all_classes`` keeps the micro F1 over every
class (``binary_f1="all_classes"`` makes it every F1). Accuracy is exact-match over every class either way.
Event-level figures (onset / offset delay on the computation-aware clock, misses, false alarms per hour,
event F1 with a collar) are in :attr:`OnlineScore.events` (protocols/online_events.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from streambench.protocols import online_units
from streambench.protocols.base import Plan, PlannedStream
from streambench.protocols.metrics import (
    ClassCounts,
    MacroClasses,
    class_counts,
    f1_from_counts,
    gather_decisions,
    segment_labels,
    select_in_window,
)
from streambench.protocols.online_decision import DecisionRecord, DecisionRule, apply_decision, fit_decision
from streambench.protocols.online_events import (
    EventFigures,
    EventsConfig,
    StreamEvents,
    event_figures,
    f1_classes,
    failed_stream_events,
    no_events_reason,
    stream_events,
)
from streambench.protocols.online_headline import Headline, failure_warnings, make_headline
from streambench.protocols.online_speed import SpeedFigures, speed_figures
from streambench.protocols.online_units import ANY_DELAY, MODES, Mode, Tally, failed_tally, segments, windows
from streambench.protocols.pacing import PacingPolicy, paced_emit_times
from streambench.protocols.recording import FailedStream, StreamRecording, StreamRole
from streambench.protocols.session_audit import SessionAuditConfig

NAME = "online"
Unit = Literal["frame", "segment", "frame_replay", "frame_paced"]
UNITS: tuple[Unit, ...] = ("frame", "segment", "frame_replay", "frame_paced")
"""``frame_replay``: frame units on the computation-aware clock, ``t_pred`` = the time the frame's
``predict()`` finished when the recorded latencies are replayed in virtual time with frames arriving
at their stream time (DESIGN.md "The engine": replay; protocols/pacing.py). ``frame_paced`` (paced
runs only): the same with the finish times measured on the wall clock."""


class OnlineConfig(BaseModel):
    """Configuration of the online protocol."""

    model_config = ConfigDict(extra="forbid")

    deltas_ms: tuple[float, ...] = Field((0, 50, 100, 200, 500, 1000), min_length=1)
    decision: DecisionRule = DecisionRule()
    segment_length_s: float | None = Field(
        None, gt=0, description="segment length for segment-level scoring; default: the stream's"
    )
    exclude_classes: tuple[str, ...] = Field((), description="classes left out of every metric")
    binary_f1: Literal["positive", "all_classes"] = Field(
        "positive",
        description="where the data names a background class: every F1 counts the other classes "
        "('positive', binary and multi-class alike), or every class ('all_classes'; in a binary task micro "
        "F1 over both = frame accuracy)",
    )
    events: EventsConfig = Field(
        default_factory=EventsConfig, description="event matching (protocols/online_events.py)"
    )
    macro_classes: MacroClasses = Field(
        "all",
        description="classes in every macro F1 mean: 'all' (seed 004 §6.2.1, the default), 'non_empty', or "
        "'sed_eval' (sed_eval's class-wise average: classes both present and predicted); "
        "protocols/metrics/events.py MacroClasses",
    )
    split_seed: int = Field(0, description="seed of the validation/test split (per_class rule only)")
    pacing_policy: PacingPolicy = Field(
        "queue", description="replay policy of the computation-aware clock: queue, or drop-to-newest"
    )
    bootstrap_resamples: int = Field(1000, ge=1, description="resamples of the streams for the intervals")
    confidence: float = Field(0.95, gt=0, lt=1, description="level of the bootstrap intervals")
    spread_warning: float = Field(0.10, gt=0, description="warn when latency IQR / median exceeds this")
    divergence_factor: float = Field(
        2.0, gt=1, description="CUDA adapters: flag frames whose host time exceeds this times the device time"
    )
    audit: SessionAuditConfig = Field(
        default_factory=SessionAuditConfig,
        description="the run's own audit (sealed runs): replayed and occluded copies of scored streams "
        "interleaved among them (protocols/session_audit.py); share 0 and minimum 0 turn it off",
    )

    @model_validator(mode="after")
    def _check_deltas(self) -> OnlineConfig:
        if any(d < 0 for d in self.deltas_ms) or list(self.deltas_ms) != sorted(set(self.deltas_ms)):
            raise ValueError("deltas_ms must be non-negative, distinct and increasing")
        return self


class CurvePoint(BaseModel):
    """Acc@Δt and F1@Δt at one Δt, for one mode and unit."""

    delta_ms: float
    f1_micro: float = Field(description="micro F1 over the scored classes (OnlineScore.scored_classes)")
    f1_macro: float
    f1_micro_all_classes: float | None = Field(
        None, description="micro F1 over every class in OnlineScore.classes; null before 0.2.0"
    )
    accuracy: float
    answered: float = Field(description="share of units with a prediction inside the window")


class AccuracyFigures(BaseModel):
    """The accuracy side of one stream or of all test streams."""

    num_frames: int
    num_segments: int
    curves: dict[Unit, dict[Mode, list[CurvePoint]]]
    segment_f1_micro: float
    segment_f1_macro: float
    segment_f1_micro_all_classes: float | None = None
    frame_accuracy: float


class StreamScore(BaseModel):
    stream_id: str
    accuracy: AccuracyFigures
    speed: SpeedFigures


class FailedStreamScore(BaseModel):
    """A test stream the adapter failed on, as it was scored: answered wrongly on all its units."""

    stream_id: str
    num_frames: int
    num_segments: int
    frame: int | None = Field(description="the frame it failed at; None: before its first frame")
    error: str


class OnlineScore(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    protocol: Literal["online"] = "online"
    clock: Literal["algorithmic"] = "algorithmic"
    classes: list[str]
    scored_classes: list[str] | None = Field(
        None,
        description="the classes every F1 counts (all but the data's background); null in results "
        "written before 0.2.0: every class in `classes`",
    )
    scored_rule: str | None = Field(None, description="why those classes, in words")
    segment_unit: str | None = Field(
        None, description="the segment figures' unit: its length in frames; null in older results"
    )
    decision: DecisionRecord
    headline: Headline
    overall: StreamScore = Field(
        description="every test stream: the accuracy counts the failed ones as answered wrongly, the "
        "speed covers the measured frames"
    )
    streams: list[StreamScore] = Field(description="the test streams that finished, one by one")
    failed: list[FailedStreamScore] = Field(
        default_factory=list,
        description="the test streams the adapter failed on, each scored as answered wrongly on every unit "
        "(empty in results written before failed streams were scored)",
    )
    events: EventFigures | None = Field(None, description="event-level figures (protocols/online_events.py)")
    events_reason: str | None = Field(None, description="why events is null")

    def f1_at(self, delta_ms: float, mode: Mode = "strict", unit: Unit = "frame") -> float:
        for point in self.overall.accuracy.curves[unit][mode]:
            if point.delta_ms == delta_ms:
                return point.f1_micro
        raise KeyError(f"no F1@{delta_ms} ms in this score")


def plan(config: OnlineConfig, stream_ids: Sequence[str]) -> Plan:
    """Every stream once; with the per-class rule a seeded share becomes the validation split."""
    roles: list[StreamRole] = ["test"] * len(stream_ids)
    if config.decision.kind == "per_class":
        n_val = max(1, round(config.decision.validation_fraction * len(stream_ids)))
        if n_val >= len(stream_ids):
            raise ValueError(
                f"per-class thresholds need a validation split and test streams; {len(stream_ids)} "
                "stream(s) are too few"
            )
        chosen = np.random.default_rng(config.split_seed).permutation(len(stream_ids))[:n_val]
        for i in chosen:
            roles[int(i)] = "validation"
    planned = (PlannedStream(stream_id=s, role=r) for s, r in zip(stream_ids, roles, strict=True))
    return Plan(streams=tuple(planned))


def score(
    recordings: Sequence[StreamRecording],
    config: OnlineConfig,
    classes: Sequence[str],
    failed: Sequence[FailedStream] = (),
    background: str | None = None,
) -> OnlineScore:
    """Score recorded outputs; pure, so a saved run can be re-scored with another config. ``failed``:
    the planned streams the adapter failed on (their labels and clock, no output), each test one scored
    as answered wrongly on every unit (module docstring); a failed validation stream fits no threshold.
    ``background``: the data set's "no event" class (None: a class named "background", if any)."""
    counted = f1_classes(classes, config.exclude_classes, background, config.binary_f1)
    test = [r for r in recordings if r.role == "test"]
    if not test:
        raise ValueError("nothing to score: no test stream was recorded")
    keep, names, bg, scored = counted.keep, counted.names, counted.background, counted.scored
    events = [i for i, name in enumerate(names) if name != bg] if bg is not None else []
    validation = [r for r in recordings if r.role == "validation"]
    failed_validation = any(f.role == "validation" for f in failed)
    decision = fit_decision(config.decision, validation, keep, failed_validation)
    measured = [_score_stream(rec, config, decision, keep, events) for rec in test]
    per_stream = [tally for tally, _ in measured]
    failed_test = [f for f in failed if f.role == "test"]
    paced = any(r.paced_start_ns is not None for r in test)
    per_failed = [
        failed_tally(f, keep, config.segment_length_s, config.deltas_ms, paced) for f in failed_test
    ]
    total = Tally()
    for tally in [*per_stream, *per_failed]:
        total.add(tally)
    headline = make_headline(
        test,
        per_stream,
        per_failed,
        config.deltas_ms,
        config.decision.kind,
        scored,
        resamples=config.bootstrap_resamples,
        confidence=config.confidence,
        spread_warning=config.spread_warning,
    )
    headline.warnings += failure_warnings(
        failed, len(validation), config.decision.kind, config.decision.threshold
    )
    figures, events_reason = None, no_events_reason(classes, bg, events)
    if events_reason is None:
        assert bg is not None
        streams = [e for _, e in measured if e is not None]
        streams += [failed_stream_events(f, f.labels[:, keep], events) for f in failed_test]
        event_names = [names[i] for i in events]
        figures = event_figures(
            streams, event_names, bg, config.events, config.pacing_policy, len(failed_test)
        )
    return OnlineScore(
        classes=names,
        scored_classes=[n for n, k in zip(names, scored, strict=True) if k],
        scored_rule=counted.rule,
        segment_unit=online_units.segment_unit(test[0], config.segment_length_s),
        decision=decision,
        headline=headline,
        overall=StreamScore(
            stream_id="*",
            accuracy=_figures(total, config, scored),
            speed=speed_figures(test, config.pacing_policy, config.divergence_factor),
        ),
        streams=[
            StreamScore(
                stream_id=rec.stream_id,
                accuracy=_figures(tally, config, scored),
                speed=speed_figures([rec], config.pacing_policy, config.divergence_factor),
            )
            for rec, tally in zip(test, per_stream, strict=True)
        ],
        failed=[
            FailedStreamScore(
                stream_id=f.stream_id,
                num_frames=tally.units["frame"],
                num_segments=tally.units["segment"],
                frame=f.frame,
                error=f.error,
            )
            for f, tally in zip(failed_test, per_failed, strict=True)
        ],
        events=figures,
        events_reason=events_reason,
    )


# --- internals ------------------------------------------------------------------------------------


def _score_stream(
    rec: StreamRecording,
    config: OnlineConfig,
    decision: DecisionRecord,
    keep: np.ndarray,
    events: list[int],
) -> tuple[Tally, StreamEvents | None]:
    decided = apply_decision(rec.scores, decision, keep)
    emitted_t = rec.frame_times_ns[rec.emitted_at]
    seg_of_frame, seg_end, num_segments = segments(rec, config.segment_length_s)
    frame_gt = rec.labels[:, keep]
    seg_gt = segment_labels(frame_gt, seg_of_frame, num_segments)
    seg_of_pred = seg_of_frame[rec.refers_to]
    kept, replay_t = paced_emit_times(rec, config.pacing_policy)
    # a prediction of a frame the replay dropped never happened: a delay outside every finite window
    replay_delay = np.where(kept, replay_t - rec.frame_times_ns[rec.refers_to], np.iinfo(np.int64).max)
    levels = {
        "frame": (rec.refers_to, emitted_t - rec.frame_times_ns[rec.refers_to], frame_gt),
        "segment": (seg_of_pred, emitted_t - seg_end[seg_of_pred], seg_gt),
        "frame_replay": (rec.refers_to, replay_delay, frame_gt),
    }
    if rec.paced_start_ns is not None:  # predictions exist only for frames the pacer fed
        finished = rec.t0_ns + rec.paced_start_ns[rec.emitted_at] + rec.latency_ns[rec.emitted_at]
        levels["frame_paced"] = (rec.refers_to, finished - rec.frame_times_ns[rec.refers_to], frame_gt)
    tally = Tally()
    for unit, (unit_of_pred, delay_ns, gt) in levels.items():
        tally.units[unit] = gt.shape[0]
        # each mode at each Δt; for frames and segments the offline view, the latest whatever its delay
        for name, mode, delta_ms, window_ns in windows(unit, config.deltas_ms):
            chosen = select_in_window(unit_of_pred, delay_ns, gt.shape[0], window_ns, mode)
            pred = gather_decisions(chosen, decided, decided.shape[1])
            key = (unit, name, delta_ms)
            tally.counts[key] = class_counts(gt, pred)
            # a hit needs a prediction inside the window (seed 004 §6.2.2 (1)): an unanswered unit is
            # never correct, even when its reference label set is empty
            tally.correct[key] = int((np.all(pred == gt, axis=1) & (chosen >= 0)).sum())
            tally.answered[key] = int((chosen >= 0).sum())
    found = stream_events(rec, frame_gt, decided, kept, replay_t, events, config.events) if events else None
    return tally, found


def _columns(counts: ClassCounts, scored: np.ndarray) -> ClassCounts:
    return ClassCounts(
        tp=counts.tp[scored], fp=counts.fp[scored], fn=counts.fn[scored], support=counts.support[scored]
    )


def _figures(tally: Tally, config: OnlineConfig, scored: np.ndarray) -> AccuracyFigures:
    """Every F1 over the ``scored`` columns, the ``*_all_classes`` F1 and the accuracy over all."""
    curves: dict[Unit, dict[Mode, list[CurvePoint]]] = {}
    for unit in (u for u in UNITS if u in tally.units):
        n = tally.units[unit]
        curves[unit] = {
            mode: [
                CurvePoint(
                    delta_ms=d,
                    f1_micro=f1_from_counts(_columns(tally.counts[(unit, mode, d)], scored), "micro"),
                    f1_macro=f1_from_counts(
                        _columns(tally.counts[(unit, mode, d)], scored), "macro", config.macro_classes
                    ),
                    f1_micro_all_classes=f1_from_counts(tally.counts[(unit, mode, d)], "micro"),
                    accuracy=tally.correct[(unit, mode, d)] / n,
                    answered=tally.answered[(unit, mode, d)] / n,
                )
                for d in config.deltas_ms
            ]
            for mode in MODES
        }
    offline = tally.counts[("segment", "offline", ANY_DELAY)]
    return AccuracyFigures(
        num_frames=tally.units["frame"],
        num_segments=tally.units["segment"],
        curves=curves,
        segment_f1_micro=f1_from_counts(_columns(offline, scored), "micro"),
        segment_f1_macro=f1_from_counts(_columns(offline, scored), "macro", config.macro_classes),
        segment_f1_micro_all_classes=f1_from_counts(offline, "micro"),
        frame_accuracy=tally.correct[("frame", "offline", ANY_DELAY)] / tally.units["frame"],
    )
