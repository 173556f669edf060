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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from protocols.base import Executor, Plan, PlannedStream
from protocols.metrics import (
    ClassCounts,
    apply_thresholds,
    apply_top_k,
    class_counts,
    f1_from_counts,
    gather_decisions,
    segment_labels,
    select_in_window,
    tune_class_thresholds,
)
from protocols.metrics.bootstrap import Interval, bootstrap_micro_f1, bootstrap_ratio, spread
from protocols.online_speed import SpeedFigures, measured_latency, speed_figures
from protocols.pacing import PacingPolicy, paced_emit_times
from protocols.recording import StreamRecording, StreamRole

NAME = "online"
Mode = Literal["strict", "early_ok"]
Unit = Literal["frame", "segment", "frame_replay", "frame_paced"]
MODES: tuple[Mode, ...] = ("strict", "early_ok")
UNITS: tuple[Unit, ...] = ("frame", "segment", "frame_replay", "frame_paced")
"""``frame_replay``: frame units on the computation-aware clock, ``t_pred`` = the time the frame's
``predict()`` finished when the recorded latencies are replayed in virtual time with frames arriving
at their stream time (DESIGN.md "The engine": replay; protocols/pacing.py). ``frame_paced`` (paced
runs only): the same with the finish times measured on the wall clock."""


