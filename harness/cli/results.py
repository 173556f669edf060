"""``streambench runs | show | reindex | compare``: the run store and the regression gate on the command line
(``compare`` itself: harness/cli/compare.py).

Exit codes: 0 fine; 1 ``compare`` found a regression under ``--fail-on``; 3 ``compare`` saw a regression
it did not call: of a latency between runs one of which is INVALID (measurement quality), or of a score
between runs that scored different data (e.g. different draws from secret seeds); 2 bad input (the
message names the file, run or option). ``show`` prints the run's measurement-quality verdict above its
figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from streambench.harness.cli import completion
from streambench.harness.cli.common import err, fail, out
from streambench.harness.io.safe_text import safe

if TYPE_CHECKING:  # the store, results and report modules are imported by the command that runs
    from streambench.harness.results.headline import RunHeadline

__all__ = ["brief", "register"]


ResultsDir = Annotated[Path, typer.Option("--results-dir", help="the directory holding the run directories")]
JsonFlag = Annotated[bool, typer.Option("--json", help="print machine-readable JSON")]
MarkdownFlag = Annotated[bool, typer.Option("--markdown", help="print Markdown (e.g. for a CI job summary)")]
RunRef = Annotated[
    str,
    typer.Argument(
        help="a run directory, a run id, or a unique prefix of one", autocompletion=completion.run_ids
    ),
]


def brief(head: RunHeadline) -> str:
    """A few figures of a run for one line of the listing (every one of them measured, or named null), and
    ``measurement INVALID`` when its measurement-quality verdict is."""
    from streambench.harness.results.markdown import format_value

    parts = []
    f1 = head.figure("f1@100ms") or next((f for f in head.figures if f.key.startswith("f1@")), None)
    for figure in (f1, head.figure("p95"), head.figure("fps"), head.figure("rtf")):
        if figure is not None:
            name = figure.key.upper() if figure.key in ("fps", "rtf") else figure.key.replace("f1", "F1")
            value = format_value(figure.value, figure.unit) + (" ms" if figure.unit == "ms" else "")
            parts.append(f"{name} {value}")
    points = [f for f in head.figures if f.key.startswith("f1[")]
    if points:
        clean = head.figure("f1[clean]")
        measured = [f for f in points if f.value is not None and f.key != "f1[clean]"]
        if clean is not None:
            parts.append(f"F1 clean {format_value(clean.value, clean.unit)}")
        if measured:
            worst = min(measured, key=lambda f: f.value or 0.0)
            parts.append(f"worst {format_value(worst.value, worst.unit)} at {worst.key[3:-1]}")
        failed_points = len([f for f in points if f.value is None])
        if failed_points:
            parts.append(f"{failed_points} point(s) failed")
    checks = [f for f in head.figures if f.unit == "check" and f.value is not None]
    if checks:
        failed = [f.key[6:-1] for f in checks if f.value == 0]
        parts.append(
            f"checks {len(checks) - len(failed)}/{len(checks)} passed"
            + (f" (failed: {', '.join(failed)})" if failed else "")
        )
    if head.measurement is not None and head.measurement.verdict == "INVALID":
        parts.append("measurement INVALID")  # its timings above are not a measurement of the model
    return " · ".join(parts)


def _notes(notes: list[str]) -> None:
    """What happened to the run index (moved aside, rebuilt, not writable), on stderr."""
    for note in notes:
        err.print(f"[yellow]note:[/] {safe(note)}", highlight=False, soft_wrap=True)


def runs(results_dir: ResultsDir = Path("results"), as_json: JsonFlag = False) -> None:
    """List the runs, newest first (runs not yet indexed are indexed on the way; a damaged index is moved
    aside and rebuilt; a read-only or full store is read from its run directories)."""
    from rich.table import Table

    from streambench.harness.results.store import StoreError
    from streambench.harness.runs.listing import survey_runs

    try:
        listing = survey_runs(results_dir)
    except StoreError as exc:
        raise fail(str(exc)) from None
    heads, unreadable = listing.heads, listing.unreadable
    _notes(listing.notes)
    if as_json:
        out.print_json(json.dumps([h.model_dump(mode="json") for h in heads]))
        return
    for name, reason in unreadable.items():
        err.print(f"[yellow]unreadable run[/] {safe(name)}: {safe(reason)}", highlight=False)
    if not heads:
        out.print(f"no readable runs in {safe(str(results_dir))}", highlight=False)
        return
    table = Table(title=f"Runs in {safe(str(results_dir))}", title_justify="left")
    # narrow terminals fold the long cells instead of squeezing columns to nothing
    table.add_column("run", overflow="fold", min_width=10)
    table.add_column("UTC", no_wrap=True)
    table.add_column("adapter", overflow="fold", min_width=7)
    table.add_column("protocol", overflow="fold", min_width=6)
    table.add_column("fingerprint", overflow="fold", min_width=6)
    table.add_column("headline", ratio=1, min_width=14)
    for h in heads:
        table.add_row(
            safe(h.run),
            f"{h.created_at:%m-%d %H:%M}",
            safe(h.adapter),
            safe("+".join(h.protocols)),
            safe(h.fingerprint) if h.fingerprint else "[dim]null[/]",
            safe(brief(h)),
        )
    out.print(table)


def _print_run(head: RunHeadline) -> None:
    from rich.table import Table

    from streambench.harness.results.markdown import format_interval, format_value

    fingerprint = head.fingerprint or f"null ({head.fingerprint_reason})"
    out.print(
        f"[bold]{safe(head.title)}[/] {safe(head.run)} · {'+'.join(head.protocols)} · "
        f"{head.created_at:%Y-%m-%d %H:%M:%S} UTC · fingerprint {safe(fingerprint)}",
        highlight=False,
    )
    if head.threads is not None:  # the thread setting that governed the model
        out.print(f"threads: {safe(head.threads)}", highlight=False)
    public = head.data.public_seed_note() if head.data is not None else None
    if public is not None:
        out.print(f"[yellow]{safe(public)}[/]", highlight=False)
    _print_verdict(head)
    table = Table(caption=" ".join(head.captions) or None)
    for column, justify in (
        ("figure", "left"),
        ("value", "right"),
        ("interval", "left"),
        ("samples", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for f in head.figures:
        unit = f" ({f.unit})" if f.unit in ("ms", "J") else ""
        value = (
            format_value(f.value, f.unit) if f.value is not None else f"[dim]null: {safe(f.reason or '')}[/]"
        )
        interval = format_interval(f)
        samples = ", ".join(
            part
            for part in (
                f"{f.n_streams} streams" if f.n_streams is not None else "",
                f"{f.n_frames} frames" if f.n_frames is not None else "",
            )
            if part
        )
        table.add_row(safe(f.label) + unit, value, interval, samples)
    out.print(table)
    for warning in head.warnings:
        out.print(f"[yellow]warning:[/] {safe(warning)}", highlight=False)


def _print_verdict(head: RunHeadline) -> None:
    """The measurement-quality verdict above the figures: red with what it means when INVALID."""
    from streambench.harness.results.quality import verdict_line

    line = safe(verdict_line(head.measurement))
    if head.measurement is not None and head.measurement.verdict == "INVALID":
        line = f"[bold red]{line}[/]: its latency figures are not a measurement of the model alone"
    out.print(line, highlight=False)


def show(
    run: RunRef,
    results_dir: ResultsDir = Path("results"),
    as_json: JsonFlag = False,
    markdown: MarkdownFlag = False,
) -> None:
    """Print one run's headline figures with their bootstrap intervals."""
    from streambench.harness.results.markdown import run_markdown
    from streambench.harness.results.store import StoreError
    from streambench.harness.runs.listing import find_run

    try:
        head, notes = find_run(run, results_dir)
    except StoreError as exc:
        raise fail(str(exc)) from None
    _notes(notes)
    if as_json:
        out.print_json(head.model_dump_json())
    elif markdown:
        typer.echo(run_markdown(head), nl=False)
    else:
        _print_run(head)


