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

from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel
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
from streambench.harness.execution.config import RunConfig, run_id_for
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.execution.model_runner import open_runner
from streambench.harness.execution.setup import environment_for
from streambench.harness.io.config_file import load_protocol_config as load_shared_protocol_config
from streambench.harness.io.safe_text import safe
from streambench.harness.results.files import EnvironmentRecord
from streambench.harness.results.headline import Figure
from streambench.harness.runs.catalog import write_indexed
from streambench.harness.runs.hysteresis_arms import replay_arm
from streambench.harness.runs.interface import Outcome, RunProtocol
from streambench.harness.runs.parts import Printed
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

    schema_version: int = 1
    run_id: str
    created_at: datetime
    adapter: str
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
    import torch

    if config.engine.pacing != "unpaced":
        raise ValueError("the hysteresis protocol records router weights: it needs --pacing unpaced")
    torch.manual_seed(config.torch_seed)
    source = domain_source(sweep.streams)
    planned = hysteresis.plan(sweep)
    sample = build_stream(source, planned[0])
    warmup = warmup_stream(source, config.engine.warmup_frames) if config.engine.warmup_frames else None
    recordings: dict[str, StreamRecording] = {}
    with open_runner(config, sample, warmup, own_streams=True, record_declared=("weights",)) as runner:
        for done, entry in enumerate(planned, start=1):
            stream = build_stream(source, entry)
            recording = runner.run_stream(stream, "test")
            recordings[entry.stream_id] = replay_arm(recording, stream, runner.info, entry.arm, sweep)
            if progress is not None:
                progress(done, len(planned), entry.stream_id)
    source_kind: Literal["weights", "scores"] = "weights" if "weights" in runner.record else "scores"
    report = hysteresis.score(sweep, planned, recordings, weights_source=source_kind)
    run_id = config.run_id or run_id_for(config.adapter, hysteresis.NAME)
    environment, fingerprint = environment_for(config, [sample], runner.module)
    result = HysteresisResult(
        run_id=run_id,
        environment=environment,
        fingerprint=fingerprint,
        created_at=datetime.now(timezone.utc),
        adapter=config.adapter,
        adapter_info=runner.info,
        config=sweep,
        run=config,
        report=report,
        execution_mode=runner.mode,
    )
    return result, write_indexed(config.output_dir, run_id, RESULT_FILE, result)


def load_protocol_config(path: Path | None) -> hysteresis.HysteresisConfig:
    """The protocol configuration in ``path`` (.json / .toml); defaults when ``None``."""
    return load_shared_protocol_config(path, hysteresis.HysteresisConfig, "hysteresis")


def cli_run(
    config: RunConfig, protocol_config_file: Path | None, progress: ProgressHook | None = None
) -> tuple[HysteresisResult, Path]:
    """``streambench run --protocol hysteresis [--protocol-config FILE]`` (adapter default: the reference
    router)."""
    return execute_hysteresis(with_defaults(config), load_protocol_config(protocol_config_file), progress)


def with_defaults(config: RunConfig) -> RunConfig:
    """The reference router in place of the CLI's default adapter."""
    if config.adapter == "reference":
        return config.model_copy(update={"adapter": DEFAULT_ADAPTER})
    return config


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


class HysteresisProtocol(Printed, RunProtocol):
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

    def check_options(self, config: RunConfig, given: frozenset[str]) -> None:
        """Its streams are built by the protocol itself (A→B→A, control, mix): data options are refused."""
        ignored = sorted(given & {"seed", "streams", "duration", "dataset"})
        if ignored:
            options = ", ".join(f"--{name}" for name in ignored)
            raise ValueError(
                f"--protocol hysteresis builds its own streams: use --protocol-config, not {options}"
            )
        super().check_options(config, given)

    def execute(self, run: RunConfig, config: BaseModel | None, progress: ProgressHook | None) -> Outcome:
        assert isinstance(config, hysteresis.HysteresisConfig)
        result, run_dir = execute_hysteresis(with_defaults(run), config, progress)
        return Outcome(result, run_dir)

    def print_result(self, console: Console, outcome: Outcome) -> int:
        assert isinstance(outcome.result, HysteresisResult)
        return print_result(console, outcome.result)

    def headline(self, result: BaseModel) -> list[Figure]:
        assert isinstance(result, HysteresisResult)
        return headline_figures(result)
