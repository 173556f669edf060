"""The comparison's headline table: per figure, each run's value with its interval and, for every run
after the first, its difference from run #1 with the difference's interval
(:mod:`streambench.harness.report.deltas` says how each interval is obtained; the table's note repeats it for
the reader).

Figures: F1@Δt (Strict, frame, micro) at every Δt all runs scored, the compute-aware F1 at the
comparison's Δt, mean latency, p50 / p95 / p99, FPS, RTF, GPU energy and FLOPs per frame. A value the
run did not measure, or an interval that cannot be had, is "—" with the reason; a figure no run measured,
for one reason, is one line. Timings of runs from different environment fingerprints are shown but not
subtracted (DESIGN.md "Results": comparisons refuse runs whose fingerprints differ). Timings of a run whose
measurement-quality verdict is INVALID (:mod:`streambench.harness.results.quality`), and every difference
of one, are greyed with the reason, never bold (they measure the machine, not the model).

Consecutive F1@Δt rows equal in every run (same estimate and interval) are one row, ``F1@0–512 ms``,
"equal at" its Δt (seven identical rows would say one thing seven times). A value and its interval,
a difference and its interval, are two lines of one cell, so that run #1 and two more runs fit the page at
1300 px (the browser test measures it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from streambench.harness.report.analysis import stream_latencies_ms
from streambench.harness.report.bundle import RunBundle
from streambench.harness.report.deltas import (
    MOVER,
    STREAM_BOOTSTRAP,
    Delta,
    PercentileIntervals,
    mover_difference,
    percentile_difference,
    percentile_intervals,
    plain_difference,
)
from streambench.harness.report.html import Markup, concat, markup, missing
from streambench.harness.report.numbers import (
    human,
    latency_ms,
    percent,
    rate_fps,
    signed,
    signed_points,
    unit_of_ms,
)
from streambench.harness.results.files import RunResult
from streambench.harness.results.quality import invalid_reason
from streambench.protocols.metrics.bootstrap import Interval

__all__ = ["HeadlineRow", "Measured", "headline_rows", "headline_tables"]

RUNS_PER_TABLE = 2
"""Compared runs per table (each adds a value and a difference column): more runs, more tables, never a
table wider than the page."""
PERCENTILES = (50.0, 95.0, 99.0)


@dataclass(frozen=True)
class Measured:
    """One run's value of a figure: the estimate with its interval (``low``/``high`` or ``None``), or
    ``None`` with the reason it was not measured."""

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None
    invalid: str | None = None
    """Why the value is not a measurement of the model (the run's measurement is INVALID): shown greyed."""

    @classmethod
    def of(cls, interval: Interval) -> Measured:
        return cls(interval.estimate, interval.low, interval.high)

    def same(self, other: Measured) -> bool:
        """The same value, interval and reason: two F1@Δt rows that say the same thing of this run."""
        return (self.value, self.low, self.high, self.reason) == (
            other.value,
            other.low,
            other.high,
            other.reason,
        )


@dataclass(frozen=True)
class HeadlineRow:
    """A figure across the runs: ``values`` (one per run), ``deltas`` (one per run after the first: that
    run minus run #1, ``None`` for run #1 itself), ``kind`` picks the formatting."""

    name: str
    better: str
    kind: str  # "score" | "latency" | "fps" | "plain"
    values: list[Measured]
    deltas: list[Delta] = field(default_factory=list)
    method: str | None = None
    timing: bool = False
    """Computed from the measured latencies (mean, percentiles, FPS, RTF, the compute-aware F1)."""
    note: str | None = None
    """Said under the figure's name (the Δt a collapsed F1 row stands for)."""


def _different_environments(results: Sequence[RunResult]) -> str | None:
    if len({r.fingerprint for r in results}) > 1:
        return "different environment fingerprints: timings are not comparable"
    return None


def _interval_rows(results: Sequence[RunResult], common: Sequence[float]) -> list[HeadlineRow]:
    """F1@Δt at each common Δt, mean latency, FPS, RTF: the figures with a stored interval (MOVER)."""
    rows = []
    for delta in common:
        intervals = [r.metrics.headline.f1_strict[r.protocol_config.deltas_ms.index(delta)] for r in results]
        rows.append(_mover_row(f"F1@{delta:g} ms (Strict, frame)", "higher", "score", intervals))
    rows = _collapse_equal(rows, common)
    means = [r.metrics.headline.mean_latency_ms for r in results]
    rows.append(_mover_row("mean latency", "lower", "latency", means, timing=True))
    if all(m.low > 0 and m.estimate > 0 for m in means):
        fps = [
            Interval(1e3 / m.estimate, 1e3 / m.high, 1e3 / m.low, m.confidence, m.n_streams, m.n_resamples)
            for m in means
        ]
        rows.append(_mover_row("FPS (1 / mean latency)", "higher", "fps", fps, timing=True))
    rtf = [r.metrics.headline.rtf for r in results]
    rows.append(_mover_row("RTF (processing / stream time)", "lower", "plain", rtf, timing=True))
    return rows


def _mover_row(
    name: str, better: str, kind: str, intervals: Sequence[Interval], timing: bool = False
) -> HeadlineRow:
    first = intervals[0]
    return HeadlineRow(
        name,
        better,
        kind,
        [Measured.of(i) for i in intervals],
        [mover_difference(first, i) for i in intervals[1:]],
        MOVER,
        timing,
    )


def _collapse_equal(rows: list[HeadlineRow], deltas: Sequence[float]) -> list[HeadlineRow]:
    """Consecutive F1@Δt rows (one per Δt of ``deltas``) whose every run has the same value and interval
    merge into one row named for the range of Δt, with the Δt it stands for as its note."""
    merged: list[HeadlineRow] = []
    spans: list[list[float]] = []
    for row, delta in zip(rows, deltas, strict=True):
        last = merged[-1] if merged else None
        if last is not None and all(a.same(b) for a, b in zip(last.values, row.values, strict=True)):
            spans[-1].append(delta)
            continue
        merged.append(row)
        spans.append([delta])
    out = []
    for row, span in zip(merged, spans, strict=True):
        if len(span) == 1:
            out.append(row)
            continue
        name = f"F1@{span[0]:g}–{span[-1]:g} ms (Strict, frame)"
        note = f"equal at Δt = {', '.join(f'{d:g}' for d in span)} ms"
        out.append(HeadlineRow(name, row.better, row.kind, row.values, row.deltas, row.method, note=note))
    return out


def _percentile_rows(bundles: Sequence[RunBundle]) -> list[HeadlineRow]:
    """p50 / p95 / p99: the results' values, intervals recomputed from each run's recorded latencies."""
    results = [b.result for b in bundles if b.result is not None]
    summaries = [r.metrics.overall.speed.latency for r in results]
    estimates = [[s.p50_ms, s.p95_ms, s.p99_ms] for s in summaries]
    resamples = min(r.protocol_config.bootstrap_resamples for r in results)
    level = results[0].protocol_config.confidence
    intervals: list[PercentileIntervals | str] = []
    for bundle in bundles:
        if bundle.recordings is None:
            intervals.append(bundle.missing.get("arrays", "no recorded arrays"))
            continue
        streams = stream_latencies_ms(bundle.recordings)
        intervals.append(percentile_intervals(streams, PERCENTILES, resamples, level, seed=0))
    rows = []
    for k, name in enumerate(("p50 latency", "p95 latency", "p99 latency")):
        values = []
        for estimate, found in zip(estimates, intervals, strict=True):
            if isinstance(found, str):
                values.append(Measured(estimate[k], reason=f"no interval: {found}"))
            else:
                values.append(Measured(estimate[k], float(found.low[k]), float(found.high[k])))
        deltas = []
        for i in range(1, len(results)):
            first, other = intervals[0], intervals[i]
            if isinstance(first, str) or isinstance(other, str):
                why = first if isinstance(first, str) else other
                deltas.append(plain_difference(estimates[0][k], estimates[i][k], f"no interval: {why}"))
            else:
                deltas.append(percentile_difference(first, other, estimates[0], estimates[i])[k])
        rows.append(HeadlineRow(name, "lower", "latency", values, deltas, STREAM_BOOTSTRAP, timing=True))
    return rows


def _plain_row(
    name: str, better: str, kind: str, values: Sequence[Measured], timing: bool = False
) -> HeadlineRow:
    """A figure with no interval: each run's value (or why not), differences without an interval."""
    deltas = []
    first = values[0]
    for other in values[1:]:
        if first.value is None or other.value is None:
            deltas.append(Delta(value=float("nan"), reason="not measured in both runs"))
        else:
            deltas.append(plain_difference(first.value, other.value, "no interval: a single measurement"))
    return HeadlineRow(name, better, kind, list(values), deltas, timing=timing)


def headline_rows(bundles: Sequence[RunBundle], delta_ms: float | None) -> list[HeadlineRow]:
    """Every figure of the table for ``bundles`` (all with an online result), run #1 first."""
    results = [b.result for b in bundles if b.result is not None]
    if len(results) != len(bundles):
        raise ValueError("every compared run needs an online result")
    common = sorted(set.intersection(*(set(r.protocol_config.deltas_ms) for r in results)))
    rows = _interval_rows(results, common)
    if delta_ms is not None:
        aware = [Measured(r.metrics.f1_at(delta_ms, unit="frame_replay")) for r in results]
        aware_row = _plain_row(
            f"F1@{delta_ms:g} ms compute-aware (replayed latencies)", "higher", "score", aware, timing=True
        )
        rows.insert(next(i for i, row in enumerate(rows) if row.name == "mean latency"), aware_row)
    index = next(i for i, row in enumerate(rows) if row.name == "mean latency") + 1
    rows[index:index] = _percentile_rows(bundles)
    rows.append(
        _plain_row(
            "GPU energy per frame (J)",
            "lower",
            "plain",
            [
                Measured(r.resources.energy_per_frame_j, reason=r.resources.energy_per_frame_reason)
                for r in results
            ],
        )
    )
    rows.append(
        _plain_row(
            "FLOPs per frame",
            "lower",
            "plain",
            [Measured(r.resources.flops_per_frame, reason=r.resources.flops_reason) for r in results],
        )
    )
    timing = _different_environments(results)
    if timing is not None:
        rows = [_without_timing_deltas(row, timing) for row in rows]
    invalid = [invalid_reason(r.measurement_quality) for r in results]
    if any(invalid):
        rows = [_greyed(row, invalid) if row.timing else row for row in rows]
    return rows


def _without_timing_deltas(row: HeadlineRow, reason: str) -> HeadlineRow:
    if row.kind not in ("latency", "fps") and not row.name.startswith(("RTF", "GPU energy")):
        return row
    deltas = [Delta(value=float("nan"), reason=reason) for _ in row.deltas]
    return replace(row, deltas=deltas)


def _greyed(row: HeadlineRow, invalid: Sequence[str | None]) -> HeadlineRow:
    """A timing row with each INVALID run's value, and every difference involving one, marked ("#2
    measurement INVALID"; the note below the table gives the reasons in full)."""
    values = [
        replace(v, invalid="measurement INVALID" if why else None)
        for v, why in zip(row.values, invalid, strict=True)
    ]
    deltas = []
    for i, delta in enumerate(row.deltas, start=1):
        which = [f"#{k + 1}" for k in (0, i) if invalid[k]]
        deltas.append(
            replace(delta, invalid=f"{' and '.join(which)} measurement INVALID") if which else delta
        )
    return replace(row, values=values, deltas=deltas)


def _formatter(kind: str) -> Callable[[float], str]:
    """F1 as a percentage (as every view prints it), anything else with four significant digits."""
    return percent if kind == "score" else (lambda v: human(v, 4))


def _lines(text: str, interval: str | None, klass: str, notes: Sequence[str]) -> Markup:
    """A cell: the figure on its own line (never broken), its interval below it, then small notes."""
    cell = markup('<span class="{}">{}</span>', klass, text)
    if interval is not None:
        grey = " invalid" if "invalid" in klass else ""
        cell += markup('<br><span class="nw small{}">{}</span>', grey, interval)
    return cell + concat(markup('<br><span class="small">{}</span>', n) for n in notes)


def _value_cell(row: HeadlineRow, value: Measured) -> Markup:
    if value.value is None:
        return missing(value.reason or "not measured")
    interval = None
    if row.kind == "latency":
        unit, size = unit_of_ms(value.value)
        text = latency_ms(value.value)
        if value.low is not None and value.high is not None:
            interval = f"[{human(value.low / size, 3)}, {human(value.high / size, 3)}] {unit}"
    else:
        fmt = _formatter(row.kind)
        text = rate_fps(value.value) if row.kind == "fps" else fmt(value.value)
        if value.low is not None and value.high is not None:
            interval = f"[{fmt(value.low)}, {fmt(value.high)}]"
    klass = "nw invalid" if value.invalid else "nw"
    return _lines(text, interval, klass, [n for n in (value.reason, value.invalid) if n])


def _delta_cell(row: HeadlineRow, delta: Delta) -> Markup:
    if delta.value != delta.value:  # NaN: no difference to show
        return missing(delta.reason or "not comparable")
    interval = None
    if row.kind == "latency":
        bounds = [b for b in (delta.low, delta.high) if b is not None]
        unit, size = unit_of_ms(max([abs(delta.value), *map(abs, bounds)]))
        text = f"{signed(delta.value / size)} {unit}"
        if delta.low is not None and delta.high is not None:
            interval = f"[{signed(delta.low / size)}, {signed(delta.high / size)}] {unit}"
    else:
        fmt = signed_points if row.kind == "score" else (lambda v: signed(v, 3))
        text = fmt(delta.value)
        if delta.low is not None and delta.high is not None:
            interval = f"[{fmt(delta.low)}, {fmt(delta.high)}]"
    klass = "nw invalid" if delta.invalid else ("nw differs" if delta.excludes_zero else "nw")
    notes = [] if delta.low is not None else [delta.reason or "no interval"]
    return _lines(text, interval, klass, [*notes, *([delta.invalid] if delta.invalid else [])])


def _not_measured_anywhere(row: HeadlineRow) -> str | None:
    """The reason when no run measured the figure, all for the same reason: the row says it once."""
    reasons = {v.reason for v in row.values if v.value is None}
    if all(v.value is None for v in row.values) and len(reasons) == 1:
        return next(iter(reasons)) or "not measured"
    return None


def headline_tables(rows: Sequence[HeadlineRow], names: Sequence[str]) -> Markup:
    """The rows as tables of run #1 and at most :data:`RUNS_PER_TABLE` other runs each."""
    parts = []
    for start in range(1, len(names), RUNS_PER_TABLE):
        chosen = range(start, min(start + RUNS_PER_TABLE, len(names)))
        headers = ["figure", names[0]]
        for i in chosen:
            headers += [names[i], f"Δ {names[i].split(' ', 1)[0]} − {names[0].split(' ', 1)[0]}"]
        body = []
        for row in rows:
            arrow = "↑" if row.better == "higher" else "↓"
            name = markup(
                '{} <span class="small" title="{} is better">{}</span>', row.name, row.better, arrow
            )
            if row.note:
                name += markup('<br><span class="small">{}</span>', row.note)
            cells = [markup("<td>{}</td>", name)]
            nowhere = _not_measured_anywhere(row)
            if nowhere is not None:
                cells.append(
                    markup('<td colspan="{}">{}</td>', len(headers) - 1, missing(f"in no run: {nowhere}"))
                )
            else:
                cells.append(markup("<td>{}</td>", _value_cell(row, row.values[0])))
                for i in chosen:
                    cells += [
                        markup("<td>{}</td>", _value_cell(row, row.values[i])),
                        markup("<td>{}</td>", _delta_cell(row, row.deltas[i - 1])),
                    ]
            body.append(markup("<tr>{}</tr>", concat(cells)))
        head = concat(markup("<th>{}</th>", h) for h in headers)
        parts.append(
            markup(
                '<table class="headline"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
                head,
                concat(body),
            )
        )
    return concat(parts)
