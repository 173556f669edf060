"""Runs the robustness protocol's sweep: every variant's perturbed streams through one engine.

The model is built and warmed up once, in a sealed worker by default (harness/execution/model_runner.py);
each variant's streams are the clean streams wrapped by
harness/datasets/perturb.py. An adapter error on a stream of a variant is recorded as that point's failure
(stream, frame, error), the point goes on with its next stream and the sweep with its next point (seed 004
§6.2.2 (3): "模型需处理缺失，不应崩溃"); the failed stream counts in the point's F1 as answered wrongly
(protocols/robustness.py), never left out. The F1 counts the classes the online F1
counts, the data's ``background_class`` bound as in an online run (every class but the background).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console

from streambench.adapters.contract import Stream
from streambench.harness.datasets.catalog import background_class_of
from streambench.harness.datasets.perturb import perturb
from streambench.harness.execution.adapter_errors import AdapterError
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook, failed_stream
from streambench.harness.report.bundle import RunBundle, SectionSpec
from streambench.harness.report.figures_quality import robustness_figure
from streambench.harness.report.html import Markup, absent, figure_block, num, table
from streambench.harness.results.files import EnvironmentRecord
from streambench.harness.results.headline import Figure
from streambench.harness.results.summary import print_robustness
from streambench.harness.runs.interface import Outcome, RunContext, RunProtocol, SweepPoint
from streambench.protocols import robustness
from streambench.protocols.recording import FailedStream, StreamRecording, StreamRole

__all__ = [
    "RESULT_FILE",
    "RobustnessProtocol",
    "RobustnessResult",
    "execute_robustness",
    "robustness_figures",
]

RESULT_FILE = "robustness.json"


class RobustnessResult(EnvironmentRecord):
    """``results/<run_id>/robustness.json``."""

    config: robustness.RobustnessConfig
    run: RunConfig
    report: robustness.RobustnessReport


def execute_robustness(
    config: RunConfig, sweep: robustness.RobustnessConfig, progress: ProgressHook | None = None
) -> tuple[RobustnessResult, Path]:
    """Run the sweep of ``sweep`` on ``config``'s adapter and data; write ``robustness.json``."""
    outcome = RobustnessProtocol().execute(config, sweep, progress)
    return outcome.result, outcome.run_dir


def _run_variant(
    run_stream: Callable[[Stream, StreamRole], StreamRecording],
    streams: Sequence[Stream],
    variant: robustness.Variant,
) -> tuple[list[StreamRecording], list[FailedStream]]:
    """The point's recordings, and its failed streams (labels and clock from the perturbed stream, to be
    scored as answered wrongly); a failure ends that stream, not the point."""
    recordings, failed = [], []
    for index, stream in enumerate(streams):
        perturbed = perturb(stream, list(variant.perturbations), stream_index=index)
        try:
            recordings.append(run_stream(perturbed, "test"))
        except AdapterError as exc:
            failed.append(failed_stream(perturbed, "test", exc.frame, exc.problem))
    return recordings, failed


def _failed_text(point: robustness.PointResult) -> str:
    """The point's failures as one line: how many streams failed, and the first."""
    failure = point.failure
    if failure is None:
        return ""
    count = max(len(point.failures), 1)
    scored = "scored as answered wrongly" if point.f1 is not None else "not scored"
    return (
        f"{count} stream(s) failed ({scored}); first: stream {failure.stream_id}, frame {failure.frame}: "
        f"{failure.error}"
    )


_POINT_AXES = {"missing": "missing_rates_pct", "audio_delay": "audio_delays_ms", "jitter": "jitters_ms"}


class RobustnessPoint(BaseModel):
    """One perturbation point of a sweep: Missing-Rate@p% (``missing``), Audio-Delay@Δt, Jitter@±δ (seed
    004)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    axis: Literal["missing", "audio_delay", "jitter"]
    value: float = Field(ge=0)

    @property
    def name(self) -> str:
        """``axis=value``, as in the robustness headline's keys (``f1[missing=30]``)."""
        return f"{self.axis}={self.value:g}"


_Config = robustness.RobustnessConfig | None
"""Its configuration; None: the run's online configuration swept over seed 004's default points."""


