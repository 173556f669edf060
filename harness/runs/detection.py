"""Runs the detection protocol (protocols/detection.py): every utterance through the engine, then scored.

Seed 002's evaluation, streamed: the adapter is built and warmed up once (seed 004 §6.2.2: warm-up
first), then each utterance is one stream (state reset before it, every ``predict()`` timed by
:class:`~streambench.harness.engine.Engine`). The protocol turns the recorded per-frame outputs into utterance
scores and metrics, including the EER after 0.5 s, 1 s, 2 s, ... of each utterance. Written into the run
directory: ``detection.json`` (:class:`DetectionResult`) and ``scores.txt``, the seed's score file
(``- - real 0.85``, seed 002 "File Format for Saved Scores"), which ``streambench score detection``
re-scores offline.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from streambench.harness.datasets.spoof import SpoofConfig
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.io.config_file import load_protocol_config as load_shared_protocol_config
from streambench.harness.io.safe_text import safe
from streambench.harness.io.score_file import write_score_file
from streambench.harness.results.files import EnvironmentRecord
from streambench.harness.results.headline import Figure
from streambench.harness.runs.interface import Outcome, RunContext, RunProtocol
from streambench.protocols import detection
from streambench.protocols.metrics.latency import latency_summary

__all__ = [
    "RESULT_FILE",
    "SCORE_FILE",
    "DetectionProtocol",
    "DetectionResult",
    "LatencyRecord",
    "cli_run",
    "execute_detection",
    "headline_figures",
    "print_result",
]

RESULT_FILE = "detection.json"
SCORE_FILE = "scores.txt"
DEFAULT_ADAPTER = "reference-detector"


class LatencyRecord(BaseModel):
    """Host wall time of every scored ``predict()`` call (seed 004 §6.2.2 (2)), in milliseconds."""

    model_config = ConfigDict(frozen=True)

    n: int
    mean_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float


class DetectionResult(EnvironmentRecord):
    """``results/<run_id>/detection.json``."""

    config: detection.DetectionConfig
    run: RunConfig
    score_file: str = SCORE_FILE
    warmup_frames: int
    latency: LatencyRecord
    report: detection.DetectionReport


def execute_detection(
    config: RunConfig, protocol: detection.DetectionConfig, progress: ProgressHook | None = None
) -> tuple[DetectionResult, Path]:
    """Run every utterance of ``config.data`` through ``config.adapter``; write detection.json and
    scores.txt into ``<output_dir>/<run_id>/``."""
    outcome = DetectionProtocol().execute(config, protocol, progress)
    return outcome.result, outcome.run_dir


def load_detection_config(path: Path | None) -> detection.DetectionConfig:
    """The protocol configuration in ``path`` (.json / .toml); defaults when ``None``."""
    return load_shared_protocol_config(path, detection.DetectionConfig, "detection")


def cli_run(
    config: RunConfig, protocol_config_file: Path | None, progress: ProgressHook | None = None
) -> tuple[DetectionResult, Path]:
    """``streambench run --protocol detection [--protocol-config FILE]`` (see :func:`with_defaults`)."""
    return execute_detection(with_defaults(config), load_detection_config(protocol_config_file), progress)


def with_defaults(config: RunConfig) -> RunConfig:
    """The default synthetic AVE-like data set has no utterance labels, so it is replaced by the
    synthetic spoof data set (the default one, or with the synthetic set's ``seed`` and ``num_streams``
    when those were changed); the default ``reference`` adapter by ``reference-detector``."""
    updates: dict[str, object] = {}
    if isinstance(config.data, SyntheticConfig):
        default = SyntheticConfig()
        updates["data"] = (
            SpoofConfig()
            if config.data == default
            else SpoofConfig(seed=config.data.seed, num_utterances=max(2, config.data.num_streams))
        )
    if config.adapter == "reference":
        updates["adapter"] = DEFAULT_ADAPTER
    return config.model_copy(update=updates)


def headline_figures(result: DetectionResult) -> list[Figure]:
    """The run's headline (harness/results/headline.py): EER, AUC, F1, balanced accuracy, and the EER after
    each heard-time checkpoint (``eer@0.5s`` ... ``eer@all``): shares in [0, 1] (unit ``%``, shown as
    percentages), AUC a fraction."""
    m, n = result.report.metrics, len(result.report.utterances)
    figures = [
        Figure(key="eer", label="EER", unit="%", better="lower", value=m.eer, n_streams=n),
        Figure(key="auc", label="AUC", unit="", better="higher", value=m.auc, n_streams=n),
        Figure(key="f1[real]", label="F1 (real)", unit="%", better="higher", value=m.f1, n_streams=n),
        Figure(
            key="balanced_accuracy",
            label="balanced accuracy",
            unit="%",
            better="higher",
            value=m.balanced_accuracy,
            n_streams=n,
        ),
    ]
    for p in result.report.by_heard:
        heard = "all" if p.heard_s is None else f"{p.heard_s:g}s"
        figures.append(
            Figure(
                key=f"eer@{heard}",
                label=f"EER after {'all' if p.heard_s is None else f'{p.heard_s:g} s'} heard",
                unit="%",
                better="lower",
                value=p.eer,
                reason=None if p.eer is not None else "the utterances scored by then lack a class",
                n_streams=p.n_scored,
            )
        )
    return figures


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.2f} %"


def print_result(console: Console, result: DetectionResult) -> int:
    """The metrics, the EER-versus-heard-time curve and the latency row; exit code 0."""
    r, m = result.report, result.report.metrics
    at = "the EER threshold" if result.config.threshold is None else f"threshold {m.threshold:.6g}"
    console.print(
        f"Detection: {safe(result.adapter)} on {m.n_real} real + {m.n_fake} fake utterances\n"
        f"frame score: {safe(r.extraction)} of {safe(repr(r.positive_class))}; "
        f"utterance score: {safe(r.aggregation)}",
        highlight=False,
    )
    table = Table()
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("EER", f"{_pct(m.eer)} at threshold {m.eer_threshold:.6g}")
    table.add_row(f"FAR at {at}", _pct(m.far))
    table.add_row(f"FRR at {at}", _pct(m.frr))
    table.add_row("AUC", f"{m.auc:.4f}")
    table.add_row("F1 (real)", f"{m.f1:.4f}")
    table.add_row("balanced accuracy", _pct(m.balanced_accuracy))
    console.print(table)
    curve = Table(title="EER versus heard time", title_justify="left")
    curve.add_column("heard")
    curve.add_column("utterances", justify="right")
    curve.add_column("EER", justify="right")
    curve.add_column("AUC", justify="right")
    for p in r.by_heard:
        curve.add_row(
            "all" if p.heard_s is None else f"{p.heard_s:g} s",
            str(p.n_scored),
            _pct(p.eer),
            "–" if p.auc is None else f"{p.auc:.4f}",
        )
    console.print(curve)
    lat = result.latency
    console.print(
        f"latency per frame: p50 {lat.p50_ms:.4f} ms, p95 {lat.p95_ms:.4f} ms, max {lat.max_ms:.4f} ms "
        f"over {lat.n} frames",
        highlight=False,
    )
    console.print(
        "labels: 1 = real, 0 = fake; accepted as real when score >= threshold; "
        f"score file {safe(result.score_file)}",
        highlight=False,
    )
    return 0


class DetectionProtocol(RunProtocol[detection.DetectionConfig, DetectionResult]):
    name = "detection"
    run_options = frozenset({"isolate", "sealed"})  # sealed by default (execution/model_runner.py)
    summary = "seed 002 deepfake detection: EER, AUC, F1, and the EER against the time heard"
    result_file = RESULT_FILE
    figure_keys = (
        r"eer|auc|f1\[real\]|balanced_accuracy|eer@[^\s,:]+",
        "eer, auc, f1[real], balanced_accuracy, eer@<heard>s",
    )
    result_model = DetectionResult
    config_model = detection.DetectionConfig
    config_file = True

    def prepare(
        self, run: RunConfig, config: detection.DetectionConfig
    ) -> tuple[RunConfig, detection.DetectionConfig]:
        return with_defaults(run), config

    def measure(self, run: RunContext[detection.DetectionConfig, DetectionResult]) -> DetectionResult:
        """Each utterance one stream through the model, built and warmed up once; scored, then
        ``scores.txt`` written beside ``detection.json``."""
        streams = run.streams()
        recordings = []
        with run.model() as model:
            for done, stream in enumerate(streams, start=1):
                recordings.append(model.run_stream(stream, "test"))
                run.step(done, len(streams), stream.stream_id)
        report = detection.score(recordings, run.config, streams[0].classes)
        lat = latency_summary(np.concatenate([r.latency_ns for r in recordings]))
        latency = LatencyRecord.model_validate(lat, from_attributes=True)
        result = run.result(
            config=run.config, run=run.run, warmup_frames=model.warmup_frames, latency=latency, report=report
        )
        scores = [u.score for u in report.utterances]
        write_score_file(run.directory() / SCORE_FILE, [u.label for u in report.utterances], scores)
        return result

    def print_result(self, console: Console, outcome: Outcome[DetectionResult]) -> int:
        return print_result(console, outcome.result)

    def headline(self, result: DetectionResult) -> list[Figure]:
        return headline_figures(result)
