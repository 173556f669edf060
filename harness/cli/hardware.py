"""``streambench hardware STORE_OR_RUN_DIR... --baseline ADAPTER``: the hardware-normalised view across
machines (seed 004 §6.3.1; :mod:`streambench.harness.results.hardware`), printed as tables and written as
one HTML page (:mod:`streambench.harness.report.hardware_html`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from streambench.harness.cli.common import fail, out
from streambench.harness.io.safe_text import safe

if TYPE_CHECKING:
    from streambench.harness.results.hardware import HardwareView

__all__ = ["hardware", "register"]


def _table(title: str, caption: str, headers: list[str], rows: list[list[tuple[str | None, str]]]) -> None:
    """A rich table whose nulls are "— [n]", the reasons listed under it (once each)."""
    from rich.table import Table

    from streambench.harness.report.hardware_html import Footnotes

    notes = Footnotes()
    table = Table(title=safe(title), caption=safe(caption), title_justify="left")
    for name in headers:
        table.add_column(name, overflow="fold")
    for cells in rows:
        table.add_row(
            *(safe(text) if text is not None else f"[dim]— [{notes.mark(why)}][/dim]" for text, why in cells)
        )
    out.print(table)
    for reason, number in notes.reasons.items():
        out.print(f"  [{number}] {safe(reason)}", highlight=False, markup=False)


def _print(view: HardwareView, written: Path) -> None:
    from streambench.harness.report.hardware_html import (
        NORMALISED_HEADERS,
        RAW_HEADERS,
        normalised_cells,
        raw_cells,
    )

    delta = f"{view.delta_ms:g} ms"
    _table(
        f"Against {view.baseline} measured on the same machine (comparable across machines)",
        f"{100 * view.confidence:g} % intervals from both runs' streams (two-sample bootstrap)",
        [h.replace("Δt", delta) for h in NORMALISED_HEADERS],
        [normalised_cells(row) for row in view.rows()],
    )
    for row in view.rows():
        for note in row.notes:
            out.print(f"[yellow]note:[/] {safe(row.method)} on {safe(row.machine)}: {safe(note)}")
    for machine in view.machines:
        _table(
            f"{machine.name} (fingerprint {machine.fingerprint}): raw figures, this machine only",
            ", ".join(f"{k} {v}" for k, v in machine.hardware.items()),
            [h.replace("Δt", delta) for h in RAW_HEADERS],
            [raw_cells(run) for run in machine.runs],
        )
        if machine.refused:
            out.print(f"[bold red]refused:[/] {safe(machine.name)}: {safe(machine.refused)}", highlight=False)
        for run_id, why in machine.unused.items():
            out.print(f"not used: run {safe(run_id)}: {safe(why)}", highlight=False)
        for note in machine.notes:
            out.print(f"[yellow]note:[/] {safe(machine.name)}: {safe(note)}", highlight=False)
    for path, why in view.skipped.items():
        out.print(f"skipped {safe(path)}: {safe(why)}", highlight=False)
    for note in view.notes:
        out.print(f"[yellow]note:[/] {safe(note)}", highlight=False)
    out.print(f"wrote [bold]{safe(str(written))}[/]", highlight=False)


def hardware(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="stores (results directories) or run directories of online runs, from one or more machines"
        ),
    ],
    baseline: Annotated[
        str,
        typer.Option(
            "--baseline",
            help="the adapter every machine's runs are divided by, as the runs name it (registry name or "
            "module:Class); a machine with no run of it is refused",
        ),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="HTML file to write")] = Path(
        "hardware.html"
    ),
    delta_ms: Annotated[
        float | None,
        typer.Option("--delta-ms", help="Δt of the F1 shown (default: the largest Δt every run scored)"),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the view as JSON (and the written page's path)")
    ] = False,
) -> None:
    """Runs from several machines side by side: each method's latency, FPS and energy divided by the
    baseline's measured on the same machine (speed-up, FLOPs-normalised latency), with intervals from both
    runs; the raw figures per machine beside them."""
    from streambench.harness.report.hardware_html import write_hardware_html
    from streambench.harness.results.hardware import build_view

    try:
        view = build_view(paths, baseline, delta_ms)
    except (ValueError, OSError) as exc:  # HardwareInputError, ResultFileError: they name the path or option
        raise fail(str(exc).splitlines()[0]) from None
    try:
        written = write_hardware_html(view, output)
    except OSError as exc:
        raise fail(f"--output {output}: cannot write the page ({exc.strerror or exc})") from None
    if as_json:
        out.print_json(json.dumps({"report": str(written), **view.model_dump(mode="json")}))
        return
    _print(view, written)


def register(app: typer.Typer) -> None:
    """Add ``hardware`` to the ``streambench`` application."""
    app.command("hardware")(hardware)
