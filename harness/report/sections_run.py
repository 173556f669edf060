"""The per-run sections about the online result: summary, latency, latency over time, F1@Δt, breakdown,
environment (README "What the figures mean"; seed 004 §6.2.2, §6.3.1 (3))."""

from __future__ import annotations

import json

from harness.report.analysis import latency_timeline, scored_latency_ms
from harness.report.bundle import RunBundle
from harness.report.figures import (
    UNIT_LABELS,
    breakdown_figure,
    f1_curves_figure,
    latency_figure,
    timeline_figure,
)
from harness.report.html import absent, esc, figure_block, num, table, value_or_null
from harness.results.files import RunResult
from protocols.metrics.bootstrap import Interval

__all__ = [
    "breakdown_section",
    "environment_section",
    "f1_section",
    "latency_section",
    "summary_section",
    "timeline_section",
]


def _interval(i: Interval, digits: int = 4) -> str:
    return esc(f"{i.estimate:.{digits}g} [{i.low:.{digits}g}, {i.high:.{digits}g}]")


def _json(value: object) -> str:
    return f"<code>{esc(json.dumps(value, sort_keys=True, default=str))}</code>"


def _no_result(bundle: RunBundle) -> str:
    return absent(bundle.result_reason)


def summary_section(bundle: RunBundle) -> str:
    """Who ran what, and the headline figures with their intervals, warnings and resources."""
    r = bundle.result
    facts = [
        ("run directory", esc(bundle.run_dir)),
        (
            "files present",
            esc(
                ", ".join(bundle.results)
                or "none readable"
            ),
        ),
    ]
    if r is None:
        return table(["", ""], facts) + _no_result(bundle)
    m = r.metrics
    facts += [
        ("adapter", f"{esc(r.adapter)} (<code>{esc(r.adapter_info.name)}</code>)"),
        ("adapter options", _json(r.adapter_options)),
        ("data set", f"{esc(r.dataset)} {_json(r.dataset_config)}"),
        ("created", esc(r.created_at.isoformat())),
        (
            "streams",
            esc(f"{len(r.streams.get('test', []))} test, {len(r.streams.get('validation', []))} validation"),
        ),
        ("decision", esc(f"{m.decision.kind}" + (f", k = {m.decision.k}" if m.decision.k else ""))),
        ("clock", esc(f"{r.clock.name} ({r.clock.resolution_ns:g} ns resolution), pacing {r.clock.pacing}")),
        ("warm-up", esc(f"{r.warmup.frames} frames on {r.warmup.stream_id}") if r.warmup else esc("none")),
        ("fingerprint", f"<code>{esc(r.fingerprint)}</code>"),
        ("streambench", esc(r.streambench_version)),
        (
            "execution",
            esc(
                f"adapter ran {r.execution.mode}; on error: {r.execution.on_error}; "
                f"{r.execution.sessions} session(s)"
            ),
        ),
        (
            "scored",
            esc(
                f"{r.scored.scored_streams} of {r.scored.planned_streams} planned streams "
                f"({r.scored.scored_frames} frames); {r.scored.failed_streams} failed"
            ),
        ),
        ("status", esc(r.status + (f": {r.incomplete_reason}" if r.incomplete_reason else ""))),
    ]
    warnings = "".join(f'<li class="warn">{esc(w)}</li>' for w in m.headline.warnings)
    warnings += "".join(
        f'<li class="warn">{esc(f"stream {f.stream_id} failed at frame {f.frame}: {f.message}")}</li>'
        for f in r.failures
    )
    f1_rows = [
        (esc(f"{i_delta:g} ms"), _interval(interval), esc(interval.n_streams))
        for i_delta, interval in zip(r.protocol_config.deltas_ms, m.headline.f1_strict, strict=True)
    ]
    lat = m.overall.speed.latency
    speed_rows = [
        (
            "latency mean / p50 / p95 / p99 / max (ms)",
            esc(
                " / ".join(f"{v:.4g}" for v in (lat.mean_ms, lat.p50_ms, lat.p95_ms, lat.p99_ms, lat.max_ms))
            ),
            esc(f"n = {lat.n} frames, numpy '{lat.percentile_method}'"),
        ),
        (
            "mean latency, interval over streams (ms)",
            _interval(m.headline.mean_latency_ms),
            esc(f"{m.headline.mean_latency_ms.confidence:.0%} bootstrap"),
        ),
        ("FPS", num(lat.fps, reason="mean latency below the clock's resolution"), esc("1 / mean latency")),
        ("RTF", _interval(m.headline.rtf), esc("processing / stream duration")),
        (
            "deadline-miss rate",
            num(m.overall.speed.replay.deadline_miss_rate),
            esc(
                "measured (paced)" if m.overall.speed.replay.measured else "replayed from recorded latencies"
            ),
        ),
    ]
    res = r.resources
    cuda_mib = None if res.memory.peak_cuda_bytes is None else res.memory.peak_cuda_bytes / 2**20
    resource_rows = [
        ("GPU energy per frame (J)", num(res.energy_per_frame_j, reason=res.energy_per_frame_reason)),
        ("W at RTF = 1", num(res.power_at_rtf1_w, reason=res.power_at_rtf1_reason)),
        ("CPU energy (J, RAPL)", num(res.cpu_energy.energy_j, reason=res.cpu_energy.reason)),
        ("peak RSS (MiB)", num(res.memory.peak_rss_bytes / 2**20)),
        (
            "peak RSS of the adapter's worker (MiB)",
            num(
                None if res.worker_peak_rss_bytes is None else res.worker_peak_rss_bytes / 2**20,
                reason=res.worker_peak_rss_reason,
            ),
        ),
        ("peak CUDA memory (MiB)", num(cuda_mib, reason=res.memory.cuda_reason)),
        ("FLOPs per frame", num(res.flops_per_frame, reason=res.flops_reason)),
    ]
    if r.normalisation is not None:
        n = r.normalisation
        resource_rows += [
            (f"speed-up vs {esc(n.baseline_run)}", num(n.speedup, reason=n.reason)),
            ("FLOPs-normalised latency (ms)", num(n.flops_normalised_latency_ms, reason=n.reason)),
        ]
    return (
        table(["", ""], facts)
        + (f"<ul>{warnings}</ul>" if warnings else "")
        + "<h4>F1@Δt (Strict, frame, micro) with its interval over streams</h4>"
        + table(["Δt", f"F1 [{m.headline.f1_strict[0].confidence:.0%} interval]", "streams"], f1_rows)
        + "<h4>Speed</h4>"
        + table(["figure", "value", "how"], speed_rows)
        + "<h4>Resources</h4>"
        + table(["figure", "value"], resource_rows)
    )


