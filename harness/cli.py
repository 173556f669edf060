"""The ``streambench`` command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from adapters.registry import REGISTRY, AdapterLoadError
from harness.cli_score import score_app
from harness.engine import AdapterError
from harness.results import ResultFileError, RunResult
from harness.runner import RunConfig, execute_run
from harness.summary import print_causality, print_robustness, print_summary

app = typer.Typer(
    help="streambench: measure causal (streaming) models frame by frame, at batch 1.",
    no_args_is_help=True,
    add_completion=False,
)
out = Console()
err = Console(stderr=True)


def _fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False, markup=True, soft_wrap=True)
    return typer.Exit(code=2)


def _parse_options(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a VALUE that parses as JSON is taken as such (numbers, lists, true)."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise _fail(f"--option {pair!r}: expected KEY=VALUE")
        try:
            options[key] = json.loads(value)
        except json.JSONDecodeError:
            options[key] = value
    return options


@app.command()
def run(
    adapter: Annotated[
        str, typer.Option("--adapter", "-a", help="registry name or module:Class")
    ] = "reference",
    option: Annotated[
        list[str] | None, typer.Option("--option", "-o", help="adapter option KEY=VALUE (repeatable)")
    ] = None,
    dataset: Annotated[str, typer.Option(help="data set (embedded: synthetic)")] = "synthetic",
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
    protocol: Annotated[str, typer.Option(help="online | robustness | causality")] = "online",
) -> None:
    """Run an adapter through the online protocol and write results/<run_id>/result.json."""
    try:
        config = RunConfig.model_validate(
            {
                "adapter": adapter,
                "adapter_options": _parse_options(option or []),
                "dataset": dataset,
                "data": {"seed": seed, "num_streams": streams, "duration_s": duration},
                "protocol": {"decision": {"kind": decision, "threshold": threshold, "k": top_k}},
                "engine": {"warmup_frames": warmup_frames, "pacing": pacing, "paced_policy": paced_policy},
                "output_dir": output_dir,
                "run_id": run_id,
                "baseline": baseline,
            }
        )
    except ValidationError as exc:
        raise _fail(f"invalid run configuration:\n{exc}") from None

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
    if protocol not in ("online", "robustness", "causality"):
        raise _fail(f"--protocol {protocol!r}: expected online, robustness or causality")
    with bar:
        task = bar.add_task(f"{adapter} · {protocol}", total=None, stream="")

        def hook(done: int, total: int, stream_id: str) -> None:
            bar.update(task, completed=done, total=total, stream=stream_id)

        try:
            if protocol == "robustness":
                from harness.robustness_run import RESULT_FILE, execute_robustness
                from protocols.robustness import RobustnessConfig

                sweep = RobustnessConfig(online=config.protocol)
                robust, run_dir = execute_robustness(config, sweep, hook)
            elif protocol == "causality":
                from harness.causality_run import execute_causality
                from protocols.causality import CausalityConfig

                causal, run_dir = execute_causality(config, CausalityConfig(), hook)
            else:
                result, _, run_dir = execute_run(config, hook)
        except (AdapterLoadError, AdapterError, ValueError, ResultFileError) as exc:
            raise _fail(str(exc)) from None
    if protocol == "robustness":
        print_robustness(out, robust.report)
        out.print(f"\nwrote [bold]{run_dir / RESULT_FILE}[/]", highlight=False)
        return
    if protocol == "causality":
        print_causality(out, causal.report, causal.skipped)
        out.print(f"\nwrote [bold]{run_dir / 'causality.json'}[/]", highlight=False)
        raise typer.Exit(code=0 if causal.report.passed else 1)
    print_summary(out, result)
    out.print(f"\nwrote [bold]{run_dir / 'result.json'}[/]", highlight=False)


@app.command()
def adapters() -> None:
    """List the registered adapters (any importable module:Class works too)."""
    width = max(len(name) for name in REGISTRY)
    for name, target in sorted(REGISTRY.items()):
        out.print(f"{name:<{width}}  {target}", highlight=False)


app.add_typer(score_app, name="score")

# Subcommands defined in their own modules register here (one import + one call each).


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
