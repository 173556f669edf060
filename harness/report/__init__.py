"""``streambench report``: one self-contained HTML file for one run or a set of runs (issue 6; DESIGN.md
"Results": ``report.html``, every string escaped; seed 004 §6.3 for the Pareto analysis and the latency
breakdown).

Per run: summary with intervals, latency histogram and CDF (p50 / p95 / p99), latency over the run,
F1@Δt curves (algorithmic and compute-aware), latency breakdown, reliability diagram, DET / ROC,
robustness curves, causality checks and the environment manifest. Across runs: a comparison table and
the Pareto fronts of F1 against latency and, where measured, energy. A section without data says why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

from harness.io.atomic import atomic_write_text
from harness.report.compare import comparison_sections
from harness.report.html import Section, esc, page
from harness.report.loading import RunBundle, load_bundle
from harness.report.sections_quality import (
    causality_section,
    detection_section,
    protocols_section,
    reliability_section,
    robustness_section,
)
from harness.report.sections_run import (
    breakdown_section,
    environment_section,
    f1_section,
    latency_section,
    summary_section,
    timeline_section,
)
from harness.store import resolve_run

__all__ = ["RunBundle", "build_report", "load_bundle", "write_report"]

_RUN_SECTIONS: tuple[tuple[str, str, Callable[[RunBundle], str]], ...] = (
    ("summary", "Summary", summary_section),
    ("latency", "Latency distribution", latency_section),
    ("timeline", "Latency over the run", timeline_section),
    ("f1", "F1@Δt", f1_section),
    ("breakdown", "Latency breakdown", breakdown_section),
    ("reliability", "Reliability diagram", reliability_section),
    ("detection", "DET and ROC", detection_section),
    ("robustness", "Robustness", robustness_section),
    ("causality", "Causality checks", causality_section),
    ("protocols", "Other protocols", protocols_section),
)


def _environment(bundle: RunBundle) -> str:
    return environment_section(bundle.result, bundle.missing.get("result", "no online result"))


def build_report(bundles: Sequence[RunBundle], pareto_delta_ms: float | None = None) -> str:
    """The report's HTML for ``bundles`` (in the order given)."""
    if not bundles:
        raise ValueError("a report needs at least one run")
    groups: list[tuple[str, str, Sequence[Section]]] = []
    for i, bundle in enumerate(bundles):
        sections = [Section(f"run{i}-{key}", title, render(bundle)) for key, title, render in _RUN_SECTIONS]
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


def write_report(
    refs: Sequence[str],
    output: Path,
    results_dir: Path = Path("results"),
    pareto_delta_ms: float | None = None,
) -> Path:
    """Resolve each reference (a run directory or a run id under ``results_dir``), build the report and
    write it atomically to ``output``."""
    bundles = [load_bundle(resolve_run(ref, results_dir)) for ref in refs]
    output.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(output, build_report(bundles, pareto_delta_ms))
    output.chmod(0o644)  # a page to open and share (the atomic writer's temporary file is private)
    return output
