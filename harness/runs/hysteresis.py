"""Runs the router hysteresis protocol (seed 001): its planned streams through the engine, then its score.

The streams come from the protocol's own plan, rendered by ``harness/datasets/domains.py`` (not from
``RunConfig.data``) and fed frame by frame to the run's adapter, sealed in a worker by default
(``harness/execution/model_runner.py``; ``--in-process`` to debug), warmed up once on an unscored A/B
stream and reset before every stream. The engine records ``Prediction.weights`` when the adapter declares
the capability ``"weights"``; otherwise the protocol scores its class probabilities
(``StreamRecording.scores``). An experiment arm that wraps the adapter (``adapters/router.py``: weight
aggregation, hard label) is replayed here over the adapter's recording
(``harness/runs/hysteresis_arms.py``): the wrappers are the harness's code, not the model's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from rich.console import Console
from rich.table import Table

from streambench.adapters.contract import AdapterInfo, Stream
from streambench.harness.datasets.domains import (
    DomainSource,
    aba_stream,
    control_stream,
    mix_stream,
    warmup_stream,
)
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.io.config_file import load_protocol_config as load_shared_protocol_config
from streambench.harness.io.safe_text import safe
from streambench.harness.results.files import EnvironmentRecord
from streambench.harness.results.headline import Figure
from streambench.harness.runs.hysteresis_arms import replay_arm
from streambench.harness.runs.interface import Outcome, RunContext, RunProtocol
from streambench.protocols import hysteresis
from streambench.protocols.hysteresis_experiments import TITLES
from streambench.protocols.recording import StreamRecording

__all__ = [
    "DEFAULT_ADAPTER",
    "RESULT_FILE",
    "HysteresisProtocol",
    "HysteresisResult",
    "cli_run",
    "execute_hysteresis",
    "print_result",
]

RESULT_FILE = "hysteresis.json"
DEFAULT_ADAPTER = "reference-router"
"""The adapter ``streambench run --protocol hysteresis`` uses when none is named."""


class HysteresisResult(EnvironmentRecord):
    """``results/<run_id>/hysteresis.json``. ``run.data`` is not used: the streams are ``config.streams``."""

    adapter_info: AdapterInfo
    config: hysteresis.HysteresisConfig
    run: RunConfig
    report: hysteresis.HysteresisReport


def domain_source(settings: hysteresis.StreamSettings) -> DomainSource:
    return DomainSource.model_validate(settings.model_dump())


def build_stream(source: DomainSource, entry: hysteresis.PlannedStream) -> Stream:
    """The planned stream, rendered (its A frames shared with every stream of the same repeat)."""
    sid, r = entry.stream_id, entry.repeat
    if entry.layout == "aba":
        return aba_stream(source, sid, entry.len_a, entry.len_mid, repeat=r)
    if entry.layout == "control":
        return control_stream(source, sid, entry.len_a, repeat=r)
    return mix_stream(source, sid, entry.len_a, entry.len_mid, entry.a_share, repeat=r)


def execute_hysteresis(
    config: RunConfig, sweep: hysteresis.HysteresisConfig, progress: ProgressHook | None = None
) -> tuple[HysteresisResult, Path]:
    """Run every planned stream through the run's adapter (sealed by default), replay each arm's router
    wrapper over its recording here (harness/runs/hysteresis_arms.py), score, write
    ``<output_dir>/<run_id>/hysteresis.json``."""
    outcome = HysteresisProtocol().execute(config, sweep, progress)
    return outcome.result, outcome.run_dir


def load_protocol_config(path: Path | None) -> hysteresis.HysteresisConfig:
    """The protocol configuration in ``path`` (.json / .toml); defaults when ``None``."""
    return load_shared_protocol_config(path, hysteresis.HysteresisConfig, "hysteresis")


def cli_run(
    config: RunConfig, protocol_config_file: Path | None, progress: ProgressHook | None = None
) -> tuple[HysteresisResult, Path]:
    """``streambench run --protocol hysteresis [--protocol-config FILE]`` (adapter default: the reference
    router)."""
    return execute_hysteresis(config, load_protocol_config(protocol_config_file), progress)


def _lag(value: float | None, undefined: int) -> str:
    shown = "—" if value is None else f"{value:.2f}"
    return f"{shown} [dim](n/a×{undefined})[/]" if undefined and value is not None else shown


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def print_result(console: Console, result: HysteresisResult) -> int:
    """One table per experiment (seed 001's four); returns the exit code (0)."""
    report, cfg = result.report, result.config
    console.print(
        f"[bold]Router hysteresis[/] (seed 001) · adapter {safe(result.adapter)} · weights from "
        f"{safe(report.weights_source)} · threshold {cfg.threshold:g}, K = {cfg.k} · "
        f"A = {cfg.len_a} frames · "
        f"means over {cfg.repeats} repeats",
        highlight=False,
    )
    for experiment in cfg.experiments:
        rows = [r for r in report.rows if r.experiment == experiment]
        table = Table(title=TITLES[experiment], title_justify="left")
        for name in ("setting", "lag A→B", "lag B→A", "asym", "gap cos", "gap eucl", "gap DTW",
                     "loop area", "ctrl gap cos", "mix H"):  # fmt: skip
            table.add_column(name, justify="left" if name == "setting" else "right")
        for r in rows:
            table.add_row(
                safe(r.setting),
                _lag(r.lag_ab, r.lag_ab_undefined),
                _lag(r.lag_ba, r.lag_ba_undefined),
                _num(r.asymmetry, 2),
                _num(r.gap_cosine),
                _num(r.gap_euclidean),
                _num(r.gap_dtw, 2),
                _num(r.loop_area, 2),
                _num(r.control_gap_cosine),
                _num(r.mix_entropy),
            )
        console.print(table)
    console.print(
        "[dim]lags in frames (— : no stable switch in any repeat; n/a×k : in k repeats); gaps between A1 "
        "and A2 (cosine, Euclidean: mean over the aligned prefix; DTW: total); loop area Σ|w_A − w_A,ctrl|; "
        "ctrl gap: the control A→A's cosine gap (floor); mix H: mean entropy (nats) of the mix segment[/]",
        highlight=False,
    )
    return 0


def headline_figures(result: HysteresisResult) -> list[Figure]:
    """The run store's headline of a hysteresis run: per experiment setting, the switch-lag B→A and the
    cosine return-gap (seed 001), so `streambench compare` can gate a router change on them."""
    figures = []
    for row in result.report.rows:
        where = f"{row.experiment}={row.setting}"
        figures.append(
            Figure(
                key=f"lag_ba[{where}]",
                label=f"switch-lag B→A, {where} (frames)",
                unit="",
                better="lower",
                value=row.lag_ba,
                reason=None if row.lag_ba is not None else "no stable switch back to A in any repeat",
            )
        )
        figures.append(
            Figure(
                key=f"gap_cos[{where}]",
                label=f"return-gap (cosine), {where}",
                unit="",
                better="lower",
                value=row.gap_cosine,
            )
        )
    return figures


class HysteresisProtocol(RunProtocol[hysteresis.HysteresisConfig, HysteresisResult]):
    name = "hysteresis"
    summary = "seed 001 router hysteresis: lag, return gap and loop area over A→B→A streams"
    result_file = RESULT_FILE
    figure_keys = (
        r"(lag_ba|gap_cos)\[[^\[\],:]+\]",
        "lag_ba[<experiment point>], gap_cos[<experiment point>]",
    )
    result_model = HysteresisResult
    config_model = hysteresis.HysteresisConfig
    config_file = True
    run_options = frozenset({"isolate", "sealed"})  # sealed by default (execution/model_runner.py)
    default_adapter = DEFAULT_ADAPTER
    own_streams = True  # A→B→A, control and mix streams rendered from its configuration

    def prepare(
        self, run: RunConfig, config: hysteresis.HysteresisConfig
    ) -> tuple[RunConfig, hysteresis.HysteresisConfig]:
        if run.engine.pacing != "unpaced":
            raise ValueError("the hysteresis protocol records router weights: it needs --pacing unpaced")
        return super().prepare(run, config)

    def measure(self, run: RunContext[hysteresis.HysteresisConfig, HysteresisResult]) -> HysteresisResult:
        """Every planned stream through the model, warmed up once on an unscored A/B stream; each arm's
        router wrapper replayed over its recording here, then scored."""
        sweep = run.config
        source = domain_source(sweep.streams)
        planned = hysteresis.plan(sweep)
        sample = build_stream(source, planned[0])
        frames = run.run.engine.warmup_frames
        warmup = warmup_stream(source, frames) if frames else None
        recordings: dict[str, StreamRecording] = {}
        with run.model(sample, warmup, record_declared=("weights",)) as model:
            for done, entry in enumerate(planned, start=1):
                stream = build_stream(source, entry)
                recording = model.run_stream(stream, "test")
                recordings[entry.stream_id] = replay_arm(recording, stream, model.info, entry.arm, sweep)
                run.step(done, len(planned), entry.stream_id)
        source_kind: Literal["weights", "scores"] = "weights" if "weights" in model.record else "scores"
        report = hysteresis.score(sweep, planned, recordings, weights_source=source_kind)
        run.hashed_streams = [sample]
        return run.result(adapter_info=model.info, config=sweep, run=run.run, report=report)

    def print_result(self, console: Console, outcome: Outcome[HysteresisResult]) -> int:
        return print_result(console, outcome.result)

    def headline(self, result: HysteresisResult) -> list[Figure]:
        return headline_figures(result)
