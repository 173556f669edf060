"""How an A/B job reads (harness/runs/ab.py): the console's and Markdown's lines, shared by ``streambench ab``
and the pytest fixture's failure message."""

from __future__ import annotations

import os

from streambench.harness.results.gate import Effect
from streambench.harness.runs.ab import ABReport

__all__ = [
    "ab_markdown",
    "code_lines",
    "effects_shown",
    "interval_levels",
    "judged_on",
    "looks_line",
    "side_titles",
    "undecided",
]


def interval_levels(report: ABReport) -> str:
    """What the intervals are: their two one-sided levels per look, and the looks."""
    return (
        f"intervals: lower bound {1 - (1 - report.confidence_per_look) / 2:.4g}, upper bound "
        f"{report.pass_confidence_per_look:.4g} (one-sided; {report.looks} of {report.planned_looks} planned "
        "looks)"
    )


def effects_shown(report: ABReport) -> list[tuple[str, Effect]]:
    """Each figure's effect on wall time, then (``on="both"``) on CPU time, with its label."""
    shown = [(e.key, e) for e in report.gate.effects]
    if report.gate_cpu is not None:
        shown += [(f"{e.key} CPU", e) for e in report.gate_cpu.effects]
    return shown


def undecided(report: ABReport) -> str:
    """Why an inconclusive job stopped, and what would decide it (not a pass: exit 3)."""
    more = [v.more_rounds for v in report.gate.rules if v.verdict == "inconclusive" and v.more_rounds]
    need = f"; about {max(more)} more pairs would decide it" if more else ""
    why = {
        "budget": f"the next look did not fit in the {report.budget_s:g} s budget"
        if report.budget_s is not None
        else "the budget ran out",
        "max_rounds": "max_rounds reached",
        "one look": "its one look",
    }.get(report.stop, report.stop)
    return (
        f"not decided after {report.pairs} pairs in {report.seconds:.0f} s ({why}){need}: a gate that "
        "cannot decide does not pass (exit 3); a larger --budget-s, or a quieter machine, decides it"
    )


def judged_on(report: ABReport) -> str:
    """The clock(s) the verdict rests on, in words."""
    if report.on == "cpu":
        return f"CPU time ({report.cpu_clock})"
    if report.on == "both" and report.gate_cpu is not None:
        return f"wall time, and CPU time ({report.cpu_clock}) for a regression"
    return "wall time"


def looks_line(report: ABReport) -> str:
    """How the job looked and why it stopped."""
    planned = ", ".join(str(n) for n in report.look_at) or str(report.pairs)
    budget = "no budget" if report.budget_s is None else f"budget {report.budget_s:g} s"
    grown = f", rounds grown: {'; '.join(report.resized)}" if report.resized else ""
    return (
        f"{report.looks} of {report.planned_looks} looks (planned at {planned} pairs: {report.look_bound}), "
        f"{budget}, stopped: {report.stop or 'one look'} after {report.seconds:.0f} s{grown}"
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{(value - 1) * 100:+.1f} %"


def side_titles(report: ABReport) -> tuple[str, str]:
    """What tells the two sides apart, for a header (not "X vs X" when only options,
    the checkout or the interpreter differ): the adapter, plus whatever differs of its options, its
    ``PYTHONPATH`` and its interpreter."""
    base, head = report.sides
    titles = [[side.adapter] for side in (base, head)]
    keys = sorted(set(base.adapter_options) | set(head.adapter_options))
    differing = [k for k in keys if base.adapter_options.get(k) != head.adapter_options.get(k)]
    for title, side in zip(titles, (base, head), strict=True):
        if differing:
            shown = ", ".join(f"{k}={side.adapter_options.get(k, '(default)')}" for k in differing)
            title.append(f"({shown})")
        if base.pythonpath != head.pythonpath:
            title.append(f"[code from {os.pathsep.join(side.pythonpath) or 'the working directory'}]")
        if base.python != head.python:
            title.append(f"[{side.python}]")
    return " ".join(titles[0]), " ".join(titles[1])


def code_lines(report: ABReport) -> list[str]:
    """Per side, the files its code came from and their hashes (the first 12 hex digits of sha256)."""
    lines = []
    for side in report.sides:
        if side.code is None:
            lines.append(f"{side.label} code: not reported by its worker (another checkout's harness)")
            continue
        shown = [
            f"{c.name} from {c.file or '(no file)'}" + (f" (sha256 {c.sha256[:12]})" if c.sha256 else "")
            for c in side.code
        ]
        lines.append(f"{side.label} code: " + "; ".join(shown))
    for side in report.sides:
        lines.extend(f"{side.label} without: {gap}" for gap in side.trust_gaps)
    return lines


def ab_markdown(report: ABReport) -> str:
    """The report as Markdown (a CI job summary)."""
    base, head = report.sides
    base_title, head_title = side_titles(report)
    lines = [
        f"### streambench ab: **{report.verdict}** (exit {report.exit_code})",
        "",
        f"{base.label} `{base_title}` vs {head.label} `{head_title}` · {report.mode} mode "
        f"({report.mode_reason}) · {report.execution} workers ({report.execution_reason}) · "
        f"{report.pairs} pairs of rounds, {report.streams_per_round} streams each, "
        f"{report.workers} worker processes per side · "
        f"judged on {judged_on(report)} · {looks_line(report)} · "
        f"{interval_levels(report)}",
        "",
        *(f"- {line}" for line in code_lines(report)),
        f"- measured as `streambench run` measures, except: {'; '.join(report.differs_from_run)}",
        "",
        "| figure | base (median of rounds) | head | head / base | interval | noise between pairs |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for key, e in effects_shown(report):
        lines.append(
            f"| {key} | {e.base_median / 1e6:.4g} ms | {e.head_median / 1e6:.4g} ms | {_pct(e.ratio)} | "
            f"[{_pct(e.low)}, {_pct(e.high)}] | ±{e.pair_spread:.1%} |"
        )
    lines += ["", "| rule | verdict | why |", "|---|---|---|"]
    for v in report.gate.rules:
        label = (
            v.verdict
            + (" (improvement)" if v.improvement else "")
            + (" on CPU time" if v.clock == "cpu" else "")
        )
        lines.append(f"| `{v.rule.describe()}` | {label} | {v.reason} |")
    if report.verdict == "inconclusive" and not report.refusal:
        lines += ["", f"**Undecided:** {undecided(report)}"]
    lines += ["", "| side | measurement | reasons / notes |", "|---|---|---|"]
    for side in report.sides:
        why = "; ".join(side.quality.reasons + side.quality.notes) or "–"
        lines.append(f"| {side.label} | {side.quality.verdict} | {why} |")
    if report.refusal:
        lines += ["", f"**Not called:** {report.refusal}"]
    return "\n".join(lines) + "\n"
