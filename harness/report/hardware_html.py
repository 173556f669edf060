"""The hardware-normalised view as text and as one self-contained HTML page (``streambench hardware``).

The view is :class:`streambench.harness.results.hardware.HardwareView` (seed 004 §6.3.1): one table of
every method on every machine in normalised units (divided by the baseline measured on the same machine),
the Pareto plot of F1@Δt against the relative latency across machines, and beside them each machine's raw
figures, which are never compared across machines. The page is built from the report's own blocks
(:mod:`streambench.harness.report.html`, :func:`streambench.harness.report.figures_compare.pareto_figure`):
every string escaped, no script, plots inline. Numbers are the measured ones; a null is "—" with its reason.
"""

from __future__ import annotations

from pathlib import Path

from streambench.harness.io.atomic import atomic_write_text
from streambench.harness.report.figures_compare import ParetoPoint, pareto_figure
from streambench.harness.report.html import (
    Group,
    Markup,
    Section,
    absent,
    concat,
    figure_block,
    kv_table,
    markup,
    page,
)
from streambench.harness.report.html import table as html_table
from streambench.harness.report.numbers import human, latency_ms, latency_range_ms, percent, rate_fps
from streambench.harness.results.hardware import Estimate, HardwareView, Machine, NormalisedRow, RawRun

__all__ = [
    "NORMALISED_HEADERS",
    "RAW_HEADERS",
    "Footnotes",
    "hardware_page",
    "normalised_cells",
    "ratio_text",
    "raw_cells",
    "write_hardware_html",
]

NORMALISED_HEADERS = [
    "method",
    "machine",
    "speed-up (= FPS ratio)",
    "relative latency",
    "FLOPs-normalised latency",
    "relative FLOPs-normalised latency",
    "GPU energy / baseline's",
    "CPU energy / baseline's",
    "F1@Δt",
]
RAW_HEADERS = [
    "method",
    "run",
    "mean latency",
    "p50",
    "p95",
    "FPS",
    "GPU energy / frame",
    "CPU energy / frame",
    "FLOPs / frame",
    "F1@Δt",
    "quality",
]


def ratio_text(estimate: Estimate) -> str | None:
    """A ratio as ``1.998× [1.995, 2.001]`` (its interval where it has one); None when it is null."""
    if estimate.value is None:
        return None
    text = f"{human(estimate.value, 4)}×"
    if estimate.low is not None and estimate.high is not None:
        text += f" [{human(estimate.low, 4)}, {human(estimate.high, 4)}]"
    return text


def _latency_text(estimate: Estimate) -> str | None:
    if estimate.value is None:
        return None
    text = latency_ms(estimate.value, 4)
    if estimate.low is not None and estimate.high is not None:
        text += f" [{latency_range_ms(estimate.low, estimate.high, estimate.value, 4)}]"
    return text


def _share_text(estimate: Estimate) -> str | None:
    if estimate.value is None:
        return None
    if estimate.low is None or estimate.high is None:
        return percent(estimate.value)
    return f"{percent(estimate.value)} [{100 * estimate.low:.2f}, {100 * estimate.high:.2f}]"


def _energy_text(estimate: Estimate) -> str | None:
    return None if estimate.value is None else f"{human(estimate.value, 4)} J"


def _cell(text: str | None, reason: str | None) -> tuple[str | None, str]:
    """(the text, or None) and the reason shown instead of a null."""
    return text, reason or "not measured"


def normalised_cells(row: NormalisedRow) -> list[tuple[str | None, str]]:
    """The row's cells, each (text, reason): text None means a null, shown as "—" with the reason."""
    return [
        (row.method, ""),
        (row.machine, ""),
        _cell(ratio_text(row.speedup), row.speedup.reason),
        _cell(ratio_text(row.relative_latency), row.relative_latency.reason),
        _cell(_latency_text(row.flops_normalised_latency_ms), row.flops_normalised_latency_ms.reason),
        _cell(
            ratio_text(row.relative_flops_normalised_latency), row.relative_flops_normalised_latency.reason
        ),
        _cell(ratio_text(row.relative_gpu_energy), row.relative_gpu_energy.reason),
        _cell(ratio_text(row.relative_cpu_energy), row.relative_cpu_energy.reason),
        _cell(_share_text(row.f1), row.f1.reason),
    ]


def raw_cells(run: RawRun) -> list[tuple[str | None, str]]:
    """A run's raw figures on its own machine, each (text, reason) as in :func:`normalised_cells`."""
    flops = f"{run.flops_per_frame:,}" if run.flops_per_frame is not None else None
    return [
        (run.method, ""),
        (run.run_id, ""),
        _cell(_latency_text(run.mean_latency_ms), run.mean_latency_ms.reason),
        (latency_ms(run.p50_ms), ""),
        (latency_ms(run.p95_ms), ""),
        _cell(None if run.fps is None else rate_fps(run.fps), "mean latency below the clock's resolution"),
        _cell(_energy_text(run.gpu_energy_per_frame_j), run.gpu_energy_per_frame_j.reason),
        _cell(_energy_text(run.cpu_energy_per_frame_j), run.cpu_energy_per_frame_j.reason),
        _cell(flops, run.flops_reason),
        _cell(_share_text(run.f1), run.f1.reason),
        _cell(run.quality, "not judged (a run recorded before measurement quality)"),
    ]


