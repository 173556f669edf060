"""``streambench report``: one self-contained HTML file for one run or a set of runs (issue 6; DESIGN.md
"Results": ``report.html``, every string escaped; seed 004 §6.3 for the Pareto analysis and the latency
breakdown).

Per run: the sections of every registered protocol, in registry order (the online protocol's summary
with intervals, latency histogram and CDF, latency over the run, F1@Δt curves, latency breakdown,
reliability diagram, DET / ROC; robustness curves; causality checks), the headline figures of the
protocols that draw no section of their own, and the environment manifest. Across runs: a comparison
table and the Pareto fronts of F1 against latency and, where measured, energy. A section without data
says why. The bundles are read by :func:`harness.runs.catalog.load_bundle`; this room only draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from harness.report.bundle import RunBundle, SectionSpec
from harness.report.compare import comparison_sections
from harness.report.html import Section, esc, page
from harness.report.sections_quality import protocols_section
from harness.report.sections_run import environment_section

__all__ = ["RunBundle", "SectionSpec", "build_report"]

_OTHER_PROTOCOLS = SectionSpec("protocols", "Other protocols", protocols_section)


def _environment(bundle: RunBundle) -> str:
    return environment_section(bundle.result, bundle.result_reason)


def build_report(bundles: Sequence[RunBundle], pareto_delta_ms: float | None = None) -> str:
    """The report's HTML for ``bundles`` (in the order given)."""
    if not bundles:
        raise ValueError("a report needs at least one run")
    groups: list[tuple[str, str, Sequence[Section]]] = []
    for i, bundle in enumerate(bundles):
        specs = [*bundle.sections, *([_OTHER_PROTOCOLS] if bundle.others else [])]
        sections = [Section(f"run{i}-{spec.key}", spec.title, spec.render(bundle)) for spec in specs]
        sections.append(Section(f"run{i}-environment", "Environment", _environment(bundle)))
        groups.append((f"run{i}", f"Run #{i + 1}: {bundle.name}", sections))
    if len(bundles) > 1:
        groups.append(("compare", "Comparison across runs", comparison_sections(bundles, pareto_delta_ms)))
    title = (
        f"streambench report: {bundles[0].name}"
        if len(bundles) == 1
        else (f"streambench report: {len(bundles)} runs")
    )
    generated = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    intro = (
        f"<p>Generated {esc(generated)} from {len(bundles)} run director"
        f"{'y' if len(bundles) == 1 else 'ies'}. Every number is read from the run's files or computed "
        "from its recorded arrays; a figure that was not measured is shown as null with the reason.</p>"
    )
    return page(title, intro, groups)