def latency_section(bundle: RunBundle) -> str:
    """Histogram and CDF of the test streams' per-frame latencies, p50 / p95 / p99 from the result."""
    if bundle.result is None:
        return _no_result(bundle)
    if bundle.recordings is None:
        return absent(bundle.missing.get("arrays", "no recorded arrays"))
    latency = scored_latency_ms(bundle.recordings)
    if latency.size == 0:
        return absent("no measured frame on a test stream")
    summary = bundle.result.metrics.overall.speed.latency
    caption = (
        f"Host wall time of each <code>predict()</code> call on the test streams ({summary.n} frames; "
        "warm-up never recorded). Dashed lines: the result's p50 / p95 / p99 "
        f"(numpy '{esc(summary.percentile_method)}' percentiles). Histogram counts are on a log scale."
    )
    return figure_block(latency_figure(latency, summary), caption)


def timeline_section(bundle: RunBundle) -> str:
    """Latency frame after frame across the run: warm-up residue at the start, drift or throttling later."""
    if bundle.result is None:
        return _no_result(bundle)
    if bundle.recordings is None:
        return absent(bundle.missing.get("arrays", "no recorded arrays"))
    timeline = latency_timeline(bundle.recordings)
    if timeline.latency_ms.size == 0:
        return absent("no measured frame")
    warm = bundle.result.warmup
    caption = (
        f"Every measured frame of the {len(timeline.stream_start)} stream(s) in the order they were fed "
        "(test and validation streams; vertical lines: stream boundaries, purple before a validation "
        "stream), log scale, with a rolling median. "
        + (
            f"The {warm.frames} warm-up frames ran before the first stream and are not recorded: "
            "a slow start here is warm-up the harness did not absorb. "
            if warm
            else "This run had no warm-up: the first frames include the model's cold start. "
        )
        + "A rising median later in the run suggests throttling or interference."
    )
    return figure_block(timeline_figure(timeline), caption)