class Footnotes:
    """The reasons of the nulls of a table, each once, numbered in order of first use: a cell shows
    "— [n]" and the reason is printed under the table (a reason is often longer than its column)."""

    def __init__(self) -> None:
        self.reasons: dict[str, int] = {}

    def mark(self, reason: str) -> int:
        """The number of ``reason`` (a new one is numbered next)."""
        return self.reasons.setdefault(reason, len(self.reasons) + 1)


def _html_row(cells: list[tuple[str | None, str]], notes: Footnotes) -> list[str]:
    return [
        text if text is not None else markup('<span class="null">— [{}]</span>', notes.mark(reason))
        for text, reason in cells
    ]


def _html_table(headers: list[str], rows: list[list[tuple[str | None, str]]]) -> Markup:
    notes = Footnotes()
    body = html_table(headers, [_html_row(cells, notes) for cells in rows])
    listed = concat(markup("<li value='{}'>{}</li>", n, reason) for reason, n in notes.reasons.items())
    return body + (markup('<ol class="small null">{}</ol>', listed) if listed else Markup())


def _pareto(view: HardwareView) -> Markup:
    points = [
        ParetoPoint(
            label=f"{row.method} · {row.machine}",
            cost=row.relative_latency.value,
            f1=row.f1.value,
            cost_range=(row.relative_latency.low, row.relative_latency.high)
            if row.relative_latency.low is not None and row.relative_latency.high is not None
            else None,
            f1_range=(row.f1.low, row.f1.high)
            if row.f1.low is not None and row.f1.high is not None
            else None,
        )
        for row in view.rows()
        if row.relative_latency.value is not None and row.f1.value is not None
    ]
    if not points:
        return absent("no method has a relative latency: no machine has a baseline run to divide by")
    svg = pareto_figure(
        points,
        f"mean latency / {view.baseline}'s on the same machine (log scale)",
        f"F1@{view.delta_ms:g} ms (Strict, frame, micro)",
        cost_format=lambda v: f"{human(v, 3)}×",
    )
    caption = (
        f"Every method on every machine, in normalised units: its mean latency over the baseline "
        f"{view.baseline}'s measured on the same machine (left is faster), against its F1@"
        f"{view.delta_ms:g} ms (hardware-independent: the algorithmic clock). Red: the Pareto front "
        f"(seed 004 §6.3.3). Bars: {100 * view.confidence:g} % intervals (the latency ratio's from both "
        "runs' streams)."
    )
    return figure_block(svg, caption)


def _machine_section(index: int, machine: Machine) -> Section:
    facts: list[tuple[str, str]] = [("fingerprint", markup("<code>{}</code>", machine.fingerprint))]
    parts = [kv_table(facts + list(machine.hardware.items()))]
    if machine.refused:
        parts.append(markup('<p class="fail">Refused: {}</p>', machine.refused))
    parts.append(_html_table(RAW_HEADERS, [raw_cells(run) for run in machine.runs]))
    parts += [
        markup("<p class='small'>Not used: run {}: {}</p>", r, why) for r, why in machine.unused.items()
    ]
    parts += [markup('<p class="warn">{}</p>', note) for note in machine.notes]
    return Section(f"machine-{index}", f"{machine.name}: raw figures", concat(parts))


def hardware_page(view: HardwareView) -> Markup:
    """The whole page: the normalised table and Pareto plot, then each machine's raw figures."""
    normalised = [normalised_cells(row) for row in view.rows()]
    notes = [(row, note) for row in view.rows() for note in row.notes]
    table_html = (
        _html_table(NORMALISED_HEADERS, normalised)
        if normalised
        else absent(f"no machine has a run of the baseline {view.baseline}")
    )
    table_html += concat(
        markup('<p class="warn">{} on {}: {}</p>', row.method, row.machine, note) for row, note in notes
    )
    refused = [m for m in view.machines if m.refused]
    table_html += concat(markup('<p class="fail">{} refused: {}</p>', m.name, m.refused) for m in refused)
    table_html += concat(markup('<p class="warn">{}</p>', note) for note in view.notes)
    intro = markup(
        "<p>{machines} machine(s) (environment fingerprints), {refused} refused. Each method's mean "
        "latency, FPS and energy per frame divided by the baseline <b>{baseline}</b>'s measured on the "
        "same machine (seed 004 §6.3.1): these quotients compare across machines; raw figures do not. "
        "Intervals: {level:g} %, {method}; {resamples} resamples.</p>",
        machines=len(view.machines),
        refused=len(refused),
        baseline=view.baseline,
        level=100 * view.confidence,
        method=view.interval_method,
        resamples=view.n_resamples,
    )
    groups = [
        Group(
            "normalised",
            "Normalised across machines",
            [
                Section("table", f"Against {view.baseline} on the same machine", table_html),
                Section("pareto", "Pareto: F1 against relative latency", _pareto(view)),
            ],
        ),
        Group(
            "raw", "Raw figures per machine", [_machine_section(i, m) for i, m in enumerate(view.machines)]
        ),
    ]
    if view.skipped:
        body = html_table(["path", "why"], list(view.skipped.items()))
        groups.append(Group("skipped", "Not read", [Section("skipped-runs", "Skipped directories", body)]))
    return page(f"Hardware-normalised view against {view.baseline}", intro, groups)


def write_hardware_html(view: HardwareView, path: Path) -> Path:
    """Write :func:`hardware_page` to ``path`` atomically."""
    return atomic_write_text(path, hardware_page(view))
