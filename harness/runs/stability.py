"""Runs the stability protocol (protocols/stability.py, seed 000 §1-5) and the event metrics of the same run.

The engine records every ``Prediction.features`` (``EngineConfig.record=("features",)``, an unpaced run);
the recordings are scored twice, by the stability protocol (Jaccard, lifetime in both conventions,
transient ratio, turnover, flips, and flips against 2K(1 − J), per stream and overall) and by the online
protocol (F1@Δt, seed 004 §6.2.2; the classes the online F1 counts, all but the background, the
data's ``background_class`` bound as in an online run), so a more stable code is judged side by side with
what it cost in accuracy (seed 000 "关键洞察": stability against EER). Writes
``results/<run_id>/stability.json`` and the recordings (features included) as ``stability_arrays.npz``
for re-scoring.

``streambench run --protocol stability`` runs the TopK encoder (``topk-encoder``) unless another
adapter is named: the comparison of seed 000 is one command per variant,
``--adapter topk-encoder --option variant=timestep`` and ``--option variant=window``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field
from rich.console import Console
from rich.table import Table

from streambench.harness.datasets.catalog import DataConfig, background_class_of
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.io.atomic import atomic_write
from streambench.harness.io.config_file import load_protocol_config as load_shared_protocol_config
from streambench.harness.io.safe_text import safe
from streambench.harness.results.files import EnvironmentRecord
from streambench.harness.results.headline import Figure
from streambench.harness.runs.interface import Outcome, RunContext, RunProtocol
from streambench.protocols import online
from streambench.protocols.online import CurvePoint
from streambench.protocols.recording import StreamRecording, to_arrays
from streambench.protocols.stability import StabilityConfig, StabilityFigures, StabilityReport
from streambench.protocols.stability import score as score_stability

__all__ = [
    "ARRAYS_FILE",
    "DEFAULT_ADAPTER",
    "RESULT_FILE",
    "EventSummary",
    "StabilityProtocol",
    "StabilityResult",
    "cli_run",
    "event_summary",
    "execute_stability",
    "print_result",
]

RESULT_FILE = "stability.json"
ARRAYS_FILE = "stability_arrays.npz"
DEFAULT_ADAPTER = "topk-encoder"
"""What ``--protocol stability`` runs when the adapter is left at the CLI default (``reference``, which
emits no features)."""


F1_NOT_RECORDED = "not recorded (a file written before the stability run named the classes its F1 counts)"
"""``EventSummary.f1_counts`` of a file written before the field."""


class EventSummary(BaseModel):
    """The online protocol's figures of the same recordings (frame units, Strict): every F1 counts the
    classes the online F1 counts (``f1_counts``; protocols/online.py)."""

    curve: list[CurvePoint] = Field(description="F1@Δt / Acc@Δt over all test streams")
    segment_f1_micro: float = Field(description="offline segment F1 over the classes of f1_counts")
    frame_accuracy: float
    stream_f1: dict[str, list[float]] = Field(
        description="per stream: F1 at each Δt of the curve, over the classes of f1_counts"
    )
    f1_counts: str = Field(
        F1_NOT_RECORDED, description="the classes every F1 counts, in words (OnlineScore.scored_rule)"
    )


def event_summary(
    recordings: Sequence[StreamRecording],
    protocol: online.OnlineConfig,
    classes: Sequence[str],
    data: DataConfig,
) -> EventSummary:
    """The online protocol's score of the stability run's recordings, the data's ``background_class``
    (``audio_files``; None: a class named "background") bound as an online run binds it."""
    scored = online.score(recordings, protocol, classes, background=background_class_of(data))
    return EventSummary(
        curve=scored.overall.accuracy.curves["frame"]["strict"],
        segment_f1_micro=scored.overall.accuracy.segment_f1_micro,
        frame_accuracy=scored.overall.accuracy.frame_accuracy,
        stream_f1={
            s.stream_id: [p.f1_micro for p in s.accuracy.curves["frame"]["strict"]] for s in scored.streams
        },
        f1_counts=scored.scored_rule or F1_NOT_RECORDED,
    )


class StabilityResult(EnvironmentRecord):
    """``results/<run_id>/stability.json``."""

    adapter_name: str = Field(description="the adapter's own name (AdapterInfo.name)")
    config: StabilityConfig
    run: RunConfig
    report: StabilityReport
    events: EventSummary


def execute_stability(
    config: RunConfig, stability: StabilityConfig, progress: ProgressHook | None = None
) -> tuple[StabilityResult, Path]:
    """Warm up, run every planned stream (state reset per stream) recording features, score, write."""
    outcome = StabilityProtocol().execute(config, stability, progress)
    return outcome.result, outcome.run_dir


def load_stability_config(path: Path | None) -> StabilityConfig:
    """The protocol configuration in ``path`` (.json / .toml); defaults when ``None``."""
    return load_shared_protocol_config(path, StabilityConfig, "stability")


def cli_run(
    config: RunConfig, protocol_config_file: Path | None, progress: ProgressHook | None = None
) -> tuple[StabilityResult, Path]:
    """``streambench run --protocol stability [--protocol-config FILE]``."""
    return execute_stability(config, load_stability_config(protocol_config_file), progress)


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _stream_row(figures: StabilityFigures) -> list[str]:
    return [
        _num(figures.jaccard),
        _num(figures.lifetime_runs, 2),
        _num(figures.lifetime_per_feature, 2),
        _pct(figures.transient_ratio),
        _pct(figures.turnover),
        _num(figures.flips, 2),
        _num(figures.relation.bound, 2),
    ]


def print_result(console: Console, result: StabilityResult) -> int:
    """The overall figures (seed 000 §1-5, the flips relation, F1@Δt of the same run), then one row per
    stream. Exit code 0: the protocol measures, it does not judge."""
    report, events = result.report, result.events
    overall, rel = report.overall, report.overall.relation
    first, last = events.curve[0], events.curve[-1]
    title = (
        f"Temporal stability (seed 000) · {safe(result.adapter_name)} · {report.feature_kind}, "
        f"K = {report.k} of {report.num_features} · {overall.num_frames} frames, {overall.num_steps} steps"
    )
    caption = f"F1 counts {safe(events.f1_counts)}, as the online F1@Δt"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for name in ("figure", "value", "definition"):
        table.add_column(name, justify="right" if name == "value" else "left")
    rows = [
        ("Jaccard (adjacent frames)", _num(overall.jaccard), "§1"),
        ("lifetime, mean over runs", _num(overall.lifetime_runs, 2), "§2 code, frames (default)"),
        ("lifetime, mean over features", _num(overall.lifetime_per_feature, 2), "§2 steps 1-3, frames"),
        ("transient ratio %", _pct(overall.transient_ratio), f"§3 ({overall.num_runs} runs)"),
        ("turnover % (new / K)", _pct(overall.turnover), "§4"),
        ("flips per step", _num(overall.flips, 2), "§5"),
        ("2K(1 − Jaccard)", _num(rel.bound, 2), "数学关系 1: an upper bound"),
        ("flips / 2K(1 − J)", _num(rel.ratio, 2), "the seed's relation, measured"),
        ("2K(1 − J)/(1 + J)", _num(rel.exact_k, 2), "exactly K per frame: exact per step"),
        (f"F1@{first.delta_ms:g} ms %", _pct(first.f1_micro), "seed 004 Strict, frame (classes: below)"),
        (f"F1@{last.delta_ms:g} ms %", _pct(last.f1_micro), "the same, same run"),
        ("segment F1 %", _pct(events.segment_f1_micro), "offline view, seed 004"),
        ("frame accuracy %", _pct(events.frame_accuracy), "offline view, seed 004"),
    ]
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if report.streams:
        per_stream = Table(title="per stream", title_justify="left")
        heads = ("stream", "J", "life", "life/f", "trans%", "turn%", "flips", "2K(1-J)", "F1@0%")
        for name in heads:
            per_stream.add_column(name, justify="left" if name == "stream" else "right")
        for stream in report.streams:
            f1 = events.stream_f1.get(stream.stream_id)
            per_stream.add_row(
                safe(stream.stream_id), *_stream_row(stream.figures), _pct(f1[0]) if f1 else "–"
            )
        console.print(per_stream)
    for stream_id, why in report.skipped.items():
        console.print(f"skipped {safe(stream_id)}: {safe(why)}", highlight=False)
    return 0


def headline_figures(result: StabilityResult) -> list[Figure]:
    """The run store's headline of a stability run: seed 000's figures over all test streams and the
    event F1 of the same run (``streambench runs`` / ``show`` / ``compare``)."""
    overall = result.report.overall
    rows: list[tuple[str, str, float | None, str]] = [
        ("jaccard", "Jaccard (adjacent frames)", overall.jaccard, "higher"),
        ("flips", "flips per step", overall.flips, "lower"),
        ("lifetime", "lifetime, mean over runs (frames)", overall.lifetime_runs, "higher"),
        ("transient", "transient ratio", overall.transient_ratio, "lower"),
    ]
    figures = [
        Figure(
            key=f"stability.{key}",
            label=label,
            unit="",
            better="higher" if better == "higher" else "lower",
            value=value,
            reason=None if value is not None else "undefined: no adjacent frames with features",
            n_frames=overall.num_frames,
        )
        for key, label, value, better in rows
    ]
    first = result.events.curve[0]
    figures.append(
        Figure(
            key=f"f1@{first.delta_ms:g}ms",
            label=f"F1@{first.delta_ms:g}ms (same run)",
            unit="%",
            better="higher",
            value=first.f1_micro,
        )
    )
    return figures


class StabilityProtocol(RunProtocol[StabilityConfig, StabilityResult]):
    name = "stability"
    run_options = frozenset({"isolate", "sealed"})  # sealed by default (execution/model_runner.py)
    summary = "seed 000 temporal stability of sparse features: Jaccard, lifetime, turnover, flips"
    result_file = RESULT_FILE
    figure_keys = (r"stability\.[^\s,:]+|f1@\d+(\.\d+)?ms", "stability.<figure>")
    result_model = StabilityResult
    config_model = StabilityConfig
    config_file = True
    default_adapter = DEFAULT_ADAPTER
    caption = (
        "stability: f1@<Δt>ms is the online F1@Δt (Strict, frame) of the same run, counting the classes the "
        "online F1 counts (all but the data's background: stability.json events.f1_counts)"
    )

    def prepare(self, run: RunConfig, config: StabilityConfig) -> tuple[RunConfig, StabilityConfig]:
        if run.engine.pacing == "paced":
            raise ValueError(
                "the stability protocol records features: it needs an unpaced run (--pacing unpaced)"
            )
        return super().prepare(run, config)

    def measure(self, run: RunContext[StabilityConfig, StabilityResult]) -> StabilityResult:
        """Warm up, run every planned stream (state reset per stream) recording features, score; the
        recordings go to ``stability_arrays.npz`` beside ``stability.json``."""
        by_id = {s.stream_id: s for s in run.streams()}
        planned = online.plan(run.run.protocol, list(by_id)).streams
        recordings = []
        with run.model(record=("features",)) as model:
            for done, item in enumerate(planned, start=1):
                recordings.append(model.run_stream(by_id[item.stream_id], item.role))  # resets the state
                run.step(done, len(planned), item.stream_id)
        report = score_stability(recordings, run.config)
        classes = run.streams()[0].classes
        events = event_summary(recordings, run.run.protocol, classes, run.run.data)
        result = run.result(
            adapter_name=model.info.name, config=run.config, run=run.run, report=report, events=events
        )
        arrays = to_arrays(recordings)
        save = lambda f: np.savez_compressed(f, **arrays)  # type: ignore[arg-type]  # noqa: E731
        atomic_write(run.directory() / ARRAYS_FILE, save)
        return result

    def print_result(self, console: Console, outcome: Outcome[StabilityResult]) -> int:
        return print_result(console, outcome.result)

    def headline(self, result: StabilityResult) -> list[Figure]:
        return headline_figures(result)
