"""``streambench ab``: base against head in interleaved (or duet) rounds in one job, and a three-valued gate.

Exit codes: 0 no regression; 1 regression; 3 inconclusive (the noise of this job is larger than the floor
asked, or a side's measurement is INVALID; the output says how many more rounds would resolve it);
2 bad input. See harness/runs/ab.py, harness/results/gate.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from streambench.harness.cli.common import err, fail, out
from streambench.harness.cli.options import AB_OPTIONS, declare, field_values
from streambench.harness.cli.run import _parse_options, _typed
from streambench.harness.io.safe_text import safe

if TYPE_CHECKING:  # the job's machinery is imported by the command that runs (CLI start-up)
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.execution.rounds import Rounds
    from streambench.harness.execution.worker_process import WorkerCommand
    from streambench.harness.runs.ab import ABReport

__all__ = ["ab", "register"]


FROM_FILE = ("adapter", "adapter_options", "data", "engine", "threads", "torch_seed")
"""What ``ab --config`` takes from a run configuration file: what a side's worker runs (the rest of a run's
configuration — protocol, output, isolation — has no part in a latency comparison, and is not sent to a
side's worker, which may be an older checkout that does not know every field)."""


def _from_file(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The fields of :data:`FROM_FILE` the file sets, validated as ``run --config`` validates the file
    (errors name the file and the field); and the names of the other fields it sets (unused here)."""
    from streambench.harness.cli.config import RunOptions, build_run_config

    tree = build_run_config(RunOptions(), set(), path).model_dump(mode="json", exclude_unset=True)
    unused = sorted(k for k in tree if k not in FROM_FILE)
    return {k: v for k, v in tree.items() if k in FROM_FILE}, unused


def _side(
    adapter: str,
    options: dict[str, Any],
    python: str | None,
    paths: list[Path] | None,
    common: dict[str, Any],
) -> tuple[RunConfig, WorkerCommand]:
    """One side: ``common`` (data, engine, threads, torch seed) with this side's adapter and options, and
    the worker command of its interpreter and checkout."""
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.execution.worker_process import WorkerCommand

    run = RunConfig.model_validate({**common, "adapter": adapter, "adapter_options": options})
    command: dict[str, Any] = {"pythonpath": [str(p.resolve()) for p in paths or ()]}
    if python is not None:
        command["python"] = python
    return run, WorkerCommand.model_validate(command)


def _data(
    filed: dict[str, Any] | None, typed: set[str], seed: int | None, streams: int, duration: float
) -> dict[str, Any]:
    """The data set both sides run: the file's, else the synthetic one of --seed/--streams/--duration
    (which also override a synthetic data set of the file; typed for another data set, they are refused)."""
    synthetic = {"seed": seed, "num_streams": streams, "duration_s": duration}
    names = {"seed": "seed", "num_streams": "streams", "duration_s": "duration"}
    if filed is None:
        return {"kind": "synthetic", **synthetic}
    if filed.get("kind", "synthetic") == "synthetic":
        return {**filed, **{k: v for k, v in synthetic.items() if names[k] in typed}}
    wrong = [f"--{names[k]}" for k in synthetic if names[k] in typed]
    if wrong:
        raise ValueError(
            f"{', '.join(wrong)} apply to the synthetic data set, not to the file's {filed['kind']}"
        )
    return filed


def _print(report: ABReport) -> None:
    from rich.table import Table

    from streambench.harness.runs.ab_text import (
        code_lines,
        effects_shown,
        interval_levels,
        judged_on,
        looks_line,
        side_titles,
        undecided,
    )

    base, head = report.sides
    base_title, head_title = side_titles(report)
    out.print(
        f"[bold]{safe(base.label)}[/] {safe(base_title)} vs [bold]{safe(head.label)}[/] "
        f"{safe(head_title)} · {report.mode} mode ({safe(report.mode_reason)}) · "
        f"{report.execution} workers · "
        f"{report.pairs} pairs · "
        f"on {judged_on(report)} · {safe(looks_line(report))}",
        highlight=False,
    )
    table = Table(caption=f"Hodges–Lehmann ratio over pairs of rounds; {interval_levels(report)}")
    for column in ("figure", "base ms", "head ms", "head / base", "interval", "noise"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for key, e in effects_shown(report):
        pct = "null" if e.ratio is None else f"{(e.ratio - 1) * 100:+.1f} %"
        low, high = (("–" if v is None else f"{(v - 1) * 100:+.1f}") for v in (e.low, e.high))
        interval = "–" if e.low is None and e.high is None else f"[{low}, {high}] %"
        table.add_row(
            key,
            f"{e.base_median / 1e6:.4g}",
            f"{e.head_median / 1e6:.4g}",
            pct,
            interval,
            f"±{e.pair_spread:.1%}",
        )
    for line in code_lines(report):
        out.print(safe(line), highlight=False)
    if report.differs_from_run:
        shown = "; ".join(report.differs_from_run)
        out.print(f"[dim]measured as streambench run measures, except: {safe(shown)}[/]", highlight=False)
    out.print(table)
    for v in report.gate.rules:
        colour = {"regression": "bold red", "inconclusive": "yellow"}.get(v.verdict, "green")
        on_cpu = " on CPU time" if v.clock == "cpu" else ""
        out.print(
            f"[{colour}]{safe(v.rule.describe())}: {v.verdict}{on_cpu}[/] — {safe(v.reason)}", highlight=False
        )
    for side in report.sides:
        q = side.quality
        colour = "green" if q.verdict == "VALID" else "bold red"
        why = "; ".join(q.reasons + q.notes)
        out.print(
            f"{safe(side.label)} measurement [{colour}]{q.verdict}[/]" + (f": {safe(why)}" if why else ""),
            highlight=False,
        )
    if report.refusal:
        out.print(f"[yellow]not called:[/] {safe(report.refusal)}", highlight=False)
    if report.verdict == "inconclusive" and not report.refusal:
        out.print(f"[yellow]undecided:[/] {safe(undecided(report))}", highlight=False)
    colour = {"regression": "bold red", "inconclusive": "yellow"}.get(report.verdict, "bold green")
    out.print(f"[{colour}]{report.verdict}[/] (exit {report.exit_code})", highlight=False)


def ab(
    ctx: typer.Context,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="a run configuration (.json or .toml, as run --config): its data, engine, threads and "
            "adapter (with its options) for both sides; the options typed here override it",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print machine-readable JSON")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="print Markdown (a CI job summary)")] = False,
    progress: Annotated[bool, typer.Option(help="print each pair as it finishes (stderr)")] = True,
    **typed: Any,  # one per option of AB_OPTIONS (harness/cli/options.py), given to typer by __signature__
) -> None:
    """Base against head latency in interleaved rounds: exit 0 no regression, 1 regression, 3 inconclusive."""
    from pydantic import ValidationError

    from streambench.adapters.registry import AdapterLoadError
    from streambench.harness import api
    from streambench.harness.execution.engine import AdapterError
    from streambench.harness.execution.isolation import WorkerError
    from streambench.harness.execution.rounds import RoundsConfig
    from streambench.harness.runs.ab_settings import GateConfig
    from streambench.harness.runs.ab_text import ab_markdown

    if typed["on"] not in ("wall", "cpu", "both"):
        raise fail(f"--on {typed['on']!r}: expected both, wall or cpu")
    try:
        given = {
            name
            for name in ("base_adapter", "seed", "streams", "duration", "warmup_frames")
            if _typed(ctx, name)
        }
        common, unused = _from_file(config_file) if config_file is not None else ({}, [])
        if unused:
            err.print(
                f"note: ab does not use {', '.join(unused)} of {safe(str(config_file))}", highlight=False
            )
        filed_adapter = common.pop("adapter", None)
        filed_options = common.pop("adapter_options", {})
        common["data"] = _data(common.get("data"), given, typed["seed"], typed["streams"], typed["duration"])
        if "warmup_frames" in given or "warmup_frames" not in common.get("engine", {}):
            common["engine"] = {**common.get("engine", {}), "warmup_frames": typed["warmup_frames"]}
        base_name = (
            typed["base_adapter"] if "base_adapter" in given or filed_adapter is None else filed_adapter
        )
        head_name = typed["head_adapter"] or base_name

        def options(adapter: str, typed_options: list[str] | None) -> dict[str, Any]:
            """The file's options for its adapter, with the ones typed for this side laid over them."""
            return {
                **(filed_options if adapter == filed_adapter else {}),
                **_parse_options(typed_options or []),
            }

        sides = [
            _side(
                name,
                options(name, typed[f"{side}_option"]),
                typed[f"{side}_python"],
                typed[f"{side}_path"],
                common,
            )
            for side, name in (("base", base_name), ("head", head_name))
        ]
        config = RoundsConfig.model_validate(field_values(AB_OPTIONS, "RoundsConfig", typed))
        gate = GateConfig.model_validate(field_values(AB_OPTIONS, "GateConfig", typed))
    except (ValidationError, ValueError) as exc:  # ConfigError is a ValueError
        raise fail(str(exc)) from None

    def report_pair(job: Rounds) -> None:
        if progress:
            base_ms = job.base.latency_ns[-1].mean() / 1e6
            head_ms = job.head.latency_ns[-1].mean() / 1e6
            err.print(
                f"pair {job.pairs}: {job.orders[-1]} · mean {base_ms:.3f} / {head_ms:.3f} ms", highlight=False
            )

    (base, base_command), (head, head_command) = sides
    try:  # the Python entry point; a bad --fail-on or confidence is refused there before any round
        report = api.ab(
            base, head, config, gate.fail_on, on=gate.on, confidence=gate.confidence,
            pass_confidence=gate.pass_confidence, force=gate.force, base_command=base_command,
            head_command=head_command, sealed=typed["sealed"], progress=report_pair,
        )  # fmt: skip
    except (AdapterError, AdapterLoadError, WorkerError, ValueError) as exc:  # FailOnSpecError too
        raise fail(str(exc)) from None
    if as_json:
        out.print_json(report.model_dump_json())
    elif markdown:
        typer.echo(ab_markdown(report), nl=False)
    else:
        _print(report)
    raise typer.Exit(code=report.exit_code)


def register(app: typer.Typer) -> None:
    app.command("ab")(declare(ab, AB_OPTIONS))
