"""The sweep report: every run of a sweep from the run store, timings grouped by environment fingerprint.

Built on the store's files (each run's result files, read through :func:`harness.headline.load_headline`,
and the ``sweep.json`` the driver wrote next to them) and on the HTML report (:mod:`harness.report`).

Rules (issue 10, "Heterogeneous machines"; DESIGN.md "Results": comparisons refuse runs whose
fingerprints differ):

* Quality figures (F1@Δt, frame accuracy, robustness F1, causality checks) do not depend on the
  hardware: one table holds every run.
* Timings (latency mean / p95, FPS, RTF) are shown per environment fingerprint, one table each, never
  mixed across fingerprints.
* What may be compared across fingerprints is hardware-normalised: the speed-up of an online run
  against the sweep's ``baseline`` adapter's run of the same configuration (protocol, grid, seed,
  repeat) **on the same fingerprint** (seed 004 §6.3.1 (2), :func:`protocols.metrics.speedup`). A run
  whose baseline ran on another fingerprint, or not at all, gets ``None`` with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from harness.io.atomic import atomic_write_text
from harness.report.html import Group, Section, esc, num, page, table
from harness.runs import registry
from harness.runs.catalog import has_results, load_headline, write_report
from harness.sweep.executors import SWEEP_FILE, SweepRecord
from harness.sweep.spec import RunSpec, SweepFile, expand
from protocols.metrics import speedup

__all__ = ["RunRow", "SweepReport", "build_sweep_report", "sweep_markdown", "write_sweep_html"]

TIMING_KEYS = ("mean", "p95", "fps", "rtf")
"""The timing columns of the sweep report (a row's ``timings``: see ``RunProtocol.sweep_row``)."""
_UNITS = {"mean": "ms", "p95": "ms", "fps": "fps", "rtf": "x"}


class RunRow(BaseModel):
    """One run of the sweep as the store holds it."""

    run_id: str
    label: str
    protocol: str
    setting: str = Field(description="point, grid values, seed, repeat")
    status: Literal["done", "failed", "missing"]
    fingerprint: str | None = None
    attempts: int = 0
    error: str | None = Field(None, description="the last attempt's error of a failed run")
    quality: dict[str, float | None] = Field(default_factory=dict)
    timings: dict[str, float | None] = Field(default_factory=dict)
    speedup: float | None = None
    speedup_reason: str | None = None


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


def _setting(spec: RunSpec) -> str:
    parts = [spec.point] if spec.point else []
    parts += [f"{k}={v}" for k, v in spec.grid.items()] + [f"seed={spec.seed}", f"repeat={spec.repeat}"]
    return " ".join(parts)


def _row(spec: RunSpec, results_dir: Path) -> RunRow:
    run_dir = results_dir / spec.run_id
    row = RunRow(
        run_id=spec.run_id, label=spec.label, protocol=spec.protocol, setting=_setting(spec), status="missing"
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
    row.quality, row.timings = registry.get(spec.protocol).sweep_row(values, spec.point)
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


def _fmt(value: float | None, unit: str = "") -> str:
    return "null" if value is None else f"{value:.4g}{(' ' + unit) if unit else ''}"


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def clean(cell: str) -> str:
        return cell.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(clean(c) for c in row) + " |" for row in rows]


def _quality_rows(report: SweepReport) -> list[list[str]]:
    return [
        [
            r.label,
            r.protocol,
            r.setting,
            r.status,
            ", ".join(f"{k} {_fmt(v)}" for k, v in r.quality.items()),
            r.run_id,
        ]
        for r in report.rows
    ]


def _timing_rows(report: SweepReport, fp: str) -> list[list[str]]:
    return [
        [r.label, r.setting, *(_fmt(r.timings.get(k), _UNITS[k]) for k in TIMING_KEYS), r.run_id]
        for r in report.rows
        if r.fingerprint == fp and r.timings
    ]


def _speedup_rows(report: SweepReport) -> list[list[str]]:
    return [
        [
            r.label,
            r.setting,
            r.fingerprint or "",
            _fmt(r.speedup, "x") if r.speedup else f"null: {r.speedup_reason}",
        ]
        for r in report.rows
        if r.timings and r.status == "done" and report.baseline is not None
    ]


def _failed_rows(report: SweepReport) -> list[list[str]]:
    return [
        [r.run_id, r.label, r.protocol, str(r.attempts), r.error or ""]
        for r in report.rows
        if r.status == "failed"
    ]


def sweep_markdown(report: SweepReport) -> str:
    """The report as markdown: summary, quality (all runs), timings per fingerprint, speed-ups, failures."""
    lines = [
        f"## Sweep {report.name}",
        "",
        f"{len(report.rows)} runs: {report.count('done')} done, {report.count('failed')} failed, "
        f"{report.count('missing')} not run yet; {len(report.fingerprints())} environment fingerprint(s).",
        "",
        "### Quality (hardware-independent, every run)",
        "",
        *_md_table(["adapter", "protocol", "setting", "status", "figures", "run"], _quality_rows(report)),
    ]
    for fp in report.fingerprints():
        rows = _timing_rows(report, fp)
        if rows:
            headers = ["adapter", "setting", "latency mean", "p95", "FPS", "RTF", "run"]
            lines += ["", f"### Timings on environment {fp} (never mixed with other fingerprints)", ""]
            lines += _md_table(headers, rows)
    if report.baseline is not None:
        lines += ["", f"### Speed-up against {report.baseline} on the same fingerprint (comparable)", ""]
        lines += _md_table(["adapter", "setting", "fingerprint", "speed-up"], _speedup_rows(report))
    failed = _failed_rows(report)
    if failed:
        lines += ["", "### Failed runs", ""]
        lines += _md_table(["run", "adapter", "protocol", "attempts", "last error"], failed)
    return "\n".join(lines) + "\n"


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    return table(headers, [[esc(c) for c in row] for row in rows])


def write_sweep_html(report: SweepReport, output: Path, results_dir: Path) -> list[Path]:
    """``output`` (the sweep page) and, per fingerprint with online runs, ``<stem>-<fingerprint>.html``:
    the HTML run report (:func:`harness.report.write_report`) of that fingerprint's online runs side by
    side. Returns every file written."""
    output.parent.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    sections = [
        Section(
            "quality",
            "Quality (hardware-independent, every run)",
            _html_table(
                ["adapter", "protocol", "setting", "status", "figures", "run"], _quality_rows(report)
            ),
        )
    ]
    for i, fp in enumerate(report.fingerprints()):
        rows = _timing_rows(report, fp)
        if not rows:
            continue
        online = [r.run_id for r in report.rows if r.fingerprint == fp and r.timings]
        detail = output.with_name(f"{output.stem}-{fp}.html")
        written.append(write_report([str(results_dir / run) for run in online], detail, results_dir))
        body = _html_table(["adapter", "setting", "latency mean", "p95", "FPS", "RTF", "run"], rows)
        link = f'<a href="{esc(detail.name)}">{esc(detail.name)}</a>'
        body += f"<p>Every online run of this environment: {link}</p>"
        sections.append(Section(f"timings{i}", f"Timings on environment {fp}", body))
    if report.baseline is not None:
        sections.append(
            Section(
                "speedup",
                f"Speed-up against {report.baseline} (same fingerprint; comparable across fingerprints)",
                _html_table(["adapter", "setting", "fingerprint", "speed-up"], _speedup_rows(report)),
            )
        )
    failed = _failed_rows(report)
    if failed:
        sections.append(
            Section(
                "failed",
                "Failed runs",
                _html_table(["run", "adapter", "protocol", "attempts", "last error"], failed),
            )
        )
    intro = (
        f"<p>{len(report.rows)} runs: {num(report.count('done'))} done, "
        f"{num(report.count('failed'))} failed, {num(report.count('missing'))} not run yet. "
        "Timings are shown per environment fingerprint and never mixed across them; speed-ups against "
        "the baseline on the same fingerprint may be compared.</p>"
    )
    atomic_write_text(
        output, page(f"streambench sweep: {report.name}", intro, [Group("sweep", "Sweep", sections)])
    )
    output.chmod(0o644)
    return [output, *written]