def reindex_command(results_dir: ResultsDir = Path("results"), as_json: JsonFlag = False) -> None:
    """Rebuild the run index from the run directories (a damaged one is moved aside first)."""
    from streambench.harness.results.store import StoreError, database_path
    from streambench.harness.runs.catalog import reindex

    try:
        report = reindex(results_dir)
    except StoreError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:  # moving a damaged index aside in a read-only directory
        raise fail(f"{database_path(results_dir)}: damaged, and cannot be moved aside ({exc})") from None
    if report.moved_aside is not None:
        _notes([f"{database_path(results_dir)}: damaged: moved aside to {report.moved_aside}"])
    if as_json:
        index = str(database_path(results_dir))
        document = {"index": index, "indexed": report.indexed, "skipped": report.skipped}
        out.print_json(json.dumps({**document, "moved_aside": report.moved_aside}))
        return
    out.print(
        f"indexed {len(report.indexed)} run(s) into {safe(str(database_path(results_dir)))}",
        highlight=False,
    )
    for name, why in report.skipped.items():
        err.print(f"[yellow]skipped[/] {safe(name)}: {safe(why)}", highlight=False, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the run-store commands to the ``streambench`` app."""
    app.command("runs")(runs)
    app.command("show")(show)
    app.command("reindex")(reindex_command)
    from streambench.harness.cli.compare import compare

    app.command("compare")(compare)
