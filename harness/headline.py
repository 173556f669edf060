"""The headline figures of a run, whatever protocol produced it (DESIGN.md "Results"; seed 004 §6.3).

One shape for every result kind, so the run store, the markdown summary and the comparison need not know
the protocols:

* **online** (``result.json``, :class:`~harness.results.RunResult`): F1@Δt per Δt (Strict, frame units,
  micro; seed 004 §6.2.2 (1)) with the bootstrap interval over streams of
  :class:`protocols.online.Headline`; frame accuracy (offline view, §6.3 table 6.3); per-frame latency
  mean with its interval and p50 / p95 / p99 with their sample count (§6.2.2 (2)); FPS = 1 / mean latency,
  whose interval is the mean's mapped through ``1/x`` (a percentile bootstrap interval is carried through
  a monotone transform; Efron & Tibshirani 1993, §13.3); RTF with its interval; GPU energy per frame
  (§6.3.3), ``null`` with the reason where it was not measured.
* **robustness** (``robustness.json``): F1@Δt at every sweep point (Missing-Rate@p%, Audio-Delay@Δt,
  Jitter@±δ; §6.2.2 (3)), ``null`` with the adapter's error where the point failed.
* **causality** (``causality.json``): every check as 1 (passed) or 0 (failed) (§6.2.3); a skipped check
  is ``null`` with the reason.

Nothing is derived that was not measured: a figure without a value carries ``reason``.
"""

from __future__ import annotations

import importlib
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.causality_run import RESULT_FILE as CAUSALITY_FILE
from harness.causality_run import CausalityResult
from harness.results import RESULT_FILE, ResultFileError, RunResult, load_protocol_result, load_result
from harness.robustness_run import RESULT_FILE as ROBUSTNESS_FILE
from harness.robustness_run import RobustnessResult
from protocols.metrics.bootstrap import Interval

__all__ = [
    "CAPTION",
    "LATENCY_KEYS",
    "RESULT_FILES",
    "Figure",
    "RunHeadline",
    "figures_of",
    "has_results",
    "load_headline",
]

CAPTION = (
    "F1@Δt: Strict, frame units, micro, algorithmic clock (seed 004 §6.2.2); frame accuracy: offline view; "
    "latency: host time of predict() per frame; intervals: percentile bootstrap over streams"
)
Kind = Literal["online", "robustness", "causality", "detection", "stability", "hysteresis"]
RESULT_FILES: dict[Kind, str] = {
    "online": RESULT_FILE,
    "robustness": ROBUSTNESS_FILE,
    "causality": CAUSALITY_FILE,
    "detection": "detection.json",
    "stability": "stability.json",
    "hysteresis": "hysteresis.json",
}
PROTOCOL_MODULES: dict[str, tuple[str, str]] = {
    "detection": ("harness.detection_run", "DetectionResult"),
    "stability": ("harness.stability_run", "StabilityResult"),
    "hysteresis": ("harness.hysteresis_run", "HysteresisResult"),
}
"""The other protocols' run modules and result models, imported when a run of theirs is read; a module
may define ``headline_figures(result) -> list[Figure]`` for its headline."""
LATENCY_KEYS = frozenset({"mean", "p50", "p95", "p99", "fps", "rtf"})
"""Figures computed from the per-frame latencies: a comparison gates them with a rank test."""


