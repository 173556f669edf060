"""The sweep report: every run of a sweep from the run store, grouped into configurations, timings per
environment fingerprint.

Built on the store's files (each run's result files, read through
:func:`streambench.harness.headline.load_headline`, and the ``sweep.json`` the driver wrote next to them);
drawn as markdown here and as HTML by :func:`streambench.harness.sweep.report_html.write_sweep_html`.

Rules (DESIGN.md "Results": comparisons refuse runs whose fingerprints differ; repeats aggregated):

* A configuration is every run of one adapter label, protocol, point and grid values; its seeds and
  repeats are aggregated, each figure shown as the median and range of the runs
  (:mod:`streambench.harness.sweep.aggregate`), so no model is ever set against its own repeat.
* Quality figures (F1@Δt, frame accuracy, robustness F1, causality checks) do not depend on the
  hardware: one table per protocol holds every configuration.
* Timings (latency mean / p50 / p95 / p99, FPS, RTF) are shown per environment fingerprint, one table
  each, never mixed across fingerprints.
* A protocol's declared headline figure (capacity; :mod:`streambench.harness.sweep.report_headline`) is
  shown per configuration with its interval and how it was reached, per environment fingerprint when it
  depends on the machine (capacity does), and plotted against each grid knob that varies.
* What may be compared across fingerprints is hardware-normalised: the speed-up of an online run
  against the sweep's ``baseline`` adapter's run of the same configuration (protocol, grid, seed,
  repeat) **on the same fingerprint** (seed 004 §6.3.1 (2), :func:`streambench.protocols.metrics.speedup`). A
  run whose baseline ran on another fingerprint, or not at all, gets ``None`` with the reason.
* Names are the sweep's ``label`` of each adapter entry (default: the adapter); numbers are written as a
  reader writes them (:mod:`streambench.harness.report.numbers`: ``18,170 fps``, ``46.6 µs``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from streambench.harness.report.numbers import human, latency_ms, latency_range_ms, percent, rate_fps
from streambench.harness.runs import registry
from streambench.harness.runs.catalog import has_results, load_headline
from streambench.harness.sweep.aggregate import ConfigRow, Spread, group_quality, group_timings
from streambench.harness.sweep.executors import SWEEP_FILE, SweepRecord
from streambench.harness.sweep.report_headline import (
    HeadlineGroup,
    HeadlineRow,
    KnobFacts,
    headline_groups,
    read_swept_figure,
)
from streambench.harness.sweep.spec import RunSpec, SweepFile, expand
from streambench.protocols.metrics import speedup

__all__ = [
    "TIMING_KEYS",
    "RunRow",
    "SweepReport",
    "build_sweep_report",
    "f1_key",
    "failed_rows",
    "headline_cells",
    "headline_title",
    "quality_columns",
    "quality_groups",
    "run_rows",
    "runs_text",
    "speedup_cell",
    "spread_text",
    "summary_line",
    "sweep_markdown",
]

TIMING_KEYS = ("mean", "p50", "p95", "p99", "fps", "rtf")
"""The timing columns of the sweep report (a row's ``timings``: see ``ProtocolContract.sweep_row``)."""
TIMING_NAMES = {"mean": "latency mean", "p50": "p50", "p95": "p95", "p99": "p99", "fps": "FPS", "rtf": "RTF"}
_F1_KEY = re.compile(r"^f1@(\d+(?:\.\d+)?)ms$")


class RunRow(KnobFacts):
    """One run of the sweep as the store holds it."""

    status: Literal["done", "failed", "missing"]
    setting: str = Field(description="point, grid values, seed, repeat")
    attempts: int = 0
    error: str | None = Field(None, description="the last attempt's error of a failed run")


class SweepReport(BaseModel):
    """Every run of a sweep, in the sweep's order."""

    name: str
    baseline: str | None
    rows: list[RunRow]

    def count(self, status: str) -> int:
        """How many runs have ``status``."""
        return sum(1 for r in self.rows if r.status == status)

    def fingerprints(self) -> list[str]:
        """The fingerprints of the finished runs, in order of first appearance."""
        return list(dict.fromkeys(r.fingerprint for r in self.rows if r.fingerprint is not None))

    def configurations(self) -> list[ConfigRow]:
        """Every configuration (seeds and repeats aggregated), quality figures, in the sweep's order."""
        return group_quality(self.rows)

    def timings(self, fingerprint: str) -> list[ConfigRow]:
        """The configurations with timings measured on ``fingerprint``."""
        return group_timings(self.rows, fingerprint)

    def headlines(self) -> list[HeadlineGroup]:
        """The declared headline figures (capacity), per protocol and, where timed, per fingerprint."""
        return headline_groups(self.rows)


def _config(spec: RunSpec) -> str:
    return " ".join(([spec.point] if spec.point else []) + [f"{k}={v}" for k, v in spec.grid.items()])


def _setting(spec: RunSpec) -> str:
    return " ".join(p for p in (_config(spec), f"seed={spec.seed}", f"repeat={spec.repeat}") if p)


def _row(spec: RunSpec, results_dir: Path) -> RunRow:
    run_dir = results_dir / spec.run_id
    row = RunRow(
        run_id=spec.run_id,
        label=spec.label,
        protocol=spec.protocol,
        config=_config(spec),
        seed=spec.seed,
        repeat=spec.repeat,
        setting=_setting(spec),
        status="missing",
        grid=spec.grid,
        point=spec.point,
    )
    record = None
    if (run_dir / SWEEP_FILE).is_file():
        record = SweepRecord.model_validate_json((run_dir / SWEEP_FILE).read_text(encoding="utf-8"))
        row.attempts = len(record.attempts)
        row.error = next((a.error for a in reversed(record.attempts) if a.error), None)
    if not has_results(run_dir):
        row.status = "failed" if record is not None and record.status == "failed" else "missing"
        return row
    head = load_headline(run_dir)
    row.status = "done"
    row.fingerprint = record.fingerprint if record is not None else head.fingerprint
    values = {f.key: f.value for f in head.figures}
    protocol = registry.get(spec.protocol)
    if not protocol.sweepable:
        raise ValueError(f"{spec.protocol}: not a protocol a sweep runs")
    row.quality, row.timings = protocol.sweep_row(values, spec.point)
    row.figure = read_swept_figure(protocol, run_dir)
    return row


def _same_setting(a: RunSpec, b: RunSpec) -> bool:
    keys = ("protocol", "point", "grid", "seed", "repeat")
    return all(getattr(a, k) == getattr(b, k) for k in keys)


def build_sweep_report(sweep: SweepFile, results_dir: Path, source: str = "sweep file") -> SweepReport:
    """Every run of the sweep (done, failed or not run yet), with speed-ups against the baseline."""
    specs = expand(sweep, source)
    rows = {spec.run_id: _row(spec, results_dir) for spec in specs}
    base_label = sweep.sweep.baseline
    for spec in specs:
        row = rows[spec.run_id]
        if not row.timings or row.status != "done" or base_label is None:
            continue
        base_spec = next((s for s in specs if s.label == base_label and _same_setting(s, spec)), None)
        base = rows[base_spec.run_id] if base_spec is not None else None
        if base is None or base.status != "done":
            row.speedup_reason = f"the baseline {base_label!r} has no finished run of this setting"
        elif base.fingerprint != row.fingerprint:
            row.speedup_reason = (
                f"the baseline ran on another environment ({base.fingerprint} vs {row.fingerprint})"
            )
        else:
            mine, theirs = row.timings.get("mean"), base.timings.get("mean")
            if mine and theirs:
                row.speedup = speedup(theirs, mine)
            else:
                row.speedup_reason = "mean latency not measured (0 or missing)"
    return SweepReport(name=sweep.sweep.name, baseline=base_label, rows=list(rows.values()))


# --- text of the figures, shared by the markdown and the HTML -------------------------------------------


def f1_key(keys: Sequence[str]) -> str | None:
    """The F1@Δt key with the largest Δt among ``keys`` (the Pareto plot's accuracy), if any."""
    found = [(float(m.group(1)), k) for k in keys if (m := _F1_KEY.match(k))]
    return max(found)[1] if found else None


def _value(key: str, value: float) -> str:
    if key in ("mean", "p50", "p95", "p99"):
        return latency_ms(value)
    if key == "fps":
        return rate_fps(value)
    if key.startswith("f1") or key == "frame_acc":
        return percent(value)
    if key == "speedup":
        return f"{human(value)}×"
    return human(value)


def _range(key: str, spread: Spread) -> str:
    if key in ("mean", "p50", "p95", "p99"):
        return latency_range_ms(spread.low, spread.high, spread.median)
    if key == "fps":
        return f"{human(spread.low)}–{human(spread.high)} fps"
    return f"{_value(key, spread.low)}–{_value(key, spread.high)}"


def spread_text(key: str, spread: Spread | None) -> tuple[str, str]:
    """A configuration's figure as (the median, how the runs spread): ``("31.6 µs", "range 31.2–42.8
    µs over 3 runs")``; a figure no run measured is ``("—", the reason)``."""
    if spread is None:
        return "—", "not measured by any finished run of this configuration"
    main = _value(key, spread.median)
    if spread.n == 1:
        return main, "1 run"
    if not spread.varies:
        return main, f"the {spread.n} runs agree"
    return main, f"range {_range(key, spread)} over {spread.n} runs"


def runs_text(row: ConfigRow) -> str:
    """How many of the configuration's runs finished (and failed)."""
    failed = f", {row.failed} failed" if row.failed else ""
    return f"{row.done} of {row.planned}{failed}"


def quality_groups(report: SweepReport) -> list[tuple[str, list[ConfigRow]]]:
    """Each protocol's configurations for its quality table, in the sweep's order; a protocol whose runs
    carry only a declared headline figure (capacity: the machine's figure) has its own tables instead."""
    configs = report.configurations()
    declared = {r.protocol for r in report.rows if r.figure is not None}
    groups = []
    for protocol in dict.fromkeys(r.protocol for r in configs):
        rows = [r for r in configs if r.protocol == protocol]
        if protocol in declared and not any(r.figures for r in rows):
            continue
        groups.append((protocol, rows))
    return groups


def headline_title(group: HeadlineGroup) -> str:
    """``capacity (capacity protocol) on environment 06da…``: the figure, and where it was measured."""
    where = "every environment" if group.fingerprint is None else f"environment {group.fingerprint}"
    return f"{group.name} ({group.protocol} protocol) on {where}"


HEADLINE_HEADERS = ["label", "setting", "runs done", "figure", "value", "interval", "how it ended"]


def headline_cells(row: HeadlineRow) -> list[str]:
    """A configuration's row of its headline table (:data:`HEADLINE_HEADERS`; the value as median and
    spread)."""
    main, detail = spread_text(row.keys[0] if row.keys else "", row.value)
    value = main if detail == "1 run" else f"{main} ({detail})"
    keys, runs = ", ".join(row.keys), f"{row.done} of {row.planned}"
    return [row.label, row.config or "—", runs, keys, value, row.interval_text(), row.ended_text()]


def quality_columns(rows: Sequence[ConfigRow]) -> tuple[list[str], bool]:
    """The figures every configuration of one protocol has (its table's columns), and whether some have
    others besides (shown in an "other figures" column)."""
    keys = [list(r.figures) for r in rows]
    common = [k for k in keys[0] if all(k in ks for ks in keys)] if keys else []
    return common, any(set(ks) - set(common) for ks in keys)


# --- markdown ---------------------------------------------------------------------------------------------


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def clean(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(clean(c) for c in row) + " |" for row in rows]


def _md_cell(key: str, spread: Spread | None) -> str:
    main, detail = spread_text(key, spread)
    return main if detail == "1 run" else f"{main} ({detail})"


def _md_quality(report: SweepReport) -> list[str]:
    lines: list[str] = []
    for protocol, rows in quality_groups(report):
        columns, others = quality_columns(rows)
        body = []
        for r in rows:
            cells = [r.label, r.config or "—", runs_text(r), *(_md_cell(k, r.figures[k]) for k in columns)]
            if others:
                extra = [f"{k} {_md_cell(k, v)}" for k, v in r.figures.items() if k not in columns]
                cells.append(", ".join(extra))
            body.append(cells)
        headers = ["label", "setting", "runs done", *columns, *(["other figures"] if others else [])]
        lines += ["", f"### Quality: {protocol} (hardware-independent)", "", *_md_table(headers, body)]
    return lines


def _md_headlines(report: SweepReport) -> list[str]:
    lines: list[str] = []
    for group in report.headlines():
        never = " (never mixed with other fingerprints)" if group.fingerprint is not None else ""
        body = [headline_cells(r) for r in group.rows]
        lines += ["", f"### {headline_title(group)}{never}", "", *_md_table(HEADLINE_HEADERS, body)]
    return lines


def _md_timings(report: SweepReport) -> list[str]:
    lines: list[str] = []
    for fp in report.fingerprints():
        rows = report.timings(fp)
        if not rows:
            continue
        body = [
            [r.label, r.config or "—", runs_text(r), *(_md_cell(k, r.figures.get(k)) for k in TIMING_KEYS)]
            for r in rows
        ]
        headers = ["label", "setting", "runs", *(TIMING_NAMES[k] for k in TIMING_KEYS)]
        lines += ["", f"### Timings on environment {fp} (never mixed with other fingerprints)", ""]
        lines += _md_table(headers, body)
    return lines


def speedup_cell(row: ConfigRow) -> tuple[str, str]:
    """The configuration's speed-up against the baseline (median, spread) or ("—", why not)."""
    if row.speedup is None:
        return "—", row.speedup_reason or "no speed-up measured"
    return spread_text("speedup", row.speedup)


def _md_speedups(report: SweepReport) -> list[str]:
    body = []
    for fp in report.fingerprints():
        for r in report.timings(fp):
            main, detail = speedup_cell(r)
            body.append([r.label, r.config or "—", fp, main if detail == "1 run" else f"{main} ({detail})"])
    title = f"### Speed-up against {report.baseline} on the same fingerprint (comparable across fingerprints)"
    return ["", title, "", *_md_table(["label", "setting", "fingerprint", "speed-up"], body)]


def failed_rows(report: SweepReport) -> list[list[str]]:
    """Every failed run: id, label, protocol, attempts, last error."""
    return [
        [r.run_id, r.label, r.protocol, str(r.attempts), r.error or ""]
        for r in report.rows
        if r.status == "failed"
    ]


def run_rows(report: SweepReport) -> list[list[str]]:
    """Every run: label, protocol, setting (with seed and repeat), status, fingerprint, id."""
    return [[r.label, r.protocol, r.setting, r.status, r.fingerprint or "—", r.run_id] for r in report.rows]


RUN_HEADERS = ["label", "protocol", "setting", "status", "environment", "run"]


def summary_line(report: SweepReport) -> str:
    """Runs by status, configurations, seeds and repeats, fingerprints: the report's first sentence."""
    configs = report.configurations()
    per = sorted({r.planned for r in configs})
    per_text = " or ".join(str(n) for n in per)
    return (
        f"{len(report.rows)} runs: {report.count('done')} done, {report.count('failed')} failed, "
        f"{report.count('missing')} not run yet; {len(configs)} configurations of {per_text} runs each "
        f"(seeds × repeats), every figure the median of a configuration's finished runs with their range; "
        f"{len(report.fingerprints())} environment fingerprint(s)."
    )


def sweep_markdown(report: SweepReport) -> str:
    """The report as markdown: summary, quality per protocol, declared headline figures (per fingerprint
    where timed), timings per fingerprint, speed-ups, failures, every run."""
    lines = [f"## Sweep {report.name}", "", summary_line(report), *_md_quality(report)]
    lines += [*_md_headlines(report), *_md_timings(report)]
    if report.baseline is not None:
        lines += _md_speedups(report)
    failed = failed_rows(report)
    if failed:
        lines += ["", "### Failed runs", ""]
        lines += _md_table(["run", "label", "protocol", "attempts", "last error"], failed)
    lines += ["", "### Runs", "", *_md_table(RUN_HEADERS, run_rows(report))]
    return "\n".join(lines) + "\n"
