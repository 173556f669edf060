"""The robustness protocol: the online metrics under missing modalities, audio delay and clock jitter.

Seed 004 §6.2.2 (3): Missing-Rate@p% (p ∈ {10, 20, 30, 50} %), Audio-Delay@Δt (Δt ∈ {0, 50, 100, 200,
500} ms) and Jitter-Tolerance@±δ (δ ∈ {0, 10, 20, 50} ms), each reported as the F1 at the point and its
drop from the clean run. Plan: the clean variant and one variant per sweep point, each a list of
perturbations the harness applies to every stream (harness/datasets/perturb.py). Score: the online protocol's
score of each variant, pure, from the recordings. An adapter that raises on a perturbed input is a
recorded failure at that point (stream, frame, error), not the end of the sweep; the point goes on with
the next stream, and the failed stream counts in the point's F1 and accuracy as answered wrongly on
every frame, as in the online protocol (protocols/online_units.py): failing on a hard
perturbation never scores better than answering it. A point at which every stream failed has F1 = 0
and accuracy = 0 (the complement of every reference has no true positive) and no online score.

The F1 of every point is the online protocol's F1@Δt (Strict, frame units) of that point's recordings, so
it counts the classes the online F1 counts (protocols/online.py; :func:`score` passes the data's
``background``): every class not in ``online.exclude_classes`` but the background, where the data names
one (e.g. speech of speech / non-speech; micro over both would be the frame accuracy).
:attr:`RobustnessReport.f1_counts` says which, in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from streambench.protocols.online import OnlineConfig, OnlineScore
from streambench.protocols.online import score as score_online
from streambench.protocols.perturbations import AudioDelay, Jitter, MissingModality, Perturbation, describe
from streambench.protocols.recording import FailedStream, StreamRecording

NAME = "robustness"
Axis = Literal["clean", "missing", "audio_delay", "jitter"]


class RobustnessConfig(BaseModel):
    """The sweep: seed 004's default points, all configurable."""

    model_config = ConfigDict(extra="forbid")

    online: OnlineConfig = Field(default_factory=OnlineConfig)
    missing_modality: str = "visual"
    missing_mode: Literal["zero", "none"] = "none"
    missing_rates_pct: tuple[float, ...] = (10, 20, 30, 50)
    audio_delays_ms: tuple[float, ...] = (0, 50, 100, 200, 500)
    jitters_ms: tuple[float, ...] = (0, 10, 20, 50)
    seed: int = Field(0, ge=0, description="seed of every injector (each stream draws its own)")
    report_delta_ms: float = Field(
        0, description="the Δt of the F1@Δt (Strict, frame; the online F1's classes) in the table"
    )

    @model_validator(mode="after")
    def _reported_delta_is_scored(self) -> RobustnessConfig:
        if self.report_delta_ms not in self.online.deltas_ms:
            raise ValueError(f"report_delta_ms {self.report_delta_ms} is not one of online.deltas_ms")
        return self


class Variant(BaseModel):
    """One sweep point: the perturbations applied to every stream."""

    model_config = ConfigDict(frozen=True)

    name: str
    axis: Axis
    value: float
    perturbations: tuple[Perturbation, ...]


class Failure(BaseModel):
    """An adapter that raised (or broke the contract) on a perturbed input."""

    stream_id: str
    frame: int
    error: str


class PointResult(BaseModel):
    """The online figures at one sweep point and their drop from the clean run; the failed streams
    counted in them as answered wrongly (``f1`` is None only in files written before that rule)."""

    variant: Variant
    f1: float | None
    accuracy: float | None
    abs_drop: float | None = Field(description="clean F1 - F1 at this point")
    rel_drop: float | None = Field(description="(clean F1 - F1) / clean F1")
    failure: Failure | None = Field(description="the first stream the adapter failed on at this point")
    failures: list[Failure] = Field(
        default_factory=list, description="every stream the adapter failed on at this point, in order"
    )
    score: OnlineScore | None = Field(description="None when every stream failed (nothing measured)")


F1_NOT_RECORDED = (
    "not recorded (a file written before the robustness F1 named its classes; each point's "
    "score.scored_rule, where present, says what it counted)"
)
"""``RobustnessReport.f1_counts`` of a file written before the field."""


class RobustnessReport(BaseModel):
    protocol: Literal["robustness"] = "robustness"
    report_delta_ms: float
    f1_counts: str = Field(
        F1_NOT_RECORDED,
        description="the classes every point's F1 counts, in words: the online protocol's rule "
        "(OnlineScore.scored_rule; every class but the data's background)",
    )
    clean: PointResult
    points: list[PointResult]


def plan(config: RobustnessConfig) -> list[Variant]:
    """The clean run first, then every point of every axis."""
    variants = [Variant(name="clean", axis="clean", value=0.0, perturbations=())]
    for pct in config.missing_rates_pct:
        spec = MissingModality(
            modality=config.missing_modality, rate=pct / 100, mode=config.missing_mode, seed=config.seed
        )
        variants.append(Variant(name=describe(spec), axis="missing", value=pct, perturbations=(spec,)))
    for delay in config.audio_delays_ms:
        delay_spec = AudioDelay(delay_ms=delay, seed=config.seed)
        variants.append(
            Variant(name=describe(delay_spec), axis="audio_delay", value=delay, perturbations=(delay_spec,))
        )
    for delta in config.jitters_ms:
        jitter_spec = Jitter(delta_ms=delta, seed=config.seed)
        variants.append(
            Variant(name=describe(jitter_spec), axis="jitter", value=delta, perturbations=(jitter_spec,))
        )
    return variants


def score(
    outcomes: Mapping[str, tuple[Sequence[StreamRecording], Sequence[FailedStream]]],
    variants: Sequence[Variant],
    config: RobustnessConfig,
    classes: Sequence[str],
    background: str | None = None,
) -> RobustnessReport:
    """Score each variant's recordings and failed streams (as answered wrongly) and the drop from the
    clean run. ``background``: the data set's "no event" class (``audio_files``' ``background_class``;
    None: a class named "background", if any), which F1 leaves out (module docstring)."""
    results = []
    rule = "no point was scored: every stream failed at every point (F1 = 0 whatever the classes counted)"
    for variant in variants:
        recordings, failed = outcomes[variant.name]
        failures = [
            Failure(stream_id=f.stream_id, frame=f.frame if f.frame is not None else 0, error=f.error)
            for f in failed
        ]
        scored, f1, accuracy = None, 0.0, 0.0  # every stream failed: nothing right (module docstring)
        if any(r.role == "test" for r in recordings):
            scored = score_online(recordings, config.online, classes, failed, background)
            rule = scored.scored_rule or rule  # the same classes at every point
            point = next(
                p
                for p in scored.overall.accuracy.curves["frame"]["strict"]
                if p.delta_ms == config.report_delta_ms
            )
            f1, accuracy = point.f1_micro, point.accuracy
        results.append(
            PointResult(
                variant=variant,
                f1=f1,
                accuracy=accuracy,
                abs_drop=None,
                rel_drop=None,
                failure=failures[0] if failures else None,
                failures=failures,
                score=scored,
            )
        )
    clean, points = results[0], results[1:]
    if clean.f1 is not None:
        for result in points:
            if result.f1 is not None:
                result.abs_drop = clean.f1 - result.f1
                result.rel_drop = result.abs_drop / clean.f1 if clean.f1 > 0 else None
    return RobustnessReport(
        report_delta_ms=config.report_delta_ms, f1_counts=rule, clean=clean, points=points
    )