class DecisionRule(BaseModel):
    """How scores become labels (seed 004 §6.2.1): fixed threshold, per-class thresholds, or top-k."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["threshold", "per_class", "top_k"] = "threshold"
    threshold: float = Field(0.5, description="fixed threshold; a class is predicted when score >= it")
    k: int = Field(1, ge=1, description="labels per unit for kind='top_k'")
    validation_fraction: float = Field(
        0.2, gt=0.0, lt=1.0, description="share of streams set aside to fit per-class thresholds"
    )


class OnlineConfig(BaseModel):
    """Configuration of the online protocol."""

    model_config = ConfigDict(extra="forbid")

    deltas_ms: tuple[float, ...] = Field((0, 50, 100, 200, 500, 1000), min_length=1)
    decision: DecisionRule = DecisionRule()
    segment_length_s: float | None = Field(
        None, gt=0, description="segment length for segment-level scoring; default: the stream's"
    )
    exclude_classes: tuple[str, ...] = Field((), description="classes left out of every metric")
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

    @model_validator(mode="after")
    def _check_deltas(self) -> OnlineConfig:
        if any(d < 0 for d in self.deltas_ms) or list(self.deltas_ms) != sorted(set(self.deltas_ms)):
            raise ValueError("deltas_ms must be non-negative, distinct and increasing")
        return self


class CurvePoint(BaseModel):
    """Acc@Δt and F1@Δt at one Δt, for one mode and unit."""

    delta_ms: float
    f1_micro: float
    f1_macro: float
    accuracy: float
    answered: float = Field(description="share of units with a prediction inside the window")


class AccuracyFigures(BaseModel):
    """The accuracy side of one stream or of all test streams."""

    num_frames: int
    num_segments: int
    curves: dict[Unit, dict[Mode, list[CurvePoint]]]
    segment_f1_micro: float
    segment_f1_macro: float
    frame_accuracy: float


class StreamScore(BaseModel):
    stream_id: str
    accuracy: AccuracyFigures
    speed: SpeedFigures


class DecisionRecord(BaseModel):
    """The decision rule as applied, with its frozen thresholds and where they were fitted."""

    kind: str
    thresholds: list[float] | None
    k: int | None
    fitted_on: list[str]


class Headline(BaseModel):
    """The headline figures with bootstrap intervals over streams, and warnings about the measurement."""

    f1_strict: list[Interval] = Field(description="frame-level micro F1@Δt (Strict), one per Δt")
    mean_latency_ms: Interval
    rtf: Interval
    latency_spread: float = Field(description="IQR / median of the per-frame latencies")
    warnings: list[str]


class OnlineScore(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    protocol: Literal["online"] = "online"
    clock: Literal["algorithmic"] = "algorithmic"
    classes: list[str]
    decision: DecisionRecord
    headline: Headline
    overall: StreamScore
    streams: list[StreamScore]

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


def run(
    config: OnlineConfig, executor: Executor, stream_ids: Sequence[str], classes: Sequence[str]
) -> OnlineScore:
    """Plan, have the harness execute, score."""
    return score(executor.execute(plan(config, stream_ids)), config, classes)


def score(recordings: Sequence[StreamRecording], config: OnlineConfig, classes: Sequence[str]) -> OnlineScore:
    """Score recorded outputs; pure, so a saved run can be re-scored with another config."""
    unknown = sorted(set(config.exclude_classes) - set(classes))
    if unknown:
        raise ValueError(f"exclude_classes: unknown class(es) {unknown}; the classes are {list(classes)}")
    keep = np.array([c not in config.exclude_classes for c in classes])
    if not keep.any():
        raise ValueError("exclude_classes leaves no class to score")
    test = [r for r in recordings if r.role == "test"]
    if not test:
        raise ValueError("nothing to score: no test stream was recorded")
    validation = [r for r in recordings if r.role == "validation"]
    decision = _fit_decision(config.decision, validation, keep)
    per_stream = [_score_stream(rec, config, decision, keep) for rec in test]
    total = _Tally()
    for tally in per_stream:
        total.add(tally)
    return OnlineScore(
        classes=[c for c, k in zip(classes, keep, strict=True) if k],
        decision=decision,
        headline=_headline(test, per_stream, config),
        overall=StreamScore(
            stream_id="*",
            accuracy=_figures(total, config),
            speed=speed_figures(test, config.pacing_policy, config.divergence_factor),
        ),
        streams=[
            StreamScore(
                stream_id=rec.stream_id,
                accuracy=_figures(tally, config),
                speed=speed_figures([rec], config.pacing_policy, config.divergence_factor),
            )
            for rec, tally in zip(test, per_stream, strict=True)
        ],
    )


# --- internals ------------------------------------------------------------------------------------

_Key = tuple[str, str, float]  # (unit, mode or "offline", delta_ms)
_ANY_DELAY = -1.0  # the Δt key of the offline view


class _Tally:
    """Counts of one stream (or of all) for every (unit, mode, Δt): summed, then turned into figures."""

    def __init__(self) -> None:
        self.counts: dict[_Key, ClassCounts] = {}
        self.correct: dict[_Key, int] = {}
        self.answered: dict[_Key, int] = {}
        self.units: dict[str, int] = {}

    def add(self, other: _Tally) -> None:
        for key, counts in other.counts.items():
            self.counts[key] = self.counts[key] + counts if key in self.counts else counts
            self.correct[key] = self.correct.get(key, 0) + other.correct[key]
            self.answered[key] = self.answered.get(key, 0) + other.answered[key]
        for unit, n in other.units.items():
            self.units[unit] = self.units.get(unit, 0) + n


def _decide(scores: np.ndarray, decision: DecisionRecord, keep: np.ndarray) -> np.ndarray:
    scores = scores[:, keep]
    if decision.kind == "top_k":
        assert decision.k is not None
        return apply_top_k(scores, decision.k)
    assert decision.thresholds is not None
    return apply_thresholds(scores, np.asarray(decision.thresholds))


def _fit_decision(
    rule: DecisionRule, validation: Sequence[StreamRecording], keep: np.ndarray
) -> DecisionRecord:
    n_classes = int(keep.sum())
    if rule.kind == "top_k":
        if rule.k > n_classes:
            raise ValueError(f"decision.k = {rule.k} is more than the {n_classes} classes scored")
        return DecisionRecord(kind="top_k", thresholds=None, k=rule.k, fitted_on=[])
    if rule.kind == "threshold":
        return DecisionRecord(kind="threshold", thresholds=[rule.threshold] * n_classes, k=None, fitted_on=[])
    if not validation:
        raise ValueError("decision kind 'per_class' needs validation streams in the recording")
    gts, scores = [], []
    for rec in validation:
        chosen = select_in_window(rec.refers_to, _frame_delays(rec), rec.num_frames, None, "strict")
        have = chosen >= 0
        gts.append(rec.labels[have][:, keep])
        scores.append(rec.scores[chosen[have]][:, keep])
    thresholds = tune_class_thresholds(np.concatenate(gts), np.concatenate(scores), fallback=rule.threshold)
    return DecisionRecord(
        kind="per_class",
        thresholds=[float(t) for t in thresholds],
        k=None,
        fitted_on=[r.stream_id for r in validation],
    )


def _frame_delays(rec: StreamRecording) -> np.ndarray:
    times = rec.frame_times_ns
    return times[rec.emitted_at] - times[rec.refers_to]


def _segments(rec: StreamRecording, config: OnlineConfig) -> tuple[np.ndarray, np.ndarray, int]:
    """Segment index of every frame, arrival time of every segment's last frame, segment count."""
    seg_ns = (
        round(config.segment_length_s * 1e9) if config.segment_length_s is not None else rec.segment_length_ns
    )
    if seg_ns is None:
        raise ValueError(
            f"stream {rec.stream_id!r} has no segment length; set the protocol's segment_length_s"
        )
    # frame i captures (t_i - period, t_i]; it belongs to the segment containing its end instant
    seg_of_frame = (rec.frame_times_ns - rec.t0_ns - 1) // seg_ns
    # only segments that hold a frame are units (a segment shorter than the frame period may hold none)
    _, seg_of_frame = np.unique(seg_of_frame, return_inverse=True)
    num_segments = int(seg_of_frame[-1]) + 1
    seg_end = np.zeros(num_segments, dtype=np.int64)
    np.maximum.at(seg_end, seg_of_frame, rec.frame_times_ns)
    return seg_of_frame, seg_end, num_segments


