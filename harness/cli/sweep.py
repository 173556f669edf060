"""``streambench sweep FILE``: run what the store lacks of a sweep, with a live progress line (done /
running / failed / remaining, time left) and, with ``--report``, the sweep report. The driver is
:mod:`streambench.harness.sweep.driver`; this module imports it (and the executors, the report) in the
command, so the CLI starts without them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from streambench.harness.io.safe_text import plain, safe

if TYPE_CHECKING:
    from streambench.harness.sweep.driver import SweepOutcome
    from streambench.harness.sweep.estimate import SweepEstimate
    from streambench.harness.sweep.executors import Executor
    from streambench.harness.sweep.interrupts import SweepInterrupted
    from streambench.harness.sweep.spec import RunSpec, SweepFile
    from streambench.harness.sweep.state import ProgressSnapshot

__all__ = ["register", "sweep"]


def _format(snapshot: ProgressSnapshot) -> str:
    eta = "?" if snapshot.eta_s is None else f"{snapshot.eta_s:.0f} s"
    return (
        f"{snapshot.done}/{snapshot.total} done ({snapshot.skipped} already in the store), "
        f"{snapshot.running} running, {snapshot.failed} failed, {snapshot.remaining} remaining; "
        f"{snapshot.elapsed_s:.0f} s elapsed, about {eta} left"
    )


def _startup(executor: Executor) -> str:
    startup = getattr(executor, "startup_s", None)
    return f"; {startup:.1f} s of it starting Ray" if startup is not None else ""


def _estimate_line(estimate: SweepEstimate, todo: int) -> str:
    """The time the runs to run will take, from the store's measurements (never a guess)."""
    from streambench.harness.report.numbers import duration_s

    unknown = len(estimate.unknown())
    reasons = "; ".join(estimate.reasons())
    if unknown == todo:
        return f"no time estimate: {reasons}"
    startup = (
        f"{duration_s(estimate.startup_s)} of start-up per run, as this executor took before"
        if estimate.startup_s is not None
        else "start-up per run not included: no stored run of this executor"
    )
    total = duration_s(estimate.known_s)
    known = f"about {total} one run after another ({startup}; from {estimate.basis} stored runs)"
    if not unknown:
        return f"estimated time: {known}"
    some = f"{todo - unknown} of the {todo} runs"
    return f"estimated time of {some}: {known}; no estimate for {unknown}: {reasons}"


def _dry_run(out: Console, specs: list[RunSpec], results_dir: Path, executor: str, as_json: bool) -> None:
    """List the runs (in the store or to run, each with its time estimate) and the total estimate; with
    ``as_json`` the same as one JSON document (an estimate without a basis is null with its reason)."""
    from streambench.harness.report.numbers import duration_s
    from streambench.harness.sweep.estimate import estimate_runs
    from streambench.harness.sweep.state import split_done

    todo, done = split_done(specs, results_dir) if results_dir.is_dir() else (specs, [])
    estimate = estimate_runs(todo, results_dir, executor)
    if as_json:
        planned = []
        for s in specs:
            guess = estimate.runs.get(s.run_id)
            planned.append(
                {
                    "run_id": s.run_id,
                    "status": "in store" if s in done else "to run",
                    "run": s.describe(),
                    "estimate_s": None if guess is None else guess.seconds,
                    "estimate_reason": None if guess is None else guess.reason,
                }
            )
        known = len(todo) - len(estimate.unknown())
        doc = {
            "runs": planned,
            "total": len(specs),
            "to_run": len(todo),
            "estimated_s": estimate.known_s if known else None,
            "estimated_runs": known,
            "startup_s": estimate.startup_s,
            "no_estimate": estimate.reasons(),
        }
        out.print_json(json.dumps(doc))
        return
    for spec in specs:
        mark = "in store" if spec in done else "to run"
        guess = estimate.runs.get(spec.run_id)
        eta = (
            ""
            if guess is None
            else (f"≈ {duration_s(guess.seconds)}" if guess.seconds is not None else "no estimate")
        )
        line = f"{spec.run_id}  {mark:<8}  {eta:<12}  {safe(spec.describe())}"
        out.print(line, highlight=False, soft_wrap=True)
    out.print(f"{len(specs)} runs, {len(todo)} to run", highlight=False)
    if todo:
        out.print(safe(_estimate_line(estimate, len(todo))), highlight=False, soft_wrap=True)