def f1_section(bundle: RunBundle) -> str:
    """F1@Δt curves, algorithmic and computation-aware, with the table of their values."""
    if bundle.result is None:
        return _no_result(bundle)
    m = bundle.result.metrics
    curves = m.overall.accuracy.curves
    caption = (
        "F1@Δt (micro over units and classes, seed 004 §6.2.2 (1)) over the test streams. "
        "Algorithmic clock: a label counts at the arrival time of the frame it was emitted at. "
        "Compute-aware: at the time its <code>predict()</code> finished, the recorded latencies "
        "replayed with frames arriving at their stream time"
        + (" (or measured on the wall clock, paced)" if "frame_paced" in curves else "")
        + f", policy '{esc(m.overall.speed.replay.policy)}'. Error bars: the bootstrap interval over "
        "streams of the frame-level Strict curve."
    )
    rows = []
    for unit, by_mode in curves.items():
        for mode, points in by_mode.items():
            rows.append(
                [esc(UNIT_LABELS.get(unit, unit)), esc(mode)] + [esc(f"{p.f1_micro:.4f}") for p in points]
            )
    deltas = [f"F1@{d:g} ms" for d in bundle.result.protocol_config.deltas_ms]
    acc = m.overall.accuracy
    offline = (
        f"Offline view (latest prediction per unit, any delay): segment F1 {acc.segment_f1_micro:.4f} "
        f"(macro {acc.segment_f1_macro:.4f}), frame accuracy {acc.frame_accuracy:.4f}."
    )
    return (
        figure_block(f1_curves_figure(curves, m.headline.f1_strict), caption)
        + table(["unit", "mode", *deltas], rows)
        + f"<p>{esc(offline)}</p>"
    )


def breakdown_section(bundle: RunBundle) -> str:
    """The stage breakdown of predict() (seed 004 §6.3.1 (3))."""
    if bundle.result is None:
        return _no_result(bundle)
    rows = bundle.result.metrics.overall.speed.breakdown
    if not rows:
        return absent("the adapter declared no stages (with self.stages(name): ... inside predict())")
    caption = (
        "Host time of each named stage inside <code>predict()</code> per frame, summed over the test "
        "streams, and its share of the total; '(outside stages)' is the rest of the call."
    )
    body = [
        (esc(r.stage), esc(f"{r.ms_per_frame:.4g}"), esc(f"{100 * r.share:.1f}"), esc(r.method)) for r in rows
    ]
    return figure_block(breakdown_figure(rows), caption) + table(
        ["stage", "ms per frame", "share (%)", "timing method"], body
    )


def environment_section(result: RunResult | None, reason: str) -> str:
    """The environment manifest item by item (seed 004 §6.2.2 lock list), threads and clock."""
    if result is None:
        return absent(reason)
    rows = []
    for name, item in result.environment:
        if hasattr(item, "value"):
            rows.append((f"<code>{esc(name)}</code>", value_or_null(item.value, item.reason)))
        else:
            rows.append((f"<code>{esc(name)}</code>", esc(item)))
    threads = result.threads
    thread_rows = [
        ("intra-op threads", esc(f"{threads.intra_op} (before: {threads.intra_op_before})")),
        ("inter-op threads", esc(f"{threads.inter_op} (before: {threads.inter_op_before})")),
        ("requested", f"<code>{esc(threads.requested.model_dump_json())}</code>"),
    ]
    return (
        f"<p>Fingerprint <code>{esc(result.fingerprint)}</code> (hash of the items that affect timing).</p>"
        + "<details open><summary>Manifest</summary>"
        + table(["item", "value"], rows)
        + "</details>"
        + "<details><summary>Threads</summary>"
        + table(["", ""], thread_rows)
        + "</details>"
    )
