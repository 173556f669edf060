"""The sections across runs, first on the page of a comparison: the verdict for a latency budget
(:mod:`streambench.harness.report.decision`), which runs with their measurement-quality verdicts, the
headline figures with their differences and intervals (:mod:`streambench.harness.report.compare_table`),
the latency distributions overlaid, and the Pareto fronts of accuracy against latency and, where
measured, energy (seed 004 §6.3.3). Runs are comparable on timings only on the same hardware (§6.3.1):
differing environment fingerprints are called out and their timings not subtracted (DESIGN.md
"Results"). A run whose measurement is INVALID has its timings greyed, is drawn hollow and left out of
the Pareto front, and is not eligible in the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from streambench.harness.report.analysis import pareto_front, scored_latency_ms
from streambench.harness.report.bundle import RunBundle
from streambench.harness.report.compare_table import headline_rows, headline_tables
from streambench.harness.report.decision import decision_section
from streambench.harness.report.deltas import MOVER, STREAM_BOOTSTRAP
from streambench.harness.report.figures_compare import (
    LatencyCurve,
    ParetoPoint,
    latency_cdf_figure,
    pareto_figure,
)
from streambench.harness.report.html import Markup, Section, absent, concat, figure_block, markup, table
from streambench.harness.report.measurement import INVALID_MEANS, verdict_badge
from streambench.harness.report.numbers import human, latency_ms
from streambench.harness.results.files import RunResult
from streambench.harness.results.quality import invalid_reason

__all__ = ["common_delta", "comparison_sections", "run_label"]


def common_delta(results: Sequence[RunResult], wanted: float | None) -> float | None:
    """The Δt of the comparison: ``wanted`` if every run scored it, else the largest Δt they all share."""
    shared = set.intersection(*(set(r.protocol_config.deltas_ms) for r in results)) if results else set()
    if wanted is not None:
        return wanted if wanted in shared else None
    return max(shared) if shared else None


def run_label(index: int, bundle: RunBundle) -> str:
    """How a run is named across the comparison's tables and plots: its number and its model's name
    (``#2 kws-spotter (torch-module)``; the runs table gives each number's id), else its id."""
    return f"#{index + 1} {bundle.title or bundle.name}"


def _data_note(first: RunResult, other: RunResult) -> str:
    if other.dataset != first.dataset:
        return f"{other.dataset} (not #1's {first.dataset})"
    keys = sorted(
        k
        for k in {*first.dataset_config, *other.dataset_config}
        if first.dataset_config.get(k) != other.dataset_config.get(k)
    )
    if keys == ["seed"] and first.seeds.dataset_seed_kind == other.seeds.dataset_seed_kind == "secret":
        return "another draw than #1's (secret seeds)"
    return "same as #1" if not keys else f"differs from #1 in {', '.join(keys)}"


def _runs_section(compared: Sequence[tuple[int, RunBundle]], skipped: Sequence[RunBundle]) -> Markup:
    """Who is compared: run, adapter, data, streams, fingerprint; warnings when the runs differ."""
    results = [b.result for _, b in compared if b.result is not None]
    rows = []
    for (i, bundle), r in zip(compared, results, strict=True):
        rows.append(
            (
                f"#{i + 1}",
                markup("<strong>{}</strong><br><code>{}</code>", bundle.title or bundle.name, r.run_id),
                markup("{} <code>{}</code>", r.adapter, r.adapter_info.name),
                r.dataset if r is results[0] else _data_note(results[0], r),
                len(r.streams.get("test", [])),
                markup("<code>{}</code>", r.fingerprint),
                r.created_at.strftime("%Y-%m-%d %H:%M"),
                verdict_badge(r.measurement_quality),
            )
        )
    headers = ["", "run", "adapter", "data", "test streams", "environment", "created", "measurement"]
    notes = []
    fingerprints = sorted({r.fingerprint for r in results})
    if len(fingerprints) > 1:
        notes.append(
            markup(
                '<p class="warn">The runs come from {} different environments (fingerprints {}): their '
                "timings are shown but not subtracted, and the Pareto front against latency mixes machines. "
                "Compare timings on one machine, or use the speed-up against a baseline run measured on "
                "each.</p>",
                len(fingerprints),
                ", ".join(fingerprints),
            )
        )
    if any(_data_note(results[0], r) != "same as #1" for r in results[1:]):
        notes.append(
            Markup(
                '<p class="warn">The runs did not score the same data (two secret seeds are two draws of the '
                "same distribution): their F1 differences mix the models and the data.</p>"
            )
        )
    if skipped:
        names = ", ".join(f"{b.name} ({b.result_reason})" for b in skipped)
        notes.append(markup("<p>Not compared (no online result): {}.</p>", names))
    return table(headers, rows) + concat(notes)


def _headline_section(compared: Sequence[tuple[int, RunBundle]], delta: float | None) -> Markup:
    bundles = [b for _, b in compared]
    rows = headline_rows(bundles, delta)
    level = bundles[0].result.protocol_config.confidence if bundles[0].result else 0.95
    note = markup(
        '<p class="small">Each value with its {level:.0%} interval in brackets; Δ is the run minus '
        "run #1 with the {level:.0%} interval of the difference, <span class='differs'>bold</span> "
        "where that interval excludes 0 (the runs differ at this level); ↑ / ↓: higher / lower is "
        "better. Intervals of F1, mean latency, FPS and RTF: each run's stored bootstrap interval over "
        "its test streams; Δ: {mover} (Zou &amp; Donner 2008), wider than a paired interval when both "
        "runs scored the same streams. p50 / p95 / p99: {bootstrap}, each run resampled on "
        "its own. Energy, FLOPs and the compute-aware F1 carry no interval.</p>",
        level=level,
        mover=MOVER,
        bootstrap=STREAM_BOOTSTRAP,
    )
    invalid = [
        f"{run_label(i, b)}: {'; '.join(b.result.measurement_quality.reasons)}"
        for i, b in compared
        if b.result is not None
        and b.result.measurement_quality is not None
        and invalid_reason(b.result.measurement_quality)
    ]
    if invalid:
        note = (
            markup(
                '<p class="verdict-invalid">Greyed, never bold: the timings (latency, FPS, RTF, the '
                "compute-aware F1) of a run whose measurement is INVALID, and every difference involving "
                "one: {}. {}.</p>",
                INVALID_MEANS,
                " | ".join(invalid),
            )
            + note
        )
    return headline_tables(rows, [run_label(i, b) for i, b in compared]) + note


def _latency_section(compared: Sequence[tuple[int, RunBundle]]) -> Markup:
    curves, left_out = [], []
    for i, bundle in compared:
        r = bundle.result
        latency = scored_latency_ms(bundle.recordings) if bundle.recordings is not None else None
        if r is None or latency is None or not (latency > 0).any():
            left_out.append(f"{run_label(i, bundle)}: {bundle.missing.get('arrays', 'no measured frame')}")
            continue
        lat = r.metrics.overall.speed.latency
        mark = " (INVALID)" if invalid_reason(r.measurement_quality) else ""
        curves.append(LatencyCurve(run_label(i, bundle) + mark, latency, lat.p50_ms, lat.p99_ms))
    if not curves:
        return absent("no run has recorded latencies: " + "; ".join(left_out))
    caption = markup(
        "Per-frame latency of <code>predict()</code> on the test streams, one curve per run, on a "
        "logarithmic time axis. Left: the share of frames that finished within a given time; a curve "
        "further left is faster, a steeper one more even. Right: the share of frames slower than a given "
        "time, on a log scale, which spreads out the slow tail that the left panel squeezes against 1. "
        "Markers: each run's p50 and p99 (its result's values).{}",
        f" Left out: {'; '.join(left_out)}." if left_out else "",
    )
    return figure_block(latency_cdf_figure(curves), caption)


def _front_text(points: Sequence[ParetoPoint]) -> Markup:
    judged = [p for p in points if not p.excluded]
    front: list[bool] = []
    if judged:
        front = pareto_front([p.cost for p in judged], [p.f1 for p in judged]).tolist()
    on = [p.label for p, f in zip(judged, front, strict=True) if f]
    off = [p.label for p, f in zip(judged, front, strict=True) if not f]
    text = f"On the front: {', '.join(on) or 'no run'}." + (f" Dominated: {', '.join(off)}." if off else "")
    out = [p.label for p in points if p.excluded]
    if out:
        text += f" Not judged (measurement INVALID, drawn hollow): {', '.join(out)}."
    return markup('<p class="front">{}</p>', text)


_HOLLOW = (
    " Hollow: a run whose measurement is INVALID, drawn where its figures put it but left out of the front "
    "(its latency is not a measurement of the model)."
)


def _pareto_latency(compared: Sequence[tuple[int, RunBundle]], delta: float) -> Markup:
    points, left_out = [], []
    for i, bundle in compared:
        r = bundle.result
        assert r is not None
        mean = r.metrics.headline.mean_latency_ms
        if mean.estimate <= 0:
            left_out.append(f"{run_label(i, bundle)} (mean latency below the clock's resolution)")
            continue
        f1 = r.metrics.headline.f1_strict[r.protocol_config.deltas_ms.index(delta)]
        invalid = invalid_reason(r.measurement_quality) is not None
        label = run_label(i, bundle) + (" (INVALID)" if invalid else "")
        mean_range, f1_range = (mean.low, mean.high), (f1.low, f1.high)
        points.append(ParetoPoint(label, mean.estimate, f1.estimate, mean_range, f1_range, excluded=invalid))
    if len(points) < 2:
        return absent("fewer than two runs with a measurable mean latency: " + "; ".join(left_out))
    caption = (
        f"Each run at its mean latency per frame (right = slower, logarithmic axis) and its F1@{delta:g} "
        "ms (Strict, frame, micro; up = more accurate); whiskers: the bootstrap intervals of both. Red: "
        "the Pareto front, the runs no other run beats on both at once; grey: dominated, some other run "
        "is at least as fast and at least as accurate. The accuracy axis spans the runs' values and "
        "intervals, not 0–100 %."
        + (_HOLLOW if any(p.excluded for p in points) else "")
        + (f" Left out: {'; '.join(left_out)}." if left_out else "")
    )
    f1_label = f"F1@{delta:g} ms (Strict, frame, micro)"
    svg = pareto_figure(points, "mean latency per frame (log scale)", f1_label, latency_ms)
    return figure_block(svg, caption) + _front_text(points)


def _pareto_energy(compared: Sequence[tuple[int, RunBundle]], delta: float) -> Markup:
    points, reasons = [], set()
    for i, bundle in compared:
        r = bundle.result
        assert r is not None
        energy = r.resources.energy_per_frame_j
        if energy is None or energy <= 0:
            reasons.add(r.resources.energy_per_frame_reason or "not measured")
            continue
        points.append(ParetoPoint(run_label(i, bundle), energy, r.metrics.f1_at(delta)))
    if len(points) < 2:
        return absent(
            f"energy was measured in {len(points)} of {len(compared)} runs (two are needed); "
            f"reason(s): {'; '.join(sorted(reasons))}"
        )
    caption = (
        f"GPU energy per frame (NVML, the measured window divided by its frames; logarithmic axis) against "
        f"F1@{delta:g} ms. Red: the front, grey: dominated. Runs without a measured energy are left out "
        f"({len(compared) - len(points)})."
    )
    svg = pareto_figure(points, "GPU energy per frame (J, log scale)", f"F1@{delta:g} ms", human)
    return figure_block(svg, caption) + _front_text(points)


def comparison_sections(
    bundles: Sequence[RunBundle], delta_ms: float | None, budget_ms: float | None = None
) -> list[Section]:
    """The verdict for a latency budget (``budget_ms``; default: the largest Δt every run scored), runs
    compared, headline figures with differences, latency distributions, Pareto fronts at ``delta_ms``; a
    part that cannot be drawn says why."""
    compared = [(i, b) for i, b in enumerate(bundles) if b.result is not None]
    skipped = [b for b in bundles if b.result is None]
    if len(compared) < 2:
        reason = f"needs at least two runs with an online result ({len(compared)} given)"
        return [Section("compare-runs", "Runs compared", absent(reason))]
    delta = common_delta([b.result for _, b in compared if b.result is not None], delta_ms)
    labelled = [(run_label(i, b), b.result) for i, b in compared if b.result is not None]
    sections = [
        Section(
            "compare-verdict",
            "Verdict: the most accurate run within a latency budget",
            decision_section(labelled, budget_ms),
        ),
        Section("compare-runs", "Runs compared", _runs_section(compared, skipped)),
        Section("compare-headline", "Headline figures", _headline_section(compared, delta)),
        Section("compare-latency", "Latency distributions", _latency_section(compared)),
    ]
    if delta is None:
        wanted = "" if delta_ms is None else f"Δt = {delta_ms:g} ms: "
        why = absent(f"{wanted}no Δt scored by every run")
        return [*sections, Section("compare-pareto", "Pareto front: accuracy against latency", why)]
    return [
        *sections,
        Section("compare-pareto", "Pareto front: accuracy against latency", _pareto_latency(compared, delta)),
        Section("compare-energy", "Pareto front: accuracy against energy", _pareto_energy(compared, delta)),
    ]
