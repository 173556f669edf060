"""Markdown summaries of a run or a comparison, for a CI job summary (GitHub-flavoured tables).

Every string taken from a result (run names, adapter names, reasons, warnings) is escaped, so a
result cannot inject markup into the page (DESIGN.md "Results": "Reports escape every string they show").
Figures are the headline of :mod:`streambench.harness.results.headline`; a figure that was not measured is
shown as "null" with its reason, never as a number.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from streambench.harness.results.headline import LATENCY_KEYS, Figure, RunHeadline
from streambench.harness.results.quality import verdict_line

if TYPE_CHECKING:  # a run's summary (streambench runs, show) needs no comparison
    from streambench.harness.results.compare import Comparison, FigureChange

__all__ = [
    "compare_many_markdown",
    "compare_markdown",
    "escape_md",
    "format_change",
    "format_interval",
    "format_value",
    "run_markdown",
]

_SPECIAL = re.compile(r"([\\`*_\[\]{}|#~!])")


def escape_md(text: str) -> str:
    """Escape Markdown and HTML specials; newlines become spaces (a table cell is one line)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", " ".join(text.split()))


def format_value(value: float | None, unit: str) -> str:
    """How every figure is printed, by ``run``, ``show``, ``runs``, ``compare`` and the markdown alike: a
    share (unit ``%``: F1, accuracy, EER; stored as a fraction) as a percentage to 2 decimals, ms to 3, FPS
    whole, RTF and J to 4 significant digits, other plain numbers to 4 decimals; a check as pass / FAIL."""
    if value is None:
        return "null"
    if unit == "check":
        return "pass" if value >= 1 else "FAIL"
    if unit == "%":
        return f"{value * 100:.2f} %"
    if unit == "ms":
        return f"{value:.3f}"
    if unit == "fps":
        return f"{value:.0f}"
    if unit in ("x", "J"):
        return f"{value:.4g}"
    return f"{value:.4f}"


def _unit(unit: str) -> str:
    return f" ({unit})" if unit in ("ms", "J") else ""


def format_interval(figure: Figure) -> str:
    """``95 % [low, high]``, or empty when the figure has no bootstrap interval."""
    if figure.low is None or figure.high is None:
        return ""
    level = f"{figure.confidence * 100:g} % " if figure.confidence is not None else ""
    return f"{level}[{format_value(figure.low, figure.unit)}, {format_value(figure.high, figure.unit)}]"


def _samples(figure: Figure) -> str:
    parts = []
    if figure.n_streams is not None:
        parts.append(f"{figure.n_streams} streams")
    if figure.n_frames is not None:
        parts.append(f"{figure.n_frames} frames")
    return ", ".join(parts)


def _value_cell(figure: Figure | None) -> str:
    if figure is None:
        return "–"
    if figure.value is None:
        return f"null: {escape_md(figure.reason or 'not measured')}"
    if figure.unit == "check" and figure.value < 1 and figure.reason:
        return f"FAIL: {escape_md(figure.reason)}"
    return format_value(figure.value, figure.unit)


def _header(head: RunHeadline) -> str:
    fingerprint = (
        escape_md(head.fingerprint)
        if head.fingerprint is not None
        else f"null: {escape_md(head.fingerprint_reason or 'not recorded')}"
    )
    public = head.data.public_seed_note() if head.data is not None else None
    return (
        f"adapter {escape_md(head.adapter)} · protocol {escape_md('+'.join(head.protocols))} · "
        f"{head.created_at:%Y-%m-%d %H:%M:%S} UTC · environment fingerprint {fingerprint}"
        + (f" · **{escape_md(public)}**" if public is not None else "")
    )


def _verdict(head: RunHeadline) -> str:
    """The measurement-quality verdict as a line above the figures: bold when INVALID, with what it
    means for the timings."""
    line = escape_md(verdict_line(head.measurement))
    if head.measurement is not None and head.measurement.verdict == "INVALID":
        return f"**{line}**: its latency figures are not a measurement of the model alone"
    return line[0].upper() + line[1:]


def run_markdown(head: RunHeadline) -> str:
    """One run: its header line, its measurement-quality verdict, a table of its headline figures and its
    warnings."""
    lines = [
        f"### streambench run {escape_md(head.run)}",
        "",
        _header(head),
        "",
        _verdict(head),
        "",
        "| figure | value | bootstrap interval | samples |",
        "| --- | ---: | --- | --- |",
    ]
    for figure in head.figures:
        lines.append(
            f"| {escape_md(figure.label)}{_unit(figure.unit)} | {_value_cell(figure)} "
            f"| {format_interval(figure)} | {_samples(figure)} |"
        )
    for caption in head.captions:
        lines += ["", escape_md(caption)]
    lines.extend(f"\n> **warning:** {escape_md(w)}" for w in head.warnings)
    return "\n".join(lines) + "\n"


