"""The ``streambench`` command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from adapters.registry import REGISTRY, AdapterLoadError
from harness.cli_common import err, fail, out
from harness.cli_score import score_app
from harness.engine import AdapterError
from harness.event_log import EventLogError
from harness.executor import ProgressHook
from harness.isolation import WorkerError
from harness.results import ResultFileError, RunResult
from harness.runner import execute_run, resume_run
from harness.summary import print_causality, print_robustness, print_summary

app = typer.Typer(
    help="streambench: measure causal (streaming) models frame by frame, at batch 1.",
    no_args_is_help=True,
    add_completion=False,
)




def _parse_options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a VALUE that parses as JSON is taken as such (numbers, lists, true)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise fail(f"--option {pair!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


@app.command()
def run(
    ctx: typer.Context,
    adapter: Annotated[
        str, typer.Option("--adapter", "-a", help="registry name or module:Class")
    ] = "reference",
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="adapter option KEY=VALUE (repeatable)")
    ] = None,
    dataset: Annotated[
        str, typer.Option(help="synthetic (embedded) | audio_files | ave | llp (their files: --config)")
    ] = "synthetic",
    seed: Annotated[int, typer.Option(help="data set seed")] = 0,
    streams: Annotated[int, typer.Option("--streams", "-n", help="number of streams")] = 60,
    warmup_frames: Annotated[int, typer.Option(help="warm-up frames before the first scored stream")] = 100,
    pacing: Annotated[
        str, typer.Option(help="unpaced | paced (frames released on the wall clock)")
    ] = "unpaced",
    paced_policy: Annotated[
        str, typer.Option(help="paced, when behind: queue | drop (to the newest)")
    ] = "queue",
    duration: Annotated[float, typer.Option(help="seconds per synthetic stream")] = 10.0,
    decision: Annotated[str, typer.Option(help="threshold | per_class | top_k")] = "threshold",
    threshold: Annotated[float, typer.Option(help="fixed decision threshold")] = 0.5,
    top_k: Annotated[int, typer.Option(help="labels per unit for --decision top_k")] = 1,
    output_dir: Annotated[Path, typer.Option("--output-dir", help="where run directories go")] = Path(
        "results"
    ),
    run_id: Annotated[str | None, typer.Option(help="name of the run directory (default: generated)")] = None,
    baseline: Annotated[
        Path | None, typer.Option(help="baseline run directory: speed-up and FLOPs-normalised latency")
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    protocol: Annotated[
        str, typer.Option(help="online | robustness | causality | detection | stability | hysteresis")
    ] = "online",
    protocol_config: Annotated[
        Path | None,
        typer.Option(help="the protocol's own configuration (.json or .toml): detection, stability, ..."),
    ] = None,
    on_error: Annotated[
        str, typer.Option(help="adapter failure: continue (skip the rest of that stream) | stop")
    ] = "continue",
    config_file: Annotated[
        Path | None, typer.Option("--config", help="run configuration (.json or .toml); options override it")
    ] = None,
    resume: Annotated[
        Path | None, typer.Option(help="finish an interrupted run (its directory): same configuration")
    ] = None,
    report: Annotated[bool, typer.Option(help="write <run dir>/report.html (streambench report)")] = True,
    isolate: Annotated[
        bool, typer.Option(help="run the adapter in a worker process: timeouts, survives crashes")
    ] = False,
    frame_timeout: Annotated[float, typer.Option(help="--isolate: seconds one frame may take")] = 30.0,
    stream_timeout: Annotated[float, typer.Option(help="--isolate: seconds one stream may take")] = 600.0,
    memory_limit_mb: Annotated[
        int | None, typer.Option(help="--isolate: MiB the adapter may add to the worker (RLIMIT_AS)")
    ] = None,
) -> None:
    """Run an adapter through the online protocol and write results/<run_id>/result.json."""
    from harness.cli_config import CLI_FIELDS, ConfigError, build_run_config

    # options typed on the command line (click's ParameterSource, compared by name: typer vendors click)
    given = {
        name
        for name in CLI_FIELDS
        if getattr(ctx.get_parameter_source(name), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")
    }
    if resume is not None:
        if given or config_file is not None or protocol != "online":
            raise fail("--resume takes no other run options: the run's own configuration is used")
        _finish(
            *_run_with_progress(progress, f"resume {resume.name}", lambda hook: resume_run(resume, hook)),
            report=report,
        )
        return
    local = dict(locals())
    values = {name: local[name] for name in CLI_FIELDS}
    values["option"] = _parse_options(option or [])
    try:
        config = build_run_config(values, given, config_file)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    if protocol_config is not None and protocol not in PROTOCOL_RUNS:
        raise fail(f"--protocol-config applies to {', '.join(PROTOCOL_RUNS)}, not to --protocol {protocol}")
    ignored = sorted(given & {"seed", "streams", "duration", "dataset"}) if protocol == "hysteresis" else []
    if ignored:  # its streams are built by the protocol itself (A→B→A, control, mix)
        options = ", ".join(f"--{name}" for name in ignored)
        raise fail(f"--protocol hysteresis builds its own streams: use --protocol-config, not {options}")
    if protocol != "online" and (config.isolate or config.on_error != "continue"):
        # the sweep records a failing point and goes on; the checks compare runs in this process
        raise fail(f"--isolate and --on-error apply to the online protocol, not to --protocol {protocol}")

    if protocol == "robustness":
        from harness.robustness_run import RESULT_FILE, execute_robustness
        from protocols.robustness import RobustnessConfig

        sweep = RobustnessConfig(online=config.protocol)
        robust, run_dir = _run_with_progress(
            progress, f"{adapter} · robustness", lambda hook: execute_robustness(config, sweep, hook)
        )
        print_robustness(out, robust.report)
        out.print(f"\nwrote [bold]{run_dir / RESULT_FILE}[/]", highlight=False)
        _write_report(run_dir, report)
        return
    if protocol == "causality":
        from harness.causality_run import execute_causality
        from protocols.causality import CausalityConfig

        checks = CausalityConfig()
        causal, run_dir = _run_with_progress(
            progress, f"{adapter} · causality", lambda hook: execute_causality(config, checks, hook)
        )
        print_causality(out, causal.report, causal.skipped)
        out.print(f"\nwrote [bold]{run_dir / 'causality.json'}[/]", highlight=False)
        _write_report(run_dir, report)
        raise typer.Exit(code=0 if causal.report.passed else 1)
    if protocol in PROTOCOL_RUNS:
        import importlib

        module = importlib.import_module(PROTOCOL_RUNS[protocol])
        result, run_dir = _run_with_progress(
            progress, f"{adapter} · {protocol}", lambda hook: module.cli_run(config, protocol_config, hook)
        )
        code = module.print_result(out, result)
        out.print(f"\nwrote [bold]{escape(str(run_dir / module.RESULT_FILE))}[/]", highlight=False)
        _write_report(run_dir, report)
        raise typer.Exit(code=code)
    if protocol != "online":
        known = ", ".join(["online", "robustness", "causality", *PROTOCOL_RUNS])
        raise fail(f"--protocol {protocol!r}: expected one of {known}")
    _finish(
        *_run_with_progress(progress, f"{adapter} · online", lambda hook: execute_run(config, hook)),
        report=report,
    )


PROTOCOL_RUNS: dict[str, str] = {
    "detection": "harness.detection_run",
    "stability": "harness.stability_run",
    "hysteresis": "harness.hysteresis_run",
}
"""More protocols, each a module with ``RESULT_FILE``, ``cli_run(config, protocol_config_file, progress)
-> (result, run_dir)`` and ``print_result(console, result) -> exit code``."""

_T = TypeVar("_T")
_CLEAR_ERRORS = (AdapterLoadError, AdapterError, ValueError, ResultFileError, EventLogError, WorkerError)
"""Errors whose message says what went wrong and where: printed, exit code 2, no traceback."""


def _run_with_progress(progress: bool, title: str, job: Callable[[ProgressHook], _T]) -> _T:
    """Run ``job`` with a progress bar on stderr; turn the harness's clear errors into exit code 2."""
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[stream]}"),
        console=err,
        transient=True,
        disable=not progress,
    )
    with bar:
        task = bar.add_task(title, total=None, stream="")

        def hook(done: int, total: int, stream_id: str) -> None:
            bar.update(task, completed=done, total=total, stream=stream_id)

        try:
            return job(hook)
        except _CLEAR_ERRORS as exc:
            raise fail(str(exc)) from None


