"""``streambench compare BASE HEAD [HEAD...]``: the change in each headline figure from the base run to each
other run, and the regression gate (harness/results/compare.py; DESIGN.md "Results").

Two runs print one comparison, as ever. More runs print the base against each other run in turn, every
pair gated by the same ``--fail-on`` rules as two runs are; ``--json`` is then a list of the pairs'
comparisons, ``--markdown`` one status line over all pairs followed by each pair's table.

Exit codes (over every pair): 0 fine; 1 a regression under ``--fail-on``; 3 a regression not called (an
INVALID measurement, or scores of different data); 2 bad input (the message names the run or option).
A timing change involving a run whose measurement is INVALID is printed dimmed and marked ``(INVALID)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from streambench.harness.cli import completion
from streambench.harness.cli.common import fail, out
from streambench.harness.io.safe_text import safe

if TYPE_CHECKING:  # the results modules are imported by the command that runs
    import numpy as np

    from streambench.harness.results.compare import Comparison
    from streambench.harness.results.headline import Figure, RunHeadline

__all__ = ["compare"]

ResultsDir = Annotated[Path, typer.Option("--results-dir", help="the directory holding the run directories")]


def _latencies(run_dir: Path, head: RunHeadline) -> np.ndarray | None:
    """Per-frame latencies (ns) of the run, from the first of its protocols that records them."""
    from streambench.harness.runs import registry

    for name in head.protocols:
        latencies = registry.get(name).frame_latencies_ns(run_dir)
        if latencies is not None:
            return latencies
    return None


def _sides(fig_base: Figure | None, fig_head: Figure | None) -> list[str]:
    from streambench.harness.results.markdown import format_value

    sides = []
    for fig in (fig_base, fig_head):
        if fig is None or fig.value is None:
            sides.append("[dim]null[/]" if fig is not None else "–")
            continue
        cell = format_value(fig.value, fig.unit)
        if fig.low is not None and fig.high is not None:
            cell += f" [{format_value(fig.low, fig.unit)}, {format_value(fig.high, fig.unit)}]"
        sides.append(safe(cell))
    return sides


def _print_comparison(comparison: Comparison) -> None:
    from rich.table import Table

    from streambench.harness.results.headline import LATENCY_KEYS
    from streambench.harness.results.markdown import format_change

    base, head = comparison.base, comparison.head
    out.print(  # the model's name first, the run's id second
        f"[bold]{safe(base.title)}[/] {safe(base.run)} → [bold]{safe(head.title)}[/] {safe(head.run)}",
        highlight=False,
    )
    for note in (comparison.fingerprint_note, comparison.data_note):
        if note:
            out.print(f"[yellow]note:[/] {safe(note)}", highlight=False)
    for h in (base, head):
        public = h.data.public_seed_note() if h.data is not None else None
        if public is not None:
            out.print(f"{safe(h.run)}: {safe(public)}", highlight=False)
    table = Table(caption=" ".join(dict.fromkeys(base.captions + head.captions)) or None)
    for column, justify in (
        ("figure", "left"),
        ("base", "right"),
        ("head", "right"),
        ("change", "right"),
        ("verdict", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for change in comparison.changes:
        delta = format_change(change)
        if comparison.invalid_timing and change.key in LATENCY_KEYS and change.change is not None:
            delta = f"[dim]{delta} (INVALID)[/]"
        verdict = safe(change.verdict)
        table.add_row(
            safe(change.label) + (f" ({change.unit})" if change.unit in ("ms", "J") else ""),
            *_sides(change.base, change.head),
            delta,
            f"[bold red]{verdict}[/]" if change.regression else verdict,
        )
    out.print(table)
    for h in (base, head):
        q = h.measurement
        if q is not None:
            why = "; ".join(q.reasons + q.notes)
            out.print(
                f"{safe(h.run)} measurement {q.verdict}" + (f": {safe(why)}" if why else ""),
                highlight=False,
            )
    if comparison.invalid_timing:
        out.print(
            f"[yellow]timing changes are not measurements[/] ({safe(comparison.invalid_timing)}): "
            "marked (INVALID)",
            highlight=False,
        )
    if comparison.refusal:
        out.print(f"[yellow]not called:[/] {safe(comparison.refusal)}", highlight=False)
    if comparison.latency_note:
        out.print(f"[yellow]note:[/] {safe(comparison.latency_note)}", highlight=False)
    if comparison.regressions:
        out.print(f"[bold red]regression:[/] {safe(', '.join(comparison.regressions))}", highlight=False)
    elif comparison.rules:
        out.print(
            f"no regression against {safe(', '.join(r.describe() for r in comparison.rules))}",
            highlight=False,
        )


def _print_summary(comparisons: list[Comparison]) -> None:
    """After several pairs: one line per head, the gate's outcome for it."""
    base = comparisons[0].base
    title = f"[bold]{safe(base.title)}[/] {safe(base.run)}"
    out.print(f"{title} against {len(comparisons)} runs:", highlight=False)
    for c in comparisons:
        if c.regressions:
            outcome = f"[bold red]regression:[/] {safe(', '.join(c.regressions))}"
        elif c.refusal:
            outcome = "[yellow]not called[/] (inconclusive)"
        else:
            outcome = "no regression" if c.rules else "no rules"
        out.print(f"  → {safe(c.head.title)} {safe(c.head.run)}: {outcome}", highlight=False)


