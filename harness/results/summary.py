"""The readable summaries ``streambench run`` prints: the F1@Δt curve and the latency row (online), the
robustness table, the causality table."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from streambench.harness.datasets.catalog import segment_origin
from streambench.harness.datasets.provenance import conversion_warnings
from streambench.harness.execution.sandbox import SandboxRecord
from streambench.harness.instruments.threads import thread_summary
from streambench.harness.io.safe_text import safe
from streambench.harness.results.files import RunResult
from streambench.harness.results.summary_events import print_events
from streambench.harness.results.trust import trust_gaps
from streambench.protocols.causality import CausalityReport, measured_label
from streambench.protocols.online_notes import figure_notes
from streambench.protocols.online_speed import ServedFigures
from streambench.protocols.robustness import RobustnessReport


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def print_summary(console: Console, result: RunResult) -> None:
    metrics = result.metrics
    overall = metrics.overall
    acc = overall.accuracy
    deltas = [p.delta_ms for p in acc.curves["frame"]["strict"]]

    frame, segment = acc.curves["frame"], acc.curves["segment"]
    curve = Table(
        title="Accuracy given how late the answer may come (%)",
        caption="Strict mode, frame units, micro F1 unless noted; algorithmic clock but the last "
        "column, where "
        "t_pred = when predict() finished, "
        f"latencies replayed with frames arriving on time ({result.protocol_config.pacing_policy} policy)",
        title_justify="left",
    )
    replay = acc.curves["frame_replay"]
    columns = ("Δt ms", "F1", "F1 Early-ok", "macro F1", "Acc", "segment F1")
    for name in (*columns, "F1 compute-aware"):
        curve.add_column(name, justify="right")
    for i, delta in enumerate(deltas):
        curve.add_row(
            f"{delta:g}",
            _pct(frame["strict"][i].f1_micro),
            _pct(frame["early_ok"][i].f1_micro),
            _pct(frame["strict"][i].f1_macro),
            _pct(frame["strict"][i].accuracy),
            _pct(segment["strict"][i].f1_micro),
            _pct(replay["strict"][i].f1_micro),
        )
    console.print(curve)
    print_events(console, metrics)  # the classes F1 counts, event delays, misses, false alarms
    origin = segment_origin(result.dataset_config)  # where the data's segment length came from
    for note in figure_notes(metrics, origin):  # figures that would look broken alone, each with its reason
        console.print(f"[bold]why:[/] {safe(note)}", highlight=False)

    speed = overall.speed
    lat = speed.latency
    timing = Table(title=f"Latency of predict() over {lat.n} frames (ms)", title_justify="left")
    for name in ("avg", "p50", "p95", "p99", "max", "FPS", "RTF"):
        timing.add_column(name, justify="right")
    timing.add_row(
        f"{lat.mean_ms:.3f}",
        f"{lat.p50_ms:.3f}",
        f"{lat.p95_ms:.3f}",
        f"{lat.p99_ms:.3f}",
        f"{lat.max_ms:.3f}",
        "–" if lat.fps is None else f"{lat.fps:.0f}",
        f"{speed.rtf:.4f}",
    )
    console.print(timing)
    if speed.device is not None:
        dev = speed.device.latency
        console.print(
            f"device share (CUDA events): p50 {dev.p50_ms:.3f} ms · p95 {dev.p95_ms:.3f} ms · "
            f"{speed.device.divergent_frames} frames flagged {safe(speed.device.first_divergent)}",
            highlight=False,
        )
    if speed.served is not None:
        console.print(served_line(speed.served), highlight=False)
    replayed = speed.replay
    stale = "–" if replayed.p95_staleness_ms is None else f"{replayed.p95_staleness_ms:.1f} ms"
    console.print(
        f"{'paced on the wall clock' if replayed.measured else 'replayed with frames arriving on time'} "
        f"({replayed.policy}): deadline misses "
        f"{100 * replayed.deadline_miss_rate:.1f} % · dropped {100 * replayed.drop_rate:.1f} % · mean wait "
        f"{replayed.mean_wait_ms:.3f} ms · latency from arrival p50/p95 "
        f"{replayed.p50_response_ms or 0:.3f}/{replayed.p95_response_ms or 0:.3f} ms · p95 staleness {stale}",
        highlight=False,
    )
    if speed.breakdown:
        stages = Table(title="Latency breakdown per frame (seed 004 §6.3.1)", title_justify="left")
        for name, justify in (("stage", "left"), ("ms", "right"), ("share %", "right"), ("timing", "left")):
            stages.add_column(name, justify=justify)  # type: ignore[arg-type]
        for row in speed.breakdown:
            stages.add_row(
                safe(row.stage), f"{row.ms_per_frame:.4f}", f"{100 * row.share:.1f}", safe(row.method)
            )
        console.print(stages)

    head = metrics.headline
    f1_0, mean_ms = head.f1_strict[0], head.mean_latency_ms
    macro = frame["strict"]
    console.print(
        f"{100 * f1_0.confidence:.0f} % intervals over {f1_0.n_streams} streams (bootstrap): "
        f"F1@{deltas[0]:g} ms Strict {_pct(f1_0.estimate)} [{_pct(f1_0.low)}, {_pct(f1_0.high)}] % "
        f"(macro {_pct(macro[0].f1_macro)} %) · "
        f"F1@{deltas[-1]:g} ms Strict {_pct(head.f1_strict[-1].estimate)} "
        f"[{_pct(head.f1_strict[-1].low)}, {_pct(head.f1_strict[-1].high)}] % "
        f"(macro {_pct(macro[-1].f1_macro)} %) · "
        f"mean latency {mean_ms.estimate:.4f} [{mean_ms.low:.4f}, {mean_ms.high:.4f}] ms · "
        f"latency IQR/median {100 * head.latency_spread:.0f} %",
        highlight=False,
    )
    for warning in head.warnings:
        console.print(f"[yellow]warning:[/] {safe(warning)}", highlight=False)
    res = result.resources
    energy = (
        f"{res.energy_per_frame_j:.4g} J/frame ({safe(res.gpu_energy.method)})"
        if res.energy_per_frame_j is not None
        else f"null ({safe(res.energy_per_frame_reason)})"
    )
    flops = (
        f"{res.flops_per_frame:,}" if res.flops_per_frame is not None else f"null ({safe(res.flops_reason)})"
    )
    rss = f"{res.memory.peak_rss_bytes / 2**20:.0f} MiB"
    if result.execution.mode != "in-process":  # the adapter's memory is its worker's
        worker = res.worker_peak_rss_bytes
        shown = (
            f"{worker / 2**20:.0f} MiB"
            if worker is not None
            else f"null ({safe(res.worker_peak_rss_reason)})"
        )
        rss = f"harness {rss}, adapter worker {shown}"
    console.print(
        f"resources: peak RSS {rss} · GPU energy {energy} · "
        f"FLOPs/frame {flops} · W@RTF=1 "
        f"{'null' if res.power_at_rtf1_w is None else f'{res.power_at_rtf1_w:.1f} W'} · "
        f"environment fingerprint {safe(result.fingerprint)}",
        highlight=False,
    )
    if result.normalisation is not None:
        norm = result.normalisation
        figures = (
            f"speed-up {norm.speedup:.3f}x" if norm.speedup is not None else "speed-up null",
            f"FLOPs-normalised latency {norm.flops_normalised_latency_ms:.4f} ms"
            if norm.flops_normalised_latency_ms is not None
            else "FLOPs-normalised latency null",
        )
        reason = f" ({safe(norm.reason)})" if norm.reason else ""
        against = safe(norm.baseline_run or norm.baseline_path)  # the path, where the run could not be read
        console.print(f"against baseline {against}: {' · '.join(figures)}{reason}", highlight=False)
    decision = metrics.decision
    rule = (
        decision.kind
        if decision.kind != "threshold"
        else f"threshold {decision.thresholds[0] if decision.thresholds else ''}"
    )
    console.print(
        f"offline: segment F1 micro {_pct(acc.segment_f1_micro)} % · macro {_pct(acc.segment_f1_macro)} % · "
        f"frame accuracy {_pct(acc.frame_accuracy)} %\n"
        f"{len(metrics.streams) + len(metrics.failed)} test streams"
        + (f" ({len(metrics.failed)} failed, scored as wrong)" if metrics.failed else "")
        + f", {acc.num_frames} frames, {acc.num_segments} segments · "
        f"decision: {safe(rule)} · adapter {safe(result.adapter_info.name)} "
        f"on {safe(result.adapter_info.device)} · "
        f"warm-up {result.warmup.frames if result.warmup else 0} frames · clock {safe(result.clock.name)}",
        highlight=False,
    )
    _print_execution(console, result)


def _print_execution(console: Console, result: RunResult) -> None:
    """How much was scored, how the adapter ran, and every failure (a failed test stream is in the
    metrics as answered wrongly, and the summary says so)."""
    scored, run = result.scored, result.execution
    sessions = f" · {run.sessions} sessions (resumed)" if run.sessions > 1 else ""
    console.print(
        f"scored {scored.scored_streams} of {scored.planned_streams} planned streams "
        f"({scored.scored_frames} frames) · adapter ran {run.mode}{_sandbox(run.sandbox)} · on error: "
        f"{run.on_error}{sessions}",
        highlight=False,
    )
    console.print(f"threads: {safe(thread_summary(result.threads))}", highlight=False)
    for warning in host_timing_warnings(result):
        console.print(f"[yellow]warning:[/] {safe(warning)}", highlight=False)
    audit = result.session_audit
    if audit is not None and audit.passed is not None:
        kinds = sorted({v.kind for v in audit.variants})
        if audit.passed:
            console.print(
                f"session audit: {len(audit.checks)} {'/'.join(kinds)} copies of scored streams, interleaved "
                "among them in the same worker, agree with the scored outputs",
                highlight=False,
            )
        else:
            bad = [c for c in audit.checks if not c.passed]
            console.print(
                f"[bold red]session audit FAILED[/] ({len(bad)} of {len(audit.checks)}): "
                f"{safe(bad[0].name)} of {safe(bad[0].first_stream or '')}: {safe(bad[0].detail)}",
                highlight=False,
            )
    host = result.host_timing
    if host is not None and host.verdict != "not-checked" and host.floor is not None:
        start = host.start
        console.print(
            f"parent's clock: frame p50 {(host.host_p50_ns or 0) / 1e6:.3f} ms, p95 "
            f"{(host.host_p95_ns or 0) / 1e6:.3f} ms (pipe floor {host.floor.median_ns / 1e3:.0f} µs "
            f"subtracted) · worker's p50 {(host.worker_p50_ns or 0) / 1e6:.3f} ms · {host.verdict} · "
            f"reset_state() p50 {(host.reset_p50_ns or 0) / 1e6:.3f} ms"
            + (f" · model built in {start.construction_s:.2f} s" if start and start.construction_s else ""),
            highlight=False,
        )
    if scored.predictions_beyond_end:
        console.print(
            f"{scored.predictions_beyond_end} prediction(s) labelled a frame past the end of their stream: "
            "dropped (not scored)",
            highlight=False,
        )
    if not result.failures:
        return
    if scored.failure_rule == "wrong":
        how = f"the test ones scored as answered wrongly on all their {scored.failed_frames} frames"
    else:
        how = "left out of the figures: a result written before failed streams were scored"
    console.print(
        f"[bold red]{len(result.failures)} stream(s) failed[/] ({how}; tracebacks in result.json):",
        highlight=False,
    )
    for f in result.failures:
        where = "before its first frame" if f.frame is None else f"frame {f.frame}"
        console.print(f"  {safe(f.stream_id)}, {where}: {safe(f.message)}", highlight=False)


def print_robustness(console: Console, report: RobustnessReport) -> None:
    """The robustness table (seed 004 §6.2.2 (3)): F1 at each sweep point and its drop from clean."""
    table = Table(
        title=f"Robustness: F1@{report.report_delta_ms:g} ms (Strict, frame) under perturbation",
        title_justify="left",
        caption=f"F1 counts {safe(report.f1_counts)}, as the online F1@Δt",
        caption_justify="left",
    )
    for name in ("point", "F1 %", "drop (abs, pp)", "drop (rel) %", "status"):
        table.add_column(name, justify="left" if name in ("point", "status") else "right")
    clean_f1 = report.clean.f1
    table.add_row(
        "clean",
        "–" if clean_f1 is None else _pct(clean_f1),
        "",
        "",
        "ok" if clean_f1 is not None else "failed",
    )
    for point in report.points:
        status = "ok"
        if point.failure is not None:  # its failed streams are in the F1 as answered wrongly
            fail, count = point.failure, max(len(point.failures), 1)
            scored = "scored as wrong" if point.f1 is not None else "not scored"
            status = (
                f"{count} stream(s) failed ({scored}); first: stream {safe(fail.stream_id)}, frame "
                f"{fail.frame}: {safe(fail.error)}"
            )
        f1, drop, rel = point.f1, point.abs_drop, point.rel_drop
        table.add_row(
            safe(point.variant.name),
            "–" if f1 is None else _pct(f1),
            "–" if drop is None else f"{100 * drop:+.1f}",
            "–" if rel is None else f"{100 * rel:+.1f}",
            status,
        )
    console.print(table)


def print_causality(console: Console, report: CausalityReport, skipped: dict[str, str] | None = None) -> None:
    """The causality table (one row per check, naming the first offending stream and frame), then each
    check's detail on its own line, so the table stays readable in a narrow terminal."""
    verdict = "passed" if report.passed else f"FAILED ({', '.join(report.failed)})"
    table = Table(title=f"Causality: {verdict}", title_justify="left")
    for name in ("check", "passed", "first stream", "first frame", "measured"):
        table.add_column(name, justify="right" if name in ("first frame", "measured") else "left")
    for check in report.checks:
        frame = "–" if check.first_frame is None else str(check.first_frame)
        if check.first_source is not None:
            frame = f"{frame} (from x_{check.first_source})"
        table.add_row(
            safe(check.name),
            "[green]yes[/green]" if check.passed else "[red]NO[/red]",
            safe(check.first_stream or "–"),
            frame,
            safe(measured_label(check.name, check.max_difference)),
        )
    for name in skipped or {}:
        table.add_row(safe(name), "skipped", "–", "–", "–")
    console.print(table)
    for check in report.checks:
        console.print(f"[bold]{safe(check.name)}[/]: {safe(check.detail)}", highlight=False)
    for name, reason in (skipped or {}).items():
        console.print(f"[bold]{safe(name)}[/] (skipped): {safe(reason)}", highlight=False)


