"""The sections across runs: a comparison table and the Pareto fronts of accuracy against latency and,
where measured, energy (seed 004 §6.3.3 "Pareto 前沿分析"; §6.3.1: runs are comparable only on the same
hardware, so differing environment fingerprints are called out, DESIGN.md "Results")."""

from __future__ import annotations

from collections.abc import Sequence

from harness.report.analysis import pareto_front
from harness.report.bundle import RunBundle
from harness.report.figures_quality import ParetoPoint, pareto_figure
from harness.report.html import Section, absent, esc, figure_block, num, table
from harness.results.files import RunResult

__all__ = ["common_delta", "comparison_sections"]


def common_delta(results: Sequence[RunResult], wanted: float | None) -> float | None:
    """The Δt of the comparison: ``wanted`` if every run scored it, else the largest Δt they all share."""
    shared = set.intersection(*(set(r.protocol_config.deltas_ms) for r in results)) if results else set()
    if wanted is not None:
        return wanted if wanted in shared else None
    return max(shared) if shared else None


def _label(index: int, result: RunResult) -> str:
    return f"#{index + 1} {result.adapter}"


def comparison_sections(bundles: Sequence[RunBundle], delta_ms: float | None) -> list[Section]:
    """Comparison table, fingerprint check, and the two Pareto figures (or why they are absent)."""
    online = [(i, b.result) for i, b in enumerate(bundles) if b.result is not None]
    results = [r for _, r in online]
    delta = common_delta(results, delta_ms)
    if len(online) < 2:
        reason = f"needs at least two runs with an online result ({len(online)} given)"
        return [Section("compare-pareto", "Pareto front", absent(reason))]
    if delta is None:
        wanted = "" if delta_ms is None else f"Δt = {delta_ms:g} ms: "
        return [Section("compare-pareto", "Pareto front", absent(f"{wanted}no Δt scored by every run"))]
    fingerprints = {r.fingerprint for r in results}
    note = (
        f'<p class="warn">The runs come from {len(fingerprints)} different environments (fingerprints '
        f"{esc(', '.join(sorted(fingerprints)))}): their latencies and energies are not comparable on the "
        "same axis (seed 004 §6.3.1); use the speed-up / FLOPs-normalised figures of a baseline run.</p>"
        if len(fingerprints) > 1
        else f"<p>All runs share the environment fingerprint <code>{esc(results[0].fingerprint)}</code>.</p>"
    )
    latency_points = [
        ParetoPoint(_label(i, r), r.metrics.overall.speed.latency.mean_ms, r.metrics.f1_at(delta))
        for i, r in online
    ]
    front = pareto_front([p.cost for p in latency_points], [p.f1 for p in latency_points])
    rows = []
    for (i, r), on_front in zip(online, front, strict=True):
        res, lat = r.resources, r.metrics.overall.speed.latency
        rows.append(
            (
                esc(f"#{i + 1}"),
                esc(r.run_id),
                esc(r.adapter),
                f"<code>{esc(r.fingerprint)}</code>",
                esc(f"{r.metrics.f1_at(delta):.4f}"),
                esc(f"{r.metrics.f1_at(delta, unit='frame_replay'):.4f}"),
                esc(f"{lat.mean_ms:.4g}"),
                esc(f"{lat.p95_ms:.4g}"),
                esc(f"{r.metrics.overall.speed.rtf:.4g}"),
                num(res.energy_per_frame_j, reason=res.energy_per_frame_reason),
                num(res.flops_per_frame, reason=res.flops_reason),
                esc("yes" if on_front else "no"),
            )
        )
    headers = [
        "",
        "run",
        "adapter",
        "fingerprint",
        f"F1@{delta:g} ms",
        f"F1@{delta:g} ms compute-aware",
        "mean latency (ms)",
        "p95 (ms)",
        "RTF",
        "energy per frame (J)",
        "FLOPs per frame",
        "on the latency front",
    ]
    skipped = [b.name for b in bundles if b.result is None]
    skipped_note = f"<p>Not compared (no online result): {esc(', '.join(skipped))}.</p>" if skipped else ""
    f1_label = f"F1@{delta:g} ms (Strict, frame, micro, algorithmic)"
    latency_caption = (
        f"Each run at its mean <code>predict()</code> latency per frame (host, test streams) and its "
        f"F1@{delta:g} ms on the algorithmic clock; red: the runs no other run beats on both (seed 004 "
        "§6.3.3). Labels are the run numbers of the table."
    )
    sections = [
        Section("compare-table", "Runs side by side", note + table(headers, rows) + skipped_note),
        Section(
            "compare-pareto",
            "Pareto front: accuracy against latency",
            figure_block(
                pareto_figure(latency_points, "mean latency per frame (ms)", f1_label, True), latency_caption
            ),
        ),
    ]
    energy = [
        ParetoPoint(_label(i, r), r.resources.energy_per_frame_j, r.metrics.f1_at(delta))
        for i, r in online
        if r.resources.energy_per_frame_j is not None
    ]
    if len(energy) >= 2:
        caption = (
            "GPU energy per frame (NVML, measured window / frames) against F1; runs without a measured "
            f"energy are left out ({len(online) - len(energy)})."
        )
        body = figure_block(pareto_figure(energy, "GPU energy per frame (J)", f1_label, True), caption)
    else:
        reasons = sorted(
            {
                r.resources.energy_per_frame_reason or "unknown"
                for _, r in online
                if r.resources.energy_per_frame_j is None
            }
        )
        body = absent(
            f"energy was measured in {len(energy)} of {len(online)} runs (two are needed); "
            f"reason(s): {'; '.join(reasons)}"
        )
    sections.append(Section("compare-energy", "Pareto front: accuracy against energy", body))
    return sections