def _write_report(run_dir: Path, enabled: bool) -> None:
    """The run's HTML report next to its results; a report that cannot be built costs a warning, never
    the run."""
    if not enabled:
        return
    from harness.report import write_report

    try:
        path = write_report([str(run_dir)], run_dir / "report.html", run_dir.parent)
    except (ValueError, OSError) as exc:
        err.print(f"[yellow]warning:[/] no report written ({escape(str(exc))})", highlight=False)
        return
    out.print(f"wrote [bold]{escape(str(path))}[/]", highlight=False)


def _finish(result: RunResult, recordings: object, run_dir: Path, report: bool = True) -> None:
    """Print an online run's summary; exit 130 if it was interrupted, 1 if the adapter failed anywhere."""
    print_summary(out, result)
    out.print(f"\nwrote [bold]{run_dir / 'result.json'}[/]", highlight=False)
    _write_report(run_dir, report)
    if result.status == "incomplete":
        err.print(
            f"[bold yellow]incomplete:[/] {escape(result.incomplete_reason or '')}; finish it with "
            f"[bold]streambench run --resume {escape(str(run_dir))}[/]",
            highlight=False,
        )
        raise typer.Exit(code=130)
    if result.failures:
        raise typer.Exit(code=1)


@app.command()
def adapters() -> None:
    """List the registered adapters (any importable module:Class works too)."""
    width = max(len(name) for name in REGISTRY)
    for name, target in sorted(REGISTRY.items()):
        out.print(f"{name:<{width}}  {target}", highlight=False)