def host_timing_warnings(online: RunResult) -> list[str]:
    """What the parent's clock says against the worker's, and how the adapter ran."""
    host = getattr(online, "host_timing", None)
    out = trust_gaps(online.execution.mode, online.execution.sandbox)
    if host is not None and host.verdict == "disagree":
        parent, worker = (host.host_p50_ns or 0) / 1e6, (host.worker_p50_ns or 0) / 1e6
        out.append(
            f"the parent's clock disagrees with the worker's: a frame takes {parent:.3g} ms on the parent's "
            f"clock (floor subtracted) but {worker:.3g} ms on the worker's (a stopped clock, or work after "
            "predict() returned): latency figures are not trustworthy"
        )
    if host is not None:
        out.extend(host.notes)
    if online.threads.warning:  # more threads at once than the adapter's process has cores
        out.append(online.threads.warning)
    out.extend(conversion_warnings(online.environment.data_sources.value))  # resampled, down-mixed audio
    left = online.execution.leftover_processes
    if left:  # processes the model started and left running, ended with the run
        named = "; ".join(f"{p.pid} {p.name} ({_middle_cut(p.command, 80)})" for p in left)
        out.append(f"the adapter left {len(left)} process(es) running, ended by the harness: {named}")
    return out


def _middle_cut(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters in its middle: a command's head (the program) and its tail (the
    arguments that tell one process from another) both stay, whatever the length of the paths between."""
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def _sandbox(record: SandboxRecord | None) -> str:
    if record is None:
        return ""
    if record.status == "sandboxed":
        return f" ({safe(record.mechanism or 'sandboxed')})"
    return f" ([yellow]unsandboxed[/]: {safe(record.reason or '')})"


def served_line(served: ServedFigures) -> str:
    """One line for a served model: end to end (the latency above), the server's model-only figure and the
    serving overhead between them (docs/serving.md), or why there is no model-only figure."""
    if served.model_only is None or served.end_to_end is None:
        return (
            "served model: the latency above is end to end (the client's clock); model-only: none "
            f"({served.reason})"
        )
    e2e, model = served.end_to_end, served.model_only
    flagged = (
        f" · {served.model_above_end_to_end} frames with model-only above end to end"
        if served.model_above_end_to_end
        else ""
    )
    return (
        f"served model over {served.frames_with_figure}/{served.frames} frames (ms, p50/p95): end to end "
        f"{e2e.p50_ms:.3f}/{e2e.p95_ms:.3f} · model-only (server's word) "
        f"{model.p50_ms:.3f}/{model.p95_ms:.3f} · serving overhead "
        f"{served.overhead_p50_ms:.3f}/{served.overhead_p95_ms:.3f}{flagged}"
    )
