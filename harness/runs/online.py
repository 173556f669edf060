"""The online protocol (protocols/online.py; seed 004 §6.2.2) as the harness runs it: every stream frame
by frame through the engine, in this process or an isolated worker (:mod:`streambench.harness.runs.session`),
scored into ``result.json`` with the per-frame arrays in ``arrays.npz``; an interrupted run is resumed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel
from rich.console import Console

from streambench.harness.execution.config import RunConfig, run_id_for
from streambench.harness.execution.event_log import EVENTS_FILE
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.io.safe_text import safe
from streambench.harness.report.bundle import RunBundle, SectionSpec
from streambench.harness.report.sections_events import events_section
from streambench.harness.report.sections_quality import detection_section, reliability_section
from streambench.harness.report.sections_run import (
    breakdown_section,
    f1_section,
    latency_section,
    summary_section,
    timeline_section,
)
from streambench.harness.results.files import (
    ARRAYS_FILE,
    RESULT_FILE,
    ResultFileError,
    RunResult,
    load_recordings,
    load_result,
)
from streambench.harness.results.headline import CAPTION, LATENCY_KEYS, Figure, interval_fields
from streambench.harness.results.normalisation import check_baseline
from streambench.harness.results.summary import host_timing_warnings, print_summary
from streambench.harness.runs.interface import Outcome, RunContext, RunProtocol
from streambench.harness.runs.session import finished_run, resume_run, run_session
from streambench.protocols.online import OnlineConfig
from streambench.protocols.online_speed import measured_latency

__all__ = ["EVENTS_CAPTION", "OnlineProtocol", "event_figures", "online_figures", "online_warnings"]

EVENTS_CAPTION = (
    "; F1 counts the scored classes (all but the data's background: result.json metrics.scored_classes); "
    "events: every event class pooled, onset delay = when the detection's prediction finished minus when "
    "the event started (computation-aware clock, replayed latencies), event F1 with the onset collar"
)


class OnlineProtocol(RunProtocol[None, RunResult]):
    """Its configuration is the run's own (``RunConfig.protocol``); its measurement a session of the run
    (:func:`~streambench.harness.runs.session.run_session`: an event log, a lock, resume)."""

    name = "online"
    summary = "frame by frame at batch 1: F1@Δt, latency, FPS, RTF, energy, memory (seed 004 §6.2.2)"
    result_file = RESULT_FILE
    figure_keys = (
        r"f1@\d+(\.\d+)?ms|frame_acc|mean|p50|p95|p99|fps|rtf|energy|event_f1|onset_delay_(p50|p90|max)"
        r"|event_miss_rate|false_alarms_per_h",
        "f1@<Δt>ms, frame_acc, mean, p50, p95, p99, fps, rtf, energy, event_f1, onset_delay_p50, "
        "onset_delay_p90, onset_delay_max, event_miss_rate, false_alarms_per_h",
    )
    result_model = RunResult
    caption = CAPTION + EVENTS_CAPTION
    run_options = frozenset({"isolate", "sealed", "on_error", "baseline"})
    sweepable = True

    def prepare(self, run: RunConfig, config: None) -> tuple[RunConfig, None]:
        """Every input is checked before the first stream: ``--baseline`` names a readable run
        (:func:`~streambench.harness.results.normalisation.check_baseline`)."""
        if run.baseline is not None:
            check_baseline(run.baseline)
        return run, config

    def new_run_id(self, run: RunConfig) -> str:
        """The default protocol's run ids name no protocol."""
        return run.run_id or run_id_for(run.adapter)

    def check_new(self, run: RunContext[None, RunResult]) -> None:
        """Nothing here: the session refuses a run directory that holds a run, under the run's lock."""

    def measure(self, run: RunContext[None, RunResult]) -> RunResult:
        return run_session(run)

    def can_resume(self, run_dir: Path) -> bool:
        return (run_dir / EVENTS_FILE).is_file()

    def resume(self, run_dir: Path, progress: ProgressHook | None) -> Outcome[RunResult]:
        finished = finished_run(run_dir)
        if finished is not None:  # a no-op that says so: nothing rerun, nothing rewritten
            return Outcome(finished, run_dir, None, unchanged=True)
        result, recordings, written = resume_run(run_dir, progress)
        return Outcome(result, written, recordings)

    def load_result(self, run_dir: Path) -> RunResult:
        return load_result(run_dir)

    def print_result(self, console: Console, outcome: Outcome[RunResult]) -> int:
        """The summary; exit 130 if the run was interrupted (Ctrl-C, SIGTERM), 2 if ``--baseline`` could
        not be read once the streams were measured (the run is written), 1 if the
        adapter failed anywhere (``--on-error stop`` included: the run ended at a failure, not at the
        user's word), if the session's own audit failed, or if the parent's clock disagrees with the
        worker's."""
        result = outcome.result
        print_summary(console, result)
        if result.status == "incomplete" and (result.incomplete_reason or "").startswith("interrupted"):
            return 130
        if result.normalisation is not None and result.normalisation.error is not None:
            return 2
        audit_failed = result.session_audit is not None and result.session_audit.passed is False
        clocks_disagree = result.host_timing is not None and result.host_timing.verdict == "disagree"
        failed = result.failures or result.status == "incomplete" or audit_failed or clocks_disagree
        return 1 if failed else 0

    def closing_note(self, outcome: Outcome[RunResult]) -> str | None:
        result = outcome.result
        notes = []
        if result.normalisation is not None and result.normalisation.error is not None:
            notes.append(
                f"[bold red]error:[/] {safe(result.normalisation.error)}; no speed-up against it. The run is "
                f"written: {safe(str(outcome.run_dir / RESULT_FILE))}"
            )
        if result.status == "incomplete":
            notes.append(
                f"[bold yellow]incomplete:[/] {safe(result.incomplete_reason or '')}; finish it with "
                f"[bold]streambench run --resume {safe(str(outcome.run_dir))}[/]"
            )
        return "\n".join(notes) or None

    def headline(self, result: RunResult) -> list[Figure]:
        return online_figures(result)

    def frame_latencies_ns(self, run_dir: Path) -> npt.NDArray[np.int64] | None:
        """Per-frame latencies (ns) of the test streams, frames whose predict() ran (as the headline's)."""
        recordings = [r for r in load_recordings(run_dir) if r.role == "test"]
        if not recordings:
            raise ResultFileError(f"{run_dir / ARRAYS_FILE}: holds no test stream")
        return np.concatenate([measured_latency(r) for r in recordings])

    def warnings(self, result: RunResult) -> list[str]:
        return online_warnings(result)

    def incomplete_reason(self, result: RunResult) -> str | None:
        return None if result.status == "complete" else result.incomplete_reason or "incomplete"

    def read(self, run_dir: Path, bundle: RunBundle) -> None:
        """``result.json`` and, with a readable one, the recorded ``arrays.npz``."""
        if (run_dir / RESULT_FILE).is_file():
            try:
                bundle.results[self.name] = load_result(run_dir)
            except ResultFileError as exc:
                bundle.missing[self.name] = str(exc)
        else:
            bundle.missing[self.name] = f"no {RESULT_FILE} in this run directory (not an online run)"
        if self.name not in bundle.results:
            bundle.result_reason = bundle.missing[self.name]
            bundle.missing["arrays"] = f"{ARRAYS_FILE} is read only with a readable {RESULT_FILE}"
            return
        try:
            bundle.recordings = load_recordings(run_dir)
        except ResultFileError as exc:
            bundle.missing["arrays"] = str(exc)

    def report_sections(self) -> tuple[SectionSpec, ...]:
        return (
            SectionSpec("summary", "Summary", summary_section),
            SectionSpec("latency", "Latency distribution", latency_section),
            SectionSpec("timeline", "Latency over the run", timeline_section),
            SectionSpec("f1", "F1@Δt", f1_section),
            SectionSpec("events", "Event detection", events_section),
            SectionSpec("breakdown", "Latency breakdown", breakdown_section),
            SectionSpec("reliability", "Reliability diagram", reliability_section),
            SectionSpec("detection", "DET and ROC", detection_section),
        )

    def sweep_row(
        self, figures: dict[str, float | None], point: str | None
    ) -> tuple[dict[str, float | None], dict[str, float | None]]:
        quality = {k: figures.get(k) for k in ("f1@0ms", "f1@100ms", "frame_acc")}
        return quality, {k: figures.get(k) for k in sorted(LATENCY_KEYS)}

    def sweep_trees(
        self, run_tree: dict[str, Any], protocol_tree: dict[str, Any], seed: int, point: Any
    ) -> None:
        run_tree["protocol"] = protocol_tree  # the online protocol's configuration is the run's own

    def sweep_config(self, protocol_tree: dict[str, Any], run: RunConfig) -> BaseModel | None:
        OnlineConfig.model_validate(protocol_tree)  # validated here for its error message; it is run.protocol
        return None


