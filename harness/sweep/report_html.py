"""The sweep report as one HTML page (:mod:`streambench.harness.sweep.report` holds the rules and the text).

Per protocol a quality table of the configurations; a protocol's declared headline figure (capacity) per
configuration with its interval, and plotted against each knob that varies, per environment fingerprint
where it depends on the machine (:mod:`streambench.harness.sweep.report_headline`); per environment
fingerprint a timing table, the Pareto front of the configurations (median mean latency against median
F1, whiskers: the range of the runs; seed 004 §6.3.3) and their latency distributions overlaid (each
configuration's frames pooled over its runs); the speed-ups against the baseline; the failed runs; every
run, collapsed. Each figure of a configuration shows its median and, below, how its runs spread. Built
from the HTML blocks of the run report (:mod:`streambench.harness.report.html`), so the page is
self-contained and never wider than the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from streambench.harness.io.atomic import atomic_write_text
from streambench.harness.report.figures_compare import (
    LatencyCurve,
    ParetoPoint,
    latency_cdf_figure,
    pareto_figure,
)
from streambench.harness.report.html import Group, Markup, Section, absent, figure_block, markup, page, table
from streambench.harness.report.numbers import latency_ms
from streambench.harness.results.files import ResultFileError
from streambench.harness.runs import registry
from streambench.harness.sweep.aggregate import ConfigRow, Spread
from streambench.harness.sweep.report import (
    HEADLINE_HEADERS,
    RUN_HEADERS,
    TIMING_KEYS,
    TIMING_NAMES,
    SweepReport,
    f1_key,
    failed_rows,
    headline_cells,
    headline_title,
    quality_columns,
    quality_groups,
    run_rows,
    runs_text,
    speedup_cell,
    spread_text,
    summary_line,
)
from streambench.harness.sweep.report_headline import HeadlineGroup, knob_figure, knob_plots

__all__ = ["pareto_points", "write_sweep_html"]


_CELL = Markup('<span class="nw">{}</span><br><span class="{}">{}</span>')
"""A figure's cell: the value on its own line (never broken), how it was had below it."""


def _cell(key: str, spread: Spread | None) -> Markup:
    main, detail = spread_text(key, spread)
    return _CELL.format(main, "null" if spread is None else "small", detail)


def _quality_sections(report: SweepReport) -> list[Section]:
    sections: list[Section] = []
    for protocol, rows in quality_groups(report):
        columns, others = quality_columns(rows)
        body = []
        for r in rows:
            cells = [r.label, r.config or "—", markup('<span class="nw">{}</span>', runs_text(r))]
            cells += [_cell(k, r.figures[k]) for k in columns]
            if others:
                extra = [(k, v) for k, v in r.figures.items() if k not in columns]
                cells.append(Markup("<br>").join(markup("{}: {}", k, _cell(k, v)) for k, v in extra))
            body.append(cells)
        headers = ["label", "setting", "runs done", *columns, *(["other figures"] if others else [])]
        title = f"Quality: {protocol} (hardware-independent, every configuration)"
        sections.append(Section(f"quality-{len(sections)}", title, table(headers, body)))
    return sections


def _headline_body(group: HeadlineGroup) -> Markup:
    """The configurations' table, then the figure against each knob that varies."""
    html = table(HEADLINE_HEADERS, [headline_cells(r) for r in group.rows])
    plots = knob_plots(group.rows)
    if not plots:
        return html + absent("no grid knob varies among these configurations: nothing to plot against")
    where = "this environment" if group.fingerprint is not None else "every environment"
    for plot in plots:
        axis = "categorical axis" if plot.categorical else "at its values"
        caption = markup(
            "{} of each configuration on {} against <code>{}</code> ({}), one line per value of the other "
            "knobs: the median of its runs; bars: its interval (the widest of its runs'; capacity's: from "
            "the largest N that passed to the largest not shown to fail); an open triangle above a point: no "
            "upper end was measured (the bracket is open).",
            group.name,
            where,
            plot.knob,
            axis,
        )
        html += figure_block(knob_figure(plot, group.axis_label()), caption)
    return html


def _headline_sections(report: SweepReport) -> list[Section]:
    return [
        Section(f"headline{i}", headline_title(group), _headline_body(group))
        for i, group in enumerate(report.headlines())
    ]


def pareto_points(report: SweepReport, rows: Sequence[ConfigRow]) -> tuple[list[ParetoPoint], str | None]:
    """One point per configuration with a mean latency and an F1 (its runs' medians, their ranges as
    whiskers), and the F1 key drawn (the largest Δt the configurations have)."""
    quality = {(r.label, r.protocol, r.config): r for r in report.configurations()}
    points, key = [], None
    for row in rows:
        q = quality.get((row.label, row.protocol, row.config))
        mean = row.figures.get("mean")
        key = f1_key(list(q.figures)) if q is not None else None
        f1 = q.figures.get(key) if q is not None and key is not None else None
        if mean is None or f1 is None or mean.median <= 0:
            continue
        points.append(ParetoPoint(row.name, mean.median, f1.median, (mean.low, mean.high), (f1.low, f1.high)))
    return points, key