def compare(
    base: Annotated[
        str,
        typer.Argument(
            help="the base run (directory, id or unique prefix)", autocompletion=completion.run_ids
        ),
    ],
    heads: Annotated[
        list[str],
        typer.Argument(
            help="the head run, or several: each is compared with the base (directory, id or unique prefix)",
            autocompletion=completion.run_ids,
            show_default=False,
        ),
    ],
    results_dir: ResultsDir = Path("results"),
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help='regression rules, e.g. "p95:+10%,f1@100ms:-1pp"; exit 1 when one is hit (by any head)',
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="compare runs whose fingerprints differ; call regressions of INVALID measurements, and of "
            "scores between runs of different data (e.g. two secret seeds)",
        ),
    ] = False,
    alpha: Annotated[
        float, typer.Option(help="level of the Mann-Whitney test gating latency regressions")
    ] = 0.01,
    as_json: Annotated[bool, typer.Option("--json", help="print machine-readable JSON")] = False,
    markdown: Annotated[
        bool, typer.Option("--markdown", help="print Markdown (e.g. for a CI job summary)")
    ] = False,
) -> None:
    """The change in each headline figure from the base run to each other run; with --fail-on, a
    regression gate on every pair."""
    from streambench.harness.results.compare import (
        FailOnSpec,
        FailOnSpecError,
        FingerprintMismatchError,
        compare_each,
        exit_code,
    )
    from streambench.harness.results.files import ResultFileError
    from streambench.harness.results.headline import LATENCY_KEYS
    from streambench.harness.results.markdown import compare_many_markdown, compare_markdown
    from streambench.harness.results.store import StoreError
    from streambench.harness.runs.catalog import figure_keys, load_headline, resolve_run

    try:
        spec = FailOnSpec.parse(fail_on, figure_keys())
        base_dir = resolve_run(base, results_dir)
        head_dirs = [resolve_run(head, results_dir) for head in heads]
        base_head = load_headline(base_dir)
        head_heads = [load_headline(d) for d in head_dirs]
        base_ns, heads_ns = None, None
        if any(r.key in LATENCY_KEYS for r in spec.rules):
            base_ns = _latencies(base_dir, base_head)
            heads_ns = [_latencies(d, h) for d, h in zip(head_dirs, head_heads, strict=True)]
        comparisons = compare_each(base_head, head_heads, spec, base_ns, heads_ns, alpha=alpha, force=force)
    except (StoreError, ResultFileError, FailOnSpecError, FingerprintMismatchError, ValueError) as exc:
        raise fail(str(exc)) from None
    single = len(comparisons) == 1
    if as_json:
        documents = [json.loads(c.model_dump_json()) for c in comparisons]
        out.print_json(json.dumps(documents[0] if single else documents))
    elif markdown:
        text = compare_markdown(comparisons[0]) if single else compare_many_markdown(comparisons)
        typer.echo(text, nl=False)
    else:
        for k, comparison in enumerate(comparisons):
            if k:
                out.print()
            _print_comparison(comparison)
        if not single:
            out.print()
            _print_summary(comparisons)
    raise typer.Exit(code=exit_code(comparisons))