app.add_typer(score_app, name="score")

# Subcommands defined in their own modules register here (one import + one call each).
from harness.cli_sweep import register as register_sweep  # noqa: E402

register_sweep(app)

from harness.cli_report import register as register_report  # noqa: E402

register_report(app)

from harness.cli_results import register as register_results  # noqa: E402

register_results(app)


@app.command()
def selftest(
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """The harness measuring itself: overhead floor (null adapter) and timing error (busy-waits)."""
    from harness.selftest import SelfTestConfig, print_selftest, run_selftest

    report = run_selftest(SelfTestConfig())
    if as_json:
        out.print_json(report.model_dump_json())
    else:
        print_selftest(out, report)
    raise typer.Exit(code=0 if report.passed else 1)


@app.command()
def env(
    as_json: Annotated[bool, typer.Option("--json", help="print the manifest as JSON")] = False,
) -> None:
    """The environment lock manifest (seed 004 §6.2.2) and its timing fingerprint."""
    from rich.table import Table

    from harness.instruments.manifest import collect_manifest, fingerprint

    manifest = collect_manifest({})
    if as_json:
        out.print_json(json.dumps({"fingerprint": fingerprint(manifest), **manifest.model_dump(mode="json")}))
        return
    table = Table(title=f"Environment (fingerprint {fingerprint(manifest)})", title_justify="left")
    table.add_column("item")
    table.add_column("value")
    for name, item in manifest:
        if hasattr(item, "value"):
            shown = (
                escape(str(item.value))
                if item.value is not None
                else f"[dim]null: {escape(str(item.reason))}[/]"
            )
            table.add_row(name, shown)
    out.print(table)


@app.command()
def schema() -> None:
    """Print the JSON Schema of result.json."""
    out.print_json(json.dumps(RunResult.model_json_schema()))


def main() -> None:
    app()