def online_figures(result: RunResult) -> list[Figure]:
    """F1@Δt per Δt (Strict, frame units, micro; seed 004 §6.2.2 (1)) with the bootstrap interval over
    streams of :class:`streambench.protocols.online.Headline`; frame accuracy (offline view, §6.3 table 6.3);
    per-frame latency mean with its interval and p50 / p95 / p99 with their sample count (§6.2.2 (2)); FPS = 1
    / mean latency, whose interval is the mean's mapped through ``1/x`` (a percentile bootstrap interval is
    carried through a monotone transform; Efron & Tibshirani 1993, §13.3); RTF with its interval; GPU energy
    per frame (§6.3.3), ``null`` with the reason where it was not measured."""
    metrics = result.metrics
    head, speed = metrics.headline, metrics.overall.speed
    lat = speed.latency
    figures = []
    for delta, interval in zip(result.protocol_config.deltas_ms, head.f1_strict, strict=True):
        figures.append(
            Figure(
                key=f"f1@{delta:g}ms",
                label=f"F1@{delta:g}ms",
                unit="%",
                better="higher",
                value=interval.estimate,
                n_frames=metrics.overall.accuracy.num_frames,
                **interval_fields(interval),
            )
        )
    figures.append(
        Figure(
            key="frame_acc",
            label="frame accuracy",
            unit="%",
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
            **interval_fields(mean),
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
        fps_interval = {**interval_fields(mean), "low": 1e3 / mean.high, "high": 1e3 / mean.low}
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
            **interval_fields(head.rtf),
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
    figures.extend(served_model_figures(result))
    figures.extend(event_figures(result))
    return figures


def served_model_figures(result: RunResult) -> list[Figure]:
    """A served model only (docs/serving.md): the server's own model-only figure p50 / p95 and the serving
    overhead (end to end - model-only, per frame) p50 / p95, over the frames whose reply carried the
    server's figure; null with the reason where none did. The latency figures above are end to end."""
    served = result.metrics.overall.speed.served
    if served is None:
        return []
    rows = (
        ("model_only", "server model-only", served.model_only and served.model_only.p50_ms,
         served.model_only and served.model_only.p95_ms),
        ("serving_overhead", "serving overhead", served.overhead_p50_ms, served.overhead_p95_ms),
    )  # fmt: skip
    return [
        Figure(
            key=f"{key}_{q}",
            label=f"{label} {q}",
            unit="ms",
            better="lower",
            value=value,
            reason=None if value is not None else served.reason,
            n_frames=served.frames_with_figure or None,
        )
        for key, label, p50, p95 in rows
        for q, value in (("p50", p50), ("p95", p95))
    ]


def event_figures(result: RunResult) -> list[Figure]:
    """The event-level headline (protocols/online_events.py), every event class pooled: event F1
    with the onset collar, onset delay p50 / p90 / max of the matched events on the computation-aware
    clock, the share of reference events missed and false alarms per hour; one null ``event_f1`` with the
    reason where the data has no event labels."""
    events = result.metrics.events
    if events is None:
        reason = result.metrics.events_reason or "not computed: a result written before 0.2.0"
        return [
            Figure(key="event_f1", label="event F1", unit="%", better="higher", value=None, reason=reason)
        ]
    pooled, onset = events.overall, events.overall.onset_delay
    no_match = "no reference event was matched"
    figures = [
        Figure(
            key="event_f1",
            label=f"event F1 (onset ±{1e3 * events.settings.t_collar_s:g} ms)",
            unit="%",
            better="higher",
            value=pooled.f1,
            reason=None if pooled.f1 is not None else "no reference and no detected event",
        )
    ]
    for key, name in (("p50", "median_ms"), ("p90", "p90_ms"), ("max", "max_ms")):
        figures.append(
            Figure(
                key=f"onset_delay_{key}",
                label=f"onset delay {key} (compute-aware)",
                unit="ms",
                better="lower",
                value=getattr(onset, name) if onset is not None else None,
                reason=None if onset is not None else no_match,
            )
        )
    figures.append(
        Figure(
            key="event_miss_rate",
            label="missed events",
            unit="%",
            better="lower",
            value=pooled.missed / pooled.reference_events if pooled.reference_events else None,
            reason=None if pooled.reference_events else "no reference event",
        )
    )
    figures.append(
        Figure(
            key="false_alarms_per_h",
            label="false alarms per hour",
            unit="",
            better="lower",
            value=pooled.false_alarms_per_hour,
            reason=None if pooled.false_alarms_per_hour is not None else "no stream time scored",
        )
    )
    return figures


def online_warnings(online: RunResult) -> list[str]:
    warnings = list(online.metrics.headline.warnings)
    if getattr(online, "status", "complete") != "complete":  # a run stopped early scores what finished
        reason = getattr(online, "incomplete_reason", None)
        warnings.insert(
            0, "incomplete run" + (f": {reason}" if reason else "") + "; figures cover the finished streams"
        )
    warnings.extend(host_timing_warnings(online))
    return warnings
