"""``streambench report RUN [RUN...]``: one self-contained HTML report (harness/report/); with
several runs the comparison opens with the verdict for a latency budget (``--budget-ms``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from streambench.harness.cli import completion
from streambench.harness.io.safe_text import safe

__all__ = ["register", "report"]


def report(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="run directories, or run ids under --results-dir", autocompletion=completion.run_ids
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="HTML file to write (default: <run dir>/report.html for one run, report.html for several)",
        ),
    ] = None,
    results_dir: Annotated[Path, typer.Option("--results-dir", help="where run ids are looked up")] = Path(
        "results"
    ),
    pareto_delta_ms: Annotated[
        float | None,
        typer.Option(help="Δt of the F1 compared across runs (default: the largest Δt every run scored)"),
    ] = None,
    budget_ms: Annotated[
        float | None,
        typer.Option(
            "--budget-ms",
            help="latency budget (ms) of the comparison's verdict: the most accurate run whose p95 latency "
            "fits it (default: the largest Δt every run scored)",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the written file's path as JSON")] = False,
) -> None:
    """Write an HTML report (plots inline, no network needed) of one run, or of several compared."""
    from streambench.harness.results.store import StoreError
    from streambench.harness.runs.catalog import resolve_run, write_report

    out, err = Console(), Console(stderr=True)
    if budget_ms is not None and (not math.isfinite(budget_ms) or budget_ms <= 0 or len(runs) < 2):
        why = (
            f"must be a positive number of milliseconds, got {budget_ms:g}"
            if len(runs) > 1
            else "chooses between runs: give two or more"
        )
        err.print(f"[bold red]error:[/] --budget-ms {why}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=2)
    try:
        if output is None:
            single = len(runs) == 1
            output = resolve_run(runs[0], results_dir) / "report.html" if single else Path("report.html")
        written = write_report(runs, output, results_dir, pareto_delta_ms, budget_ms)
    except (StoreError, ValueError, OSError) as exc:
        err.print(f"[bold red]error:[/] {safe(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(code=2) from None
    if as_json:
        out.print_json(json.dumps({"report": str(written), "runs": runs}))
        return
    out.print(f"wrote [bold]{safe(str(written))}[/]", highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``report`` to the ``streambench`` application."""
    app.command("report")(report)
