"""The headline figures of a run, whatever protocol produced it (DESIGN.md "Results"; seed 004 §6.3).

One shape for every result kind (:class:`Figure`, :class:`RunHeadline`), so the run store, the markdown
summary and the comparison need not know the protocols. Each protocol says what its figures are
(:meth:`streambench.harness.runs.interface.RunProtocol.headline`): for example the online protocol's F1@Δt
with their bootstrap intervals, latency percentiles with their sample count, FPS, RTF and energy; the
robustness protocol's F1 at each perturbation point; the causality protocol's checks as 1 / 0.

Nothing is derived that was not measured: a figure without a value carries ``reason``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from streambench.harness.datasets.provenance import Framing
from streambench.harness.results.quality import MeasurementQuality

if TYPE_CHECKING:  # the metrics package is not imported to read headlines (streambench runs, show)
    from streambench.protocols.metrics.bootstrap import Interval

__all__ = ["CAPTION", "LATENCY_KEYS", "DataRecord", "Figure", "RunHeadline", "interval_fields", "run_title"]

CAPTION = (
    "F1@Δt: Strict, frame units, micro, algorithmic clock (docs/metrics.md); frame accuracy: offline view; "
    "latency: host time of predict() per frame; intervals: percentile bootstrap over streams"
)
LATENCY_KEYS = frozenset({"mean", "p50", "p95", "p99", "fps", "rtf"})
"""Figures computed from the per-frame latencies: a comparison gates them with a rank test."""


class Figure(BaseModel):
    """One headline figure: its value (``None`` with ``reason`` when not measured), its bootstrap
    interval over ``n_streams`` streams where the result has one, and the sample count behind it."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(description="stable name used by --fail-on: f1@100ms, p95, check[occlusion], ...")
    label: str
    unit: Literal["", "%", "ms", "fps", "x", "J", "check"] = Field(
        description='"%": a share in [0, 1] (F1, accuracy, EER), stored as a fraction, shown as percent'
    )
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


class DataRecord(BaseModel):
    """What a comparison needs to know of the data a run scored: the data set's kind, the content hash of
    its streams, and its seed with where the seed came from."""

    model_config = ConfigDict(extra="forbid")

    kind: str | None = Field(None, description="the data set's kind (synthetic, audio_files, ...)")
    hash: str | None = Field(None, description="content hash of the scored streams (manifest's data_hash)")
    seed: int | None = Field(None, description="the data set's seed; null for data read from files")
    seed_kind: Literal["secret", "public"] | None = Field(
        None, description="secret: drawn for the run, written after scoring; public: given, so rebuildable"
    )
    framing: Framing | None = Field(
        None, description="frame rate, samples per frame and sample rate; null in older entries"
    )

    def public_seed_note(self) -> str | None:
        """One short line for a run whose seed was given (``public seed``); None otherwise."""
        if self.seed_kind != "public":
            return None
        return (
            f"public seed {self.seed}: anyone can rebuild the scored streams (a model may have trained "
            "on them)"
        )


def run_title(name: str | None, adapter: str) -> str:
    """How reports and comparisons name a run before its id: the model's name (the user's ``name`` option,
    else the adapter's ``AdapterInfo.name``), with the adapter it ran through when that differs
    (``kws-spotter (torch-module)``); the adapter alone where no name is recorded."""
    return adapter if not name or name == adapter else f"{name} ({adapter})"


class RunHeadline(BaseModel):
    """The headline of one run directory: every result file in it, figures in a fixed order."""

    model_config = ConfigDict(extra="forbid")

    run: str = Field(description="the run directory's name")
    run_id: str
    protocols: list[str] = Field(description="the protocols whose result files the run holds")
    adapter: str
    name: str | None = Field(
        None, description="the model's name (the name option, else AdapterInfo.name); null in older entries"
    )
    created_at: datetime
    fingerprint: str | None
    fingerprint_reason: str | None = None
    figures: list[Figure]
    warnings: list[str] = Field(default_factory=list)
    measurement: MeasurementQuality | None = Field(
        None, description="the run's measurement-quality verdict (VALID / INVALID), where it records one"
    )
    captions: list[str] = Field(
        default_factory=list, description="how the figures are defined, one line per protocol that says"
    )
    data: DataRecord | None = Field(None, description="the data the run scored; null in older index entries")
    execution: str | None = Field(
        None, description="where the adapter ran: sealed, isolated or in-process; null in older entries"
    )
    threads: str | None = Field(
        None, description="the thread setting that governed the model; null in older entries"
    )

    @property
    def title(self) -> str:
        """The run's name before its id (:func:`run_title`)."""
        return run_title(self.name, self.adapter)

    def figure(self, key: str) -> Figure | None:
        return next((f for f in self.figures if f.key == key), None)


def interval_fields(interval: Interval) -> dict[str, float | int]:
    return {
        "low": interval.low,
        "high": interval.high,
        "confidence": interval.confidence,
        "n_streams": interval.n_streams,
    }