def _pareto(report: SweepReport, rows: Sequence[ConfigRow]) -> Markup:
    """Median mean latency against median F1 of each configuration with both, whiskers the ranges."""
    points, key = pareto_points(report, rows)
    if len(points) < 2 or key is None:
        return absent(
            f"needs two configurations with a mean latency and an F1 here ({len(points)} have both)"
        )
    caption = (
        f"Each configuration at the median mean latency per frame of its runs (right = slower, logarithmic "
        f"axis) and their median {key} (up = more accurate); whiskers: the range of the runs. A "
        "configuration's repeats are one point, so no model is set against its own repeat. Red: the "
        "Pareto front, the configurations no other beats on both; grey: dominated."
    )
    svg = pareto_figure(points, "mean latency per frame (log scale)", key, latency_ms)
    return figure_block(svg, caption)


def _pooled_latency(row: ConfigRow, results_dir: Path) -> np.ndarray | None:
    protocol = registry.get(row.protocol)
    pooled = []
    for run_id in row.run_ids:
        try:
            found = protocol.frame_latencies_ns(results_dir / run_id)
        except (ResultFileError, OSError):
            found = None
        if found is not None:
            pooled.append(np.asarray(found, dtype=np.float64) / 1e6)
    return np.concatenate(pooled) if pooled else None


def _latency(rows: Sequence[ConfigRow], results_dir: Path) -> Markup:
    curves, left_out = [], []
    for row in rows:
        latency = _pooled_latency(row, results_dir)
        if latency is None or not (latency > 0).any():
            left_out.append(row.name)
            continue
        p50, p99 = np.percentile(latency, [50, 99])
        label = f"{row.name} ({row.done} run{'s' if row.done > 1 else ''})"
        curves.append(LatencyCurve(label, latency, float(p50), float(p99)))
    if not curves:
        return absent("no run of this environment recorded per-frame latencies")
    caption = markup(
        "Per-frame latency of <code>predict()</code> of each configuration, its runs' test-stream frames "
        "pooled, on a logarithmic time axis. Left: the share of frames finished within a given time "
        "(further left is faster); right: the share slower than it, on a log scale, where the slow tail "
        "shows. Markers: the pooled p50 and p99.{}",
        f" No recorded latencies: {', '.join(left_out)}." if left_out else "",
    )
    return figure_block(latency_cdf_figure(curves), caption)


def _timing_sections(report: SweepReport, results_dir: Path) -> list[Section]:
    sections: list[Section] = []
    for i, fp in enumerate(report.fingerprints()):
        rows = report.timings(fp)
        if not rows:
            continue
        body = [
            [
                r.label,
                r.config or "—",
                markup('<span class="nw">{}</span>', runs_text(r)),
                *(_cell(k, r.figures.get(k)) for k in TIMING_KEYS),
            ]
            for r in rows
        ]
        headers = ["label", "setting", "runs", *(TIMING_NAMES[k] for k in TIMING_KEYS)]
        sections += [
            Section(f"timings{i}", f"Timings on environment {fp}", table(headers, body)),
            Section(f"pareto{i}", f"Accuracy against latency on {fp}", _pareto(report, rows)),
            Section(f"latency{i}", f"Latency distributions on {fp}", _latency(rows, results_dir)),
        ]
    return sections


def _speedup_section(report: SweepReport) -> Section:
    body = []
    for fp in report.fingerprints():
        for r in report.timings(fp):
            main, detail = speedup_cell(r)
            cell = _CELL.format(main, "null" if main == "—" else "small", detail)
            body.append([r.label, r.config or "—", markup("<code>{}</code>", fp), cell])
    title = f"Speed-up against {report.baseline} (same fingerprint; comparable across fingerprints)"
    return Section("speedup", title, table(["label", "setting", "environment", "speed-up"], body))


def write_sweep_html(report: SweepReport, output: Path, results_dir: Path) -> list[Path]:
    """Write the sweep's page to ``output``; returns the files written (this one)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    sections = [*_quality_sections(report), *_headline_sections(report)]
    sections += _timing_sections(report, results_dir)
    if report.baseline is not None:
        sections.append(_speedup_section(report))
    failed = failed_rows(report)
    if failed:
        sections.append(
            Section(
                "failed", "Failed runs", table(["run", "label", "protocol", "attempts", "last error"], failed)
            )
        )
    every = table(RUN_HEADERS, run_rows(report))
    hint = Markup(
        "<p class='small'>A run's own report: <code>streambench report RUN</code>; several side by side: "
        "<code>streambench report RUN_A RUN_B</code>.</p>"
    )
    runs = Group(
        "runs", f"Every run ({len(report.rows)})", [Section("runs-list", "Runs", hint + every)], True
    )
    intro = markup(
        "<p>{} Timings are shown per environment fingerprint and never mixed across them; speed-ups "
        "against the baseline on the same fingerprint may be compared.</p>",
        summary_line(report),
    )
    groups = [Group("sweep", f"Sweep {report.name}", sections), runs]
    atomic_write_text(output, page(f"streambench sweep: {report.name}", intro, groups))
    output.chmod(0o644)
    return [output]
