"""``streambench report``: one self-contained HTML file for one run or a set of runs (DESIGN.md
"Results": ``report.html``, every string escaped; seed 004 §6.3 for the Pareto analysis and the latency
breakdown).

One run: the sections of every registered protocol that ran, in registry order (the online protocol's
summary with intervals, latency histogram and CDF, latency over the run, F1@Δt curves, latency breakdown,
reliability diagram, DET / ROC; robustness curves; causality checks), the headline figures of the
protocols that draw no section of their own, one note naming the sections a missing protocol run would
fill, and the environment manifest.

Several runs: the comparison first (:mod:`streambench.harness.report.compare`: the verdict for a latency
budget, runs, headline figures with their differences and intervals, overlaid latency distributions,
Pareto fronts), then each run's own report
collapsed, to open when wanted (a reader looks for the comparison, not for the 20,000 pixels
of stacked single-run reports above it). The bundles are read by
:func:`streambench.harness.runs.catalog.load_bundle`; this room only draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from streambench.harness.report.bundle import RunBundle, SectionSpec
from streambench.harness.report.compare import comparison_sections, run_label
from streambench.harness.report.html import Group, Markup, Section, concat, markup, page
from streambench.harness.report.numbers import latency_ms, percent
from streambench.harness.report.sections_environment import environment_section
from streambench.harness.report.sections_quality import protocols_section
from streambench.harness.results.quality import invalid_reason

__all__ = ["RunBundle", "SectionSpec", "build_report"]

_OTHER_PROTOCOLS = SectionSpec("protocols", "Other protocols", protocols_section)


def _lacking_note(bundle: RunBundle) -> Markup | None:
    """One note for every section whose protocol did not run here (instead of a box per section), and
    the protocols that draw no section and did not run either."""
    items = []
    for protocol, specs in bundle.sections_without_data().items():
        titles = ", ".join(spec.title for spec in specs)
        why = bundle.missing.get(protocol, f"no {protocol} result")
        hint = Markup()
        if bundle.result is not None:  # a protocol joins an online run's directory (same adapter and data)
            command = f"streambench run --protocol {protocol} --run-id {bundle.name}"
            hint = markup("; add one with <code>{}</code>", command)
        items.append(markup("<li>{}: need a {} run ({}){}</li>", titles, protocol, why, hint))
    if not bundle.headlines:
        absent_files = [
            f for name, f in bundle.others.items() if bundle.missing.get(name, "").startswith("no ")
        ]
        if absent_files:
            names = ", ".join(n for n, f in bundle.others.items() if f in absent_files)
            items.append(
                markup("<li>{} (headline figures): none of {} here</li>", names, ", ".join(absent_files))
            )
        for name in bundle.others:
            why = bundle.missing.get(name, "")
            if why and not why.startswith("no "):
                items.append(markup("<li>{}: {}</li>", name, why))
    if not items:
        return None
    return markup('<div class="absent">Not in this run directory:<ul>{}</ul></div>', concat(items))


def _run_sections(index: int, bundle: RunBundle) -> list[Section]:
    """A run's own sections: those with data, one note for the rest, the environment."""
    lacking = {spec.key for specs in bundle.sections_without_data().values() for spec in specs}
    specs = [s for s in bundle.sections if s.key not in lacking]
    if bundle.headlines:
        specs.append(_OTHER_PROTOCOLS)
    sections = [Section(f"run{index}-{spec.key}", spec.title, spec.render(bundle)) for spec in specs]
    note = _lacking_note(bundle)
    if note is not None:
        sections.append(Section(f"run{index}-lacking", "Sections without data", note))
    sections.append(Section(f"run{index}-environment", "Environment", environment_section(bundle)))
    return sections


def _run_summary(index: int, bundle: RunBundle) -> Markup:
    """The one line a collapsed run shows: its name, adapter, F1 at its largest Δt, mean latency."""
    r = bundle.result
    text = f"Run {run_label(index, bundle)}"
    verdict: Markup | str = ""
    if r is not None:
        delta = r.protocol_config.deltas_ms[-1]
        mean = r.metrics.headline.mean_latency_ms.estimate
        f1 = percent(r.metrics.f1_at(delta))
        text += f": {r.adapter}, F1@{delta:g} ms {f1}, mean latency {latency_ms(mean)}"
        if r.measurement_quality is not None:
            text += ", "
            verdict = f"measurement {r.measurement_quality.verdict}"
            if invalid_reason(r.measurement_quality):
                verdict = Markup('<span class="fail">measurement INVALID</span>')
    else:
        text += f": {', '.join(bundle.results) or 'no readable result'}"
    return markup('{}{} <span class="small">(the run\'s own report)</span>', text, verdict)


def _title(bundles: Sequence[RunBundle]) -> str:
    if len(bundles) == 1:
        return f"streambench report: {bundles[0].label}"
    if len(bundles) == 2:
        return f"streambench comparison: {bundles[0].label} vs {bundles[1].label}"
    return f"streambench comparison: {len(bundles)} runs"


def build_report(
    bundles: Sequence[RunBundle], pareto_delta_ms: float | None = None, budget_ms: float | None = None
) -> str:
    """The report's HTML for ``bundles`` (in the order given; the first is the reference of the
    comparison's differences); ``budget_ms``: the latency budget of the comparison's verdict (default:
    the largest Δt every run scored)."""
    if not bundles:
        raise ValueError("a report needs at least one run")
    groups: list[Group] = []
    if len(bundles) > 1:
        sections = comparison_sections(bundles, pareto_delta_ms, budget_ms)
        groups.append(Group("compare", "Comparison", sections))
    for i, bundle in enumerate(bundles):
        sections = _run_sections(i, bundle)
        if len(bundles) == 1:
            groups.append(Group(f"run{i}", f"Run: {bundle.label}", sections))
        else:
            groups.append(
                Group(f"run{i}", f"Run {run_label(i, bundle)}", sections, True, _run_summary(i, bundle))
            )
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    intro = markup(
        "<p>Generated {} from {} run director{}. Every number is read from the run's files or computed "
        "from its recorded arrays; a figure that was not measured is shown as — with the reason.</p>",
        generated,
        len(bundles),
        "y" if len(bundles) == 1 else "ies",
    )
    return page(_title(bundles), intro, groups)