def _score_stream(
    rec: StreamRecording, config: OnlineConfig, decision: DecisionRecord, keep: np.ndarray
) -> _Tally:
    decided = _decide(rec.scores, decision, keep)
    emitted_t = rec.frame_times_ns[rec.emitted_at]
    seg_of_frame, seg_end, num_segments = _segments(rec, config)
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
    tally = _Tally()
    for unit, (unit_of_pred, delay_ns, gt) in levels.items():
        tally.units[unit] = gt.shape[0]
        windows: list[tuple[str, Mode, float, int | None]] = [
            (mode, mode, d, round(d * 1e6)) for mode in MODES for d in config.deltas_ms
        ]
        if unit in ("frame", "segment"):  # the offline view: the latest prediction whatever its delay
            windows.append(("offline", "strict", _ANY_DELAY, None))
        for name, mode, delta_ms, window_ns in windows:
            chosen = select_in_window(unit_of_pred, delay_ns, gt.shape[0], window_ns, mode)
            pred = gather_decisions(chosen, decided, decided.shape[1])
            key = (unit, name, delta_ms)
            tally.counts[key] = class_counts(gt, pred)
            # a hit needs a prediction inside the window (seed 004 §6.2.2 (1)): an unanswered unit is
            # never correct, even when its reference label set is empty
            tally.correct[key] = int((np.all(pred == gt, axis=1) & (chosen >= 0)).sum())
            tally.answered[key] = int((chosen >= 0).sum())
    return tally


def _figures(tally: _Tally, config: OnlineConfig) -> AccuracyFigures:
    curves: dict[Unit, dict[Mode, list[CurvePoint]]] = {}
    for unit in (u for u in UNITS if u in tally.units):
        n = tally.units[unit]
        curves[unit] = {
            mode: [
                CurvePoint(
                    delta_ms=d,
                    f1_micro=f1_from_counts(tally.counts[(unit, mode, d)], "micro"),
                    f1_macro=f1_from_counts(tally.counts[(unit, mode, d)], "macro"),
                    accuracy=tally.correct[(unit, mode, d)] / n,
                    answered=tally.answered[(unit, mode, d)] / n,
                )
                for d in config.deltas_ms
            ]
            for mode in MODES
        }
    return AccuracyFigures(
        num_frames=tally.units["frame"],
        num_segments=tally.units["segment"],
        curves=curves,
        segment_f1_micro=f1_from_counts(tally.counts[("segment", "offline", _ANY_DELAY)], "micro"),
        segment_f1_macro=f1_from_counts(tally.counts[("segment", "offline", _ANY_DELAY)], "macro"),
        frame_accuracy=tally.correct[("frame", "offline", _ANY_DELAY)] / tally.units["frame"],
    )


def _headline(recs: Sequence[StreamRecording], tallies: Sequence[_Tally], config: OnlineConfig) -> Headline:
    """Intervals over streams (DESIGN.md "Results"), and a warning when latencies spread widely."""
    n, level = config.bootstrap_resamples, config.confidence
    f1 = []
    predicted = 0
    for delta in config.deltas_ms:
        counts = [t.counts[("frame", "strict", delta)] for t in tallies]
        tp, fp, fn = (np.array([getattr(c, name).sum() for c in counts]) for name in ("tp", "fp", "fn"))
        predicted += int(tp.sum() + fp.sum())
        f1.append(bootstrap_micro_f1(tp, fp, fn, n_resamples=n, confidence=level))
    processing = np.array([r.latency_ns.sum() for r in recs], dtype=np.float64)
    frames = np.array([measured_latency(r).size for r in recs], dtype=np.float64)
    durations = np.array([r.duration_ns for r in recs], dtype=np.float64)
    mean_latency = bootstrap_ratio(processing / 1e6, frames, n_resamples=n, confidence=level)
    latency_spread = spread(np.concatenate([measured_latency(r) for r in recs]))
    warnings = []
    if latency_spread > config.spread_warning:
        warnings.append(
            f"latency spread IQR/median = {latency_spread:.0%} exceeds {config.spread_warning:.0%}: "
            "the machine may be busy or the model's cost varies; repeat the run before comparing"
        )
    if len(recs) < 10:
        warnings.append(f"only {len(recs)} test streams: the intervals over streams are rough")
    if predicted == 0 and any(r.num_predictions for r in recs):
        warnings.append(
            f"the model never predicted a label: no score passed the decision rule ({config.decision.kind}), "
            "so F1 is 0; check the scores' scale (probabilities for a threshold), the --threshold or "
            "--decision, and that the model's classes are the data's"
        )
    return Headline(
        f1_strict=f1,
        mean_latency_ms=mean_latency,
        rtf=bootstrap_ratio(processing, durations, n_resamples=n, confidence=level),
        latency_spread=latency_spread,
        warnings=warnings,
    )