def format_change(change: FigureChange) -> str:
    """The change of one figure, head - base: a share's in percentage points (``+1.25 pp``), anything
    else in its unit, with the relative change beside it; a check as now passes / now FAILS."""
    if change.change is None:
        return "–"
    if change.unit == "check":
        return "unchanged" if change.change == 0 else ("now passes" if change.change > 0 else "now FAILS")
    absolute = f"{change.change * 100:+.2f} pp" if change.unit == "%" else f"{change.change:+.4g}"
    return absolute if change.relative is None else f"{absolute} ({change.relative * 100:+.1f} %)"


def _side(figure: Figure | None) -> str:
    cell = _value_cell(figure)
    if figure is not None and figure.value is not None and format_interval(figure):
        cell += f" {format_interval(figure)}"
    return cell


def compare_markdown(comparison: Comparison) -> str:
    """A comparison: verdict first, then base and head with their intervals, the change and the verdict."""
    base, head = comparison.base, comparison.head
    if comparison.regressions:
        status = f"**{len(comparison.regressions)} regression(s):** " + ", ".join(
            escape_md(k) for k in comparison.regressions
        )
    elif comparison.refusal:
        status = f"**Inconclusive:** {escape_md(comparison.refusal)}"
    elif comparison.rules:
        status = "**No regression** against " + ", ".join(escape_md(r.describe()) for r in comparison.rules)
    else:
        status = "No --fail-on rules: changes shown, nothing judged."
    lines = [
        f"### streambench compare {escape_md(base.title)} ({escape_md(base.run)}) → "
        f"{escape_md(head.title)} ({escape_md(head.run)})",
        "",
        status,
        "",
        f"- base: {_header(base)}",
        f"- head: {_header(head)}",
    ]
    if comparison.fingerprint_note:
        lines.append(f"- note: {escape_md(comparison.fingerprint_note)}")
    if comparison.data_note:
        lines.append(f"- note: {escape_md(comparison.data_note)}")
    if comparison.latency_note:
        lines.append(f"- note: {escape_md(comparison.latency_note)}")
    for side, h in (("base", base), ("head", head)):
        if h.measurement is not None:
            why = "; ".join(h.measurement.reasons + h.measurement.notes)
            lines.append(
                f"- {side} measurement: {h.measurement.verdict}" + (f" ({escape_md(why)})" if why else "")
            )
    if comparison.invalid_timing:
        lines.append(
            f"- timing changes are not measurements ({escape_md(comparison.invalid_timing)}): marked "
            "_(INVALID)_ below"
        )
    lines += [
        "",
        "| figure | base | head | change | verdict |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for change in comparison.changes:
        delta = format_change(change)
        if comparison.invalid_timing and change.key in LATENCY_KEYS and change.change is not None:
            delta = f"_{delta} (INVALID)_"
        lines.append(
            f"| {escape_md(change.label)}{_unit(change.unit)} | {_side(change.base)} | {_side(change.head)} "
            f"| {delta} | {escape_md(change.verdict)} |"
        )
    for caption in dict.fromkeys(base.captions + head.captions):  # each once, in order
        lines += ["", escape_md(caption)]
    return "\n".join(lines) + "\n"


def compare_many_markdown(comparisons: list[Comparison]) -> str:
    """The base against each of several heads (``compare BASE HEAD HEAD...``): one status line over every
    pair, then each pair as :func:`compare_markdown` shows two runs."""
    regressions = [
        f"{c.head.title} ({c.head.run}): {', '.join(c.regressions)}" for c in comparisons if c.regressions
    ]
    refused = [f"{c.head.title} ({c.head.run})" for c in comparisons if c.refusal and not c.regressions]
    if regressions:
        status = "**Regression(s)** against the base: " + "; ".join(escape_md(r) for r in regressions)
    elif refused:
        status = "**Inconclusive** for " + ", ".join(escape_md(r) for r in refused)
    elif any(c.rules for c in comparisons):
        status = f"**No regression** in any of the {len(comparisons)} runs against the base"
    else:
        status = "No --fail-on rules: changes shown, nothing judged."
    base = f"{comparisons[0].base.title} ({comparisons[0].base.run})" if comparisons else ""
    parts = [f"## streambench compare: base {escape_md(base)} against {len(comparisons)} runs\n\n{status}\n"]
    return "\n".join(parts + [compare_markdown(c) for c in comparisons])