def sweep(
    file: Annotated[Path, typer.Argument(help="the sweep file (.toml, or .json)")],
    executor: Annotated[str, typer.Option(help="local (one run at a time) | ray")] = "local",
    address: Annotated[
        str | None, typer.Option(help="--executor ray: an existing cluster (default: start a local instance)")
    ] = None,
    retries: Annotated[
        int | None, typer.Option(min=0, help="attempts after the first per run (default: the file's)")
    ] = None,
    isolate: Annotated[
        bool,
        typer.Option(
            help="local: each attempt in a fresh process, so a crash costs that run only "
            "(--no-isolate: every run in this process, where one crash ends the sweep)"
        ),
    ] = True,
    output_dir: Annotated[
        Path | None, typer.Option("--output-dir", help="the run store (default: the file's sweep.output_dir)")
    ] = None,
    report: Annotated[
        bool, typer.Option(help="print the sweep report and write <store>/sweep-<name>.html")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            help="list the runs (which are in the store) and the time the rest will take, estimated from "
            "the store's earlier runs of the same adapter; run none"
        ),
    ] = False,
    progress: Annotated[bool, typer.Option(help="print progress lines")] = True,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="print what was run (with --dry-run: planned) as JSON on stdout; progress stays on stderr",
        ),
    ] = False,
) -> None:
    """Run a sweep (adapters × protocols × points × grid × seeds × repeats); finished runs are skipped."""
    from streambench.harness.sweep.interrupts import SweepInterrupted, sweep_signals

    out, err = Console(), Console(stderr=True)
    named: list[str] = []  # the sweep's name, once its file is read

    def fail(message: str) -> typer.Exit:
        err.print(f"[bold red]error:[/] {safe(message)}", highlight=False, soft_wrap=True)
        return typer.Exit(code=2)

    def listener(snapshot: ProgressSnapshot, message: str) -> None:
        if progress:
            err.print(f"[dim]{safe(_format(snapshot))}[/] · {safe(message)}", highlight=False)

    def body() -> None:
        from streambench.harness.sweep.driver import make_executor, run_sweep
        from streambench.harness.sweep.spec import SweepError, expand, load_sweep

        try:
            loaded = load_sweep(file)
            named.append(loaded.sweep.name)
            results_dir = output_dir if output_dir is not None else loaded.sweep.output_dir
            specs = expand(loaded, str(file))
            chosen = make_executor(
                executor, loaded.sweep.retries if retries is None else retries, address, isolate
            )
        except SweepError as exc:
            raise fail(str(exc)) from None
        if dry_run:
            _dry_run(out, specs, results_dir, chosen.name, as_json)
            return
        try:
            outcome = run_sweep(loaded, chosen, results_dir, listener, str(file))
        except (RuntimeError, ValueError, OSError) as exc:
            raise fail(str(exc)) from None
        _finish(out, err, loaded, outcome, results_dir, chosen, report, as_json, str(file))

    try:
        with sweep_signals():  # SIGINT, SIGTERM: the sweep stops at once, its attempt's processes ended
            body()
    except SweepInterrupted as exc:
        err.print(_interrupted_line(exc, named, file), highlight=False, soft_wrap=True)
        raise typer.Exit(code=exc.exit_code) from None


def _interrupted_line(exc: SweepInterrupted, named: list[str], file: Path) -> str:
    """One line for an interrupted sweep: the signal, what was discarded, what is kept and how to go on
    (the store keeps every run that ended, and a sweep skips those: it is resumed by running it again)."""
    discarded = f"; discarded (not finished): {', '.join(exc.running)}" if exc.running else ""
    sweep = f"sweep {named[0]}" if named else "the sweep"
    return (
        f"[bold yellow]interrupted[/] ({exc.signal_name}): {safe(sweep)} stopped{safe(discarded)}; "
        f"the {exc.ended} run(s) it ended are in the store; run [bold]streambench sweep "
        f"{safe(str(file))}[/] again for the rest"
    )


def _finish(
    out: Console,
    err: Console,
    loaded: SweepFile,
    outcome: SweepOutcome,
    results_dir: Path,
    chosen: Executor,
    report: bool,
    as_json: bool,
    source: str,
) -> None:
    """Print what the sweep did (or its JSON), the failed runs and, with ``report``, the sweep report;
    exit 1 if a run failed."""
    from streambench.harness.sweep.report import build_sweep_report, sweep_markdown
    from streambench.harness.sweep.report_html import write_sweep_html

    if as_json:
        written: list[Path] = []
        if report:
            built = build_sweep_report(loaded, results_dir, source)
            written = write_sweep_html(built, results_dir / f"sweep-{loaded.sweep.name}.html", results_dir)
        reports = [str(p) for p in written]
        doc = {"sweep": loaded.sweep.name, **outcome.model_dump(mode="json"), "reports": reports}
        out.print_json(json.dumps(doc))
        if outcome.failed:
            raise typer.Exit(code=1)
        return
    out.print(
        f"sweep {safe(loaded.sweep.name)}: {outcome.total} runs, "
        f"{len(outcome.skipped)} already in the store, "
        f"{len(outcome.records) - len(outcome.failed)} run now, {len(outcome.failed)} failed; "
        f"{outcome.wall_s:.1f} s ({chosen.name}{_startup(chosen)})",
        highlight=False,
    )
    for record in outcome.failed:
        last = record.attempts[-1].error if record.attempts else "no attempt"
        err.print(
            f"[red]failed[/] {safe(record.run_id)} after {len(record.attempts)} attempts: {safe(str(last))}"
        )
    if report:
        built = build_sweep_report(loaded, results_dir, source)
        typer.echo(plain(sweep_markdown(built)))  # verbatim (not wrapped), terminal codes neutralised
        for path in write_sweep_html(built, results_dir / f"sweep-{loaded.sweep.name}.html", results_dir):
            out.print(f"wrote [bold]{safe(str(path))}[/]", highlight=False)
    if outcome.failed:
        raise typer.Exit(code=1)


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to the ``streambench`` application."""
    app.command("sweep")(sweep)