class Figure(BaseModel):
    """One headline figure: its value (``None`` with ``reason`` when not measured), its bootstrap
    interval over ``n_streams`` streams where the result has one, and the sample count behind it."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="stable name used by --fail-on: f1@100ms, p95, check[occlusion], ...")
    label: str
    unit: Literal["", "ms", "fps", "x", "J", "check"]
    better: Literal["higher", "lower"]
    value: float | None
    reason: str | None = Field(None, description="why value is null")
    low: float | None = None
    high: float | None = None
    confidence: float | None = None
    n_streams: int | None = None
    n_frames: int | None = None

    @property
    def latency(self) -> bool:
        return self.key in LATENCY_KEYS


class RunHeadline(BaseModel):
    """The headline of one run directory: every result file in it, figures in a fixed order."""

    model_config = ConfigDict(extra="forbid")

    run: str = Field(description="the run directory's name")
    run_id: str
    protocols: list[Kind]
    adapter: str
    created_at: datetime
    fingerprint: str | None
    fingerprint_reason: str | None = None
    figures: list[Figure]
    warnings: list[str] = Field(default_factory=list)

    def figure(self, key: str) -> Figure | None:
        return next((f for f in self.figures if f.key == key), None)


def _interval_fields(interval: Interval) -> dict[str, float | int]:
    return {
        "low": interval.low,
        "high": interval.high,
        "confidence": interval.confidence,
        "n_streams": interval.n_streams,
    }


def _online(result: RunResult) -> list[Figure]:
    metrics = result.metrics
    head, speed = metrics.headline, metrics.overall.speed
    lat = speed.latency
    figures = []
    for delta, interval in zip(result.protocol_config.deltas_ms, head.f1_strict, strict=True):
        figures.append(
            Figure(
                key=f"f1@{delta:g}ms",
                label=f"F1@{delta:g}ms",
                unit="",
                better="higher",
                value=interval.estimate,
                n_frames=metrics.overall.accuracy.num_frames,
                **_interval_fields(interval),
            )
        )
    figures.append(
        Figure(
            key="frame_acc",
            label="frame accuracy",
            unit="",
            better="higher",
            value=metrics.overall.accuracy.frame_accuracy,
            n_frames=metrics.overall.accuracy.num_frames,
        )
    )
    mean = head.mean_latency_ms
    figures.append(
        Figure(
            key="mean",
            label="latency mean",
            unit="ms",
            better="lower",
            value=mean.estimate,
            n_frames=lat.n,
            **_interval_fields(mean),
        )
    )
    for q in ("p50", "p95", "p99"):
        figures.append(
            Figure(
                key=q,
                label=f"latency {q}",
                unit="ms",
                better="lower",
                value=getattr(lat, f"{q}_ms"),
                n_frames=lat.n,
            )
        )
    fps_interval: dict[str, float | int] = {}
    if mean.low > 0:  # 1/x reverses the order: the interval of FPS is [1/high, 1/low] of the mean (in s)
        fps_interval = {**_interval_fields(mean), "low": 1e3 / mean.high, "high": 1e3 / mean.low}
    figures.append(
        Figure(
            key="fps",
            label="FPS",
            unit="fps",
            better="higher",
            value=lat.fps,
            reason=None if lat.fps is not None else "mean latency is 0 (below the clock's resolution)",
            n_frames=lat.n,
            **fps_interval,
        )
    )
    figures.append(
        Figure(
            key="rtf",
            label="RTF",
            unit="x",
            better="lower",
            value=head.rtf.estimate,
            **_interval_fields(head.rtf),
        )
    )
    energy = result.resources.energy_per_frame_j
    figures.append(
        Figure(
            key="energy",
            label="energy per frame",
            unit="J",
            better="lower",
            value=energy,
            reason=None if energy is not None else result.resources.energy_per_frame_reason or "not measured",
            n_frames=result.resources.frames_measured if energy is not None else None,
        )
    )
    return figures


def _robustness(result: RobustnessResult) -> list[Figure]:
    report = result.report
    figures = []
    for point in (report.clean, *report.points):
        variant = point.variant
        key = "f1[clean]" if variant.axis == "clean" else f"f1[{variant.axis}={variant.value:g}]"
        reason = None
        if point.failure is not None:
            failure = point.failure
            reason = f"adapter failed at stream {failure.stream_id} frame {failure.frame}: {failure.error}"
        figures.append(
            Figure(
                key=key,
                label=f"F1@{report.report_delta_ms:g}ms {variant.name}",
                unit="",
                better="higher",
                value=point.f1,
                reason=reason if point.f1 is None else None,
                n_frames=point.score.overall.accuracy.num_frames if point.score is not None else None,
            )
        )
    return figures


def _causality(result: CausalityResult) -> list[Figure]:
    figures = [
        Figure(
            key=f"check[{check.name}]",
            label=f"causality check {check.name}",
            unit="check",
            better="higher",
            value=1.0 if check.passed else 0.0,
            reason=None if check.passed else check.detail or "failed",
        )
        for check in result.report.checks
    ]
    for name, why in result.skipped.items():
        figures.append(
            Figure(
                key=f"check[{name}]",
                label=f"causality check {name}",
                unit="check",
                better="higher",
                value=None,
                reason=f"skipped: {why}",
            )
        )
    return figures


def figures_of(result: BaseModel) -> list[Figure]:
    """The headline figures of any result kind (the definitions are in the module docstring)."""
    if isinstance(result, RunResult):
        return _online(result)
    if isinstance(result, RobustnessResult):
        return _robustness(result)
    if isinstance(result, CausalityResult):
        return _causality(result)
    extract = getattr(importlib.import_module(type(result).__module__), "headline_figures", None)
    return list(extract(result)) if callable(extract) else []


def has_results(run_dir: Path) -> bool:
    return any((run_dir / name).is_file() for name in RESULT_FILES.values())


def _load_protocol_file(path: Path, model: type[RobustnessResult] | type[CausalityResult]) -> BaseModel:
    return load_protocol_result(path, model)


def load_headline(run_dir: Path) -> RunHeadline:
    """Read every result file of a run directory and extract its headline; names the file on error."""
    if not run_dir.is_dir():
        raise ResultFileError(f"{run_dir}: no such run directory")
    results: list[BaseModel] = []
    kinds: list[Kind] = []
    for kind, name in RESULT_FILES.items():
        path = run_dir / name
        if not path.is_file():
            continue
        kinds.append(kind)
        if kind == "online":
            results.append(load_result(path))
        elif kind in PROTOCOL_MODULES:
            module_name, class_name = PROTOCOL_MODULES[kind]
            model = getattr(importlib.import_module(module_name), class_name)
            results.append(load_protocol_result(path, model))
        elif kind == "robustness":
            loaded = _load_protocol_file(path, RobustnessResult)
            assert isinstance(loaded, RobustnessResult)
            results.append(loaded)
        else:
            loaded = _load_protocol_file(path, CausalityResult)
            assert isinstance(loaded, CausalityResult)
            results.append(loaded)
    if not results:
        raise ResultFileError(f"{run_dir}: holds none of {', '.join(RESULT_FILES.values())}")
    first = results[0]  # every result model records run_id, created_at and adapter
    fingerprint = next((f for r in results if isinstance(f := getattr(r, "fingerprint", None), str)), None)
    online = next((r for r in results if isinstance(r, RunResult)), None)
    figures = [f for r in results for f in figures_of(r)]
    when: datetime = getattr(first, "created_at")  # noqa: B009
    created = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
    return RunHeadline(
        run=run_dir.name,
        run_id=str(getattr(first, "run_id")),  # noqa: B009
        protocols=kinds,
        adapter=str(getattr(first, "adapter")),  # noqa: B009
        created_at=created.astimezone(timezone.utc),
        fingerprint=fingerprint,
        fingerprint_reason=None
        if fingerprint is not None
        else f"{' and '.join(RESULT_FILES[k] for k in kinds)} record no environment fingerprint",
        figures=figures,
        warnings=_warnings(online),
    )


def _warnings(online: RunResult | None) -> list[str]:
    if online is None:
        return []
    warnings = list(online.metrics.headline.warnings)
    if getattr(online, "status", "complete") != "complete":  # a run stopped early scores what finished
        reason = getattr(online, "incomplete_reason", None)
        warnings.insert(
            0, "incomplete run" + (f": {reason}" if reason else "") + "; figures cover the finished streams"
        )
    return warnings