class RobustnessProtocol(RunProtocol[_Config, RobustnessResult]):
    name = "robustness"
    summary = "F1 under missing modality, audio delay and clock jitter, against the clean run (§6.2.2 (3))"
    result_file = RESULT_FILE
    figure_keys = (r"f1\[[^\[\],:]+\]", "f1[<robustness point>] (e.g. f1[missing=30])")
    result_model = RobustnessResult
    config_model = robustness.RobustnessConfig
    run_options = frozenset({"isolate", "sealed"})
    sweepable = True
    caption = (
        "robustness: f1[<point>] is F1@report_delta_ms (Strict, frame) at that point, counting the classes "
        "the online F1 counts (all but the data's background: robustness.json report.f1_counts)"
    )

    def load_config(self, path: Path | None) -> _Config:
        return None  # the sweep follows the run's online configuration: built in measure()

    def measure(
        self, run: RunContext[robustness.RobustnessConfig | None, RobustnessResult]
    ) -> RobustnessResult:
        """Every variant's perturbed streams through one model, built and warmed up once (sealed by default:
        the clean stream of a perturbed one never exists in the adapter's process)."""
        sweep = run.config or robustness.RobustnessConfig(online=run.run.protocol)
        streams = run.streams()
        variants = robustness.plan(sweep)
        outcomes: dict[str, tuple[Sequence[StreamRecording], Sequence[FailedStream]]] = {}
        with run.model() as model:
            for done, variant in enumerate(variants, start=1):
                outcomes[variant.name] = _run_variant(model.run_stream, streams, variant)
                run.step(done, len(variants), variant.name)
        background = background_class_of(run.run.data)
        report = robustness.score(outcomes, variants, sweep, streams[0].classes, background)
        return run.result(config=sweep, run=run.run, report=report)

    def print_result(self, console: Console, outcome: Outcome[RobustnessResult]) -> int:
        print_robustness(console, outcome.result.report)
        return 0

    def headline(self, result: RobustnessResult) -> list[Figure]:
        return robustness_figures(result)

    def report_sections(self) -> tuple[SectionSpec, ...]:
        return (SectionSpec("robustness", "Robustness", robustness_section),)

    def sweep_row(
        self, figures: dict[str, float | None], point: str | None
    ) -> tuple[dict[str, float | None], dict[str, float | None]]:
        if point is None:
            return dict(figures), {}
        return {k: figures.get(k) for k in ("f1[clean]", f"f1[{point}]")}, {}

    def sweep_points(self, points: list[dict[str, Any]]) -> list[SweepPoint | None]:
        """One run per perturbation point: a configuration whose axes hold that point and nothing else."""
        if not points:
            return [None]
        found: list[SweepPoint | None] = []
        for given in points:
            point = RobustnessPoint.model_validate(given)
            updates = {f: [point.value] if a == point.axis else [] for a, f in _POINT_AXES.items()}
            found.append(SweepPoint(point.name, updates))
        return found

    def sweep_trees(
        self, run_tree: dict[str, Any], protocol_tree: dict[str, Any], seed: int, point: SweepPoint | None
    ) -> None:
        protocol_tree["seed"] = seed  # the injectors' seed
        super().sweep_trees(run_tree, protocol_tree, seed, point)

    def sweep_config(self, protocol_tree: dict[str, Any], run: RunConfig) -> BaseModel | None:
        protocol_tree.setdefault("online", run.protocol.model_dump(mode="json"))
        return robustness.RobustnessConfig.model_validate(protocol_tree)


def robustness_figures(result: RobustnessResult) -> list[Figure]:
    """F1@Δt at every sweep point (Missing-Rate@p%, Audio-Delay@Δt, Jitter@±δ; seed 004 §6.2.2 (3)), the
    streams the adapter failed on counted as answered wrongly; ``null`` with the adapter's error only in
    files written before that rule (a failed point had no F1)."""
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
                unit="%",
                better="higher",
                value=point.f1,
                reason=reason if point.f1 is None else None,
                n_frames=point.score.overall.accuracy.num_frames if point.score is not None else None,
            )
        )
    return figures


def robustness_section(bundle: RunBundle) -> Markup:
    rob = bundle.results.get("robustness")
    if not isinstance(rob, RobustnessResult):
        return absent(
            bundle.missing.get("robustness", "no robustness.json")
            + " — run `streambench run --protocol robustness --run-id <this run>` to add one"
        )
    report = rob.report
    caption = (
        f"F1@{report.report_delta_ms:g} ms (Strict, frame) under each perturbation of the sweep, "
        f"adapter {rob.adapter}; F1 counts {report.f1_counts}, as the online F1@Δt; "
        "dashed: the clean run. A stream the adapter failed on (it raised) "
        "counts in its point's F1 as answered wrongly on every frame, never left out; such points are "
        "marked with a red x and their first failure is listed."
    )
    rows = []
    for point in [report.clean, *report.points]:
        unmeasured = "failed" if point.f1 is None else None  # a file written before failed streams counted
        rows.append(
            (
                point.variant.name,
                num(point.f1, reason="failed"),
                num(point.abs_drop, reason=unmeasured or "the clean run"),
                num(point.rel_drop, reason=unmeasured or "the clean run, or clean F1 = 0"),
                _failed_text(point),
            )
        )
    return figure_block(robustness_figure(report), caption) + table(
        ["point", "F1", "drop", "relative drop", "failure"], rows
    )
