"""The per-run sections about the online result: summary, latency, latency over time, F1@Δt, breakdown
(docs/results.md "What the figures mean"; seed 004 §6.2.2, §6.3.1 (3)). Captions explain the
picture to its reader (what is drawn, how to read it); where the numbers come from is said here, not
there."""

from __future__ import annotations

from streambench.harness.datasets.catalog import segment_origin
from streambench.harness.datasets.provenance import conversion_warnings
from streambench.harness.instruments.threads import thread_summary
from streambench.harness.report.analysis import latency_timeline, scored_latency_ms
from streambench.harness.report.bundle import RunBundle
from streambench.harness.report.figures import (
    UNIT_LABELS,
    breakdown_figure,
    f1_curves_figure,
    latency_figure,
    timeline_figure,
)
from streambench.harness.report.html import (
    Markup,
    absent,
    concat,
    figure_block,
    kv_table,
    kv_value,
    markup,
    missing,
    num,
    table,
)
from streambench.harness.report.measurement import verdict_banner
from streambench.harness.report.numbers import human, latency_ms, percent, rate_fps, unit_of_ms
from streambench.harness.results.files import RunResult
from streambench.harness.results.trust import execution_label, trust_gaps
from streambench.protocols.metrics.bootstrap import Interval
from streambench.protocols.online_notes import compute_aware_note, segment_note
from streambench.protocols.online_speed import ServedFigures

__all__ = [
    "breakdown_section",
    "f1_section",
    "latency_section",
    "summary_section",
    "timeline_section",
]


def _interval(i: Interval, digits: int = 4) -> str:
    return f"{human(i.estimate, digits)} [{human(i.low, digits)}, {human(i.high, digits)}]"


def _latency_interval(i: Interval) -> str:
    unit, size = unit_of_ms(i.estimate)
    low, high = human(i.low / size, 3), human(i.high / size, 3)
    return f"{latency_ms(i.estimate)} [{low}, {high}] {unit}"


def _no_result(bundle: RunBundle) -> Markup:
    return absent(bundle.result_reason)


def _if_invalid(r: RunResult) -> Markup:
    """The measurement-quality banner above a picture of the timings, when the measurement is INVALID
    (the summary shows the verdict either way)."""
    q = r.measurement_quality
    return verdict_banner(q) if q is not None and q.verdict == "INVALID" else Markup()


SEGMENT_VS_FRAME = (
    "Segment and frame F1 differ because they score different units: a segment is scored once, against "
    "the union of its frames' labels, by the latest answer that refers to it, its delay counted from its "
    "last frame (under Strict, a causal model's answer at that last frame); frame F1 scores every frame's "
    "own answer against that frame's labels, so short events, onsets and label changes weigh more in it "
    '(docs/metrics.md, "Time, units and delay").'
)
"""Said wherever segment F1 is shown beside frame F1."""


def _dataset(r: RunResult) -> Markup:
    """The data set's name, its configuration as a key/value list to unfold."""
    summary = f"{r.dataset} ({len(r.dataset_config)} settings)"
    return markup("<details><summary>{}</summary>{}</details>", summary, kv_value(r.dataset_config))


def _seed(r: RunResult) -> Markup | str:
    """The data set's seed and where it came from: secret until scored, or public."""
    seeds = r.seeds
    if seeds.dataset is None:
        return "none (data read from files)"
    if seeds.dataset_seed_kind == "secret":
        return f"{seeds.dataset} (secret: drawn for this run, written here after scoring)"
    why = "(given: anyone can rebuild the scored streams, a model may have trained on them)"
    return markup('<span class="warn">public seed</span> {} {}', seeds.dataset, why)


def _facts(bundle: RunBundle, r: RunResult) -> list[tuple[str, object]]:
    """Who ran what, on which data, how: the summary's key/value rows."""
    m = r.metrics
    return [
        ("run directory", bundle.run_dir),
        ("files present", ", ".join(bundle.results) or "none readable"),
        ("adapter", markup("{} (<code>{}</code>)", r.adapter, r.adapter_info.name)),
        ("adapter options", kv_value(r.adapter_options)),
        ("data set", _dataset(r)),
        ("data seed", _seed(r)),
        ("created", r.created_at.isoformat()),
        (
            "streams",
            f"{len(r.streams.get('test', []))} test, {len(r.streams.get('validation', []))} validation",
        ),
        ("decision", f"{m.decision.kind}" + (f", k = {m.decision.k}" if m.decision.k else "")),
        ("clock", f"{r.clock.name} ({r.clock.resolution_ns:g} ns resolution), pacing {r.clock.pacing}"),
        ("warm-up", f"{r.warmup.frames} frames on {r.warmup.stream_id}" if r.warmup else "none"),
        ("fingerprint", markup("<code>{}</code>", r.fingerprint)),
        ("threads", thread_summary(r.threads)),  # the thread setting that governed the model
        ("streambench", r.streambench_version),
        (
            "execution",
            f"adapter ran {execution_label(r.execution.mode, r.execution.sandbox)}; on error: "
            f"{r.execution.on_error}; {r.execution.sessions} session(s)",
        ),
        (
            "scored",
            f"{r.scored.scored_streams} of {r.scored.planned_streams} planned streams by their outputs "
            f"({r.scored.scored_frames} frames); {r.scored.failed_streams} failed"
            + (
                f", scored as answered wrongly ({r.scored.failed_frames} test frames)"
                if r.scored.failure_rule == "wrong"
                else ", left out (a result written before failed streams were scored)"
            ),
        ),
        ("status", r.status + (f": {r.incomplete_reason}" if r.incomplete_reason else "")),
    ]


def _speed_rows(r: RunResult) -> list[tuple[str, str, str]]:
    m = r.metrics
    lat = m.overall.speed.latency
    return [
        (
            "latency mean / p50 / p95 / p99 / max",
            " / ".join(latency_ms(v) for v in (lat.mean_ms, lat.p50_ms, lat.p95_ms, lat.p99_ms, lat.max_ms)),
            f"n = {lat.n} frames, numpy '{lat.percentile_method}'",
        ),
        (
            "mean latency, interval over streams",
            _latency_interval(m.headline.mean_latency_ms),
            f"{m.headline.mean_latency_ms.confidence:.0%} bootstrap",
        ),
        (
            "FPS",
            rate_fps(lat.fps)
            if lat.fps is not None
            else missing("mean latency below the clock's resolution"),
            "1 / mean latency",
        ),
        ("RTF", _interval(m.headline.rtf), "processing / stream duration"),
        *_served_rows(m.overall.speed.served),
        (
            "deadline-miss rate",
            num(m.overall.speed.replay.deadline_miss_rate),
            "measured (paced)" if m.overall.speed.replay.measured else "replayed from recorded latencies",
        ),
    ]


def _served_rows(served: ServedFigures | None) -> list[tuple[str, str, str]]:
    """A served model (docs/serving.md): end to end, the server's model-only figure and the difference."""
    if served is None:
        return []
    if served.model_only is None or served.end_to_end is None:
        return [("server model-only p50 / p95", missing(served.reason or "none"), "the server's word")]
    e2e, model = served.end_to_end, served.model_only
    n = f"{served.frames_with_figure} of {served.frames} frames"
    return [
        (
            "end to end p50 / p95 / p99",
            " / ".join(latency_ms(v) for v in (e2e.p50_ms, e2e.p95_ms, e2e.p99_ms)),
            f"send -> reply on the client's clock, {n}",
        ),
        (
            "server model-only p50 / p95 / p99",
            " / ".join(latency_ms(v) for v in (model.p50_ms, model.p95_ms, model.p99_ms)),
            "the server's word, from its replies",
        ),
        (
            "serving overhead p50 / p95 / p99",
            " / ".join(
                latency_ms(v)
                for v in (served.overhead_p50_ms, served.overhead_p95_ms, served.overhead_p99_ms)
                if v is not None
            ),
            "end to end - model-only, per frame"
            + (
                f"; {served.model_above_end_to_end} frames with model-only above end to end"
                if served.model_above_end_to_end
                else ""
            ),
        ),
    ]


def _resource_rows(r: RunResult) -> list[tuple[str, Markup]]:
    res = r.resources
    cuda_mib = None if res.memory.peak_cuda_bytes is None else res.memory.peak_cuda_bytes / 2**20
    rows = [
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
        rows += [
            (f"speed-up vs {n.baseline_run}", num(n.speedup, reason=n.reason)),
            ("FLOPs-normalised latency (ms)", num(n.flops_normalised_latency_ms, reason=n.reason)),
        ]
    return rows


def summary_section(bundle: RunBundle) -> Markup:
    """Who ran what, and the headline figures with their intervals, warnings and resources."""
    r = bundle.result
    if r is None:
        files = ", ".join(bundle.results) or "none readable"
        return kv_table([("run directory", bundle.run_dir), ("files present", files)]) + _no_result(bundle)
    m = r.metrics
    recorded = [
        *trust_gaps(r.execution.mode, r.execution.sandbox),  # what of the sealed, sandboxed worker it lacked
        *filter(None, [r.threads.warning]),
        *conversion_warnings(r.environment.data_sources.value),
    ]
    warnings = [markup('<li class="warn">{}</li>', w) for w in [*m.headline.warnings, *recorded]]

    def scored_as(role: str) -> str:  # a failed test stream is in the figures, as wrong
        if role != "test":
            return " (a validation stream: fits no threshold)"
        return " (scored as answered wrongly)" if r.scored.failure_rule == "wrong" else " (not scored)"

    warnings += [
        markup(
            '<li class="warn">{}</li>',
            f"stream {f.stream_id} failed at frame {f.frame}{scored_as(f.role)}: {f.message}",
        )
        for f in r.failures
    ]
    f1_rows = [
        (f"{i_delta:g} ms", _interval(interval), interval.n_streams)
        for i_delta, interval in zip(r.protocol_config.deltas_ms, m.headline.f1_strict, strict=True)
    ]
    return concat(
        [
            kv_table(_facts(bundle, r)),
            markup("<ul>{}</ul>", concat(warnings)) if warnings else "",
            Markup("<h4>F1@Δt (Strict, frame, micro) with its interval over streams</h4>"),
            table(["Δt", f"F1 [{m.headline.f1_strict[0].confidence:.0%} interval]", "streams"], f1_rows),
            Markup("<h4>Speed</h4>"),
            verdict_banner(r.measurement_quality),
            table(["figure", "value", "how"], _speed_rows(r)),
            Markup("<h4>Resources</h4>"),
            kv_table(_resource_rows(r)),
        ]
    )


def latency_section(bundle: RunBundle) -> Markup:
    """Histogram and CDF of the test streams' per-frame latencies, p50 / p95 / p99 from the result."""
    if bundle.result is None:
        return _no_result(bundle)
    if bundle.recordings is None:
        return absent(bundle.missing.get("arrays", "no recorded arrays"))
    latency = scored_latency_ms(bundle.recordings)
    if latency.size == 0:
        return absent("no measured frame on a test stream")
    summary = bundle.result.metrics.overall.speed.latency
    caption = markup(
        "How long each <code>predict()</code> call took on the test streams ({} frames, host wall "
        "time; warm-up frames are never recorded). Left: how many frames took each latency, counts on a "
        "log scale so that a few slow frames stay visible. Right: the share of frames that finished "
        "within a given time: the curve crosses 0.5 at the median. Dashed lines: p50, p95 and p99, the "
        "times that 50 %, 95 % and 99 % of the frames stayed within. The latency axis is logarithmic when "
        "the latencies span more than a factor of 10.",
        summary.n,
    )
    return _if_invalid(bundle.result) + figure_block(latency_figure(latency, summary), caption)


def timeline_section(bundle: RunBundle) -> Markup:
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
    return _if_invalid(bundle.result) + figure_block(timeline_figure(timeline), caption)


def f1_section(bundle: RunBundle) -> Markup:
    """F1@Δt curves, algorithmic and computation-aware, with the table of their values."""
    if bundle.result is None:
        return _no_result(bundle)
    m = bundle.result.metrics
    curves = m.overall.accuracy.curves
    caption = markup(
        "F1@Δt: how many labels were right and on time, a label counting only when it came at most Δt "
        "after the event (Strict) or within Δt either side (Early-ok); micro F1 over units and classes of "
        "the test streams. "
        "Algorithmic clock: a label counts at the arrival time of the frame it was emitted at. "
        "Compute-aware: at the time its <code>predict()</code> finished, the recorded latencies "
        "replayed with frames arriving at their stream time{paced}, policy '{policy}'. Error bars: the "
        "bootstrap interval over streams of the frame-level Strict curve.",
        paced=" (or measured on the wall clock, paced)" if "frame_paced" in curves else "",
        policy=m.overall.speed.replay.policy,
    )
    rows = []
    for unit, by_mode in curves.items():
        for mode, points in by_mode.items():
            rows.append([UNIT_LABELS.get(unit, unit), mode] + [percent(p.f1_micro) for p in points])
    deltas = [f"F1@{d:g} ms" for d in bundle.result.protocol_config.deltas_ms]
    acc = m.overall.accuracy
    offline = (
        f"Offline view (latest prediction per unit, any delay): segment F1 {percent(acc.segment_f1_micro)} "
        f"(macro {percent(acc.segment_f1_macro)}), frame accuracy {percent(acc.frame_accuracy)}."
    )
    origin = segment_origin(bundle.result.dataset_config)  # where the data's segment length came from
    notes = [n for n in (compute_aware_note(m), segment_note(m, origin)) if n]  # would look broken alone
    return concat(
        [
            figure_block(f1_curves_figure(curves, m.headline.f1_strict), caption),
            table(["unit", "mode", *deltas], rows),
            markup("<p>{}</p>", offline),
            *(markup('<p class="why">Why: {}.</p>', note) for note in notes),
            markup('<p class="small">{}</p>', SEGMENT_VS_FRAME),
        ]
    )


def breakdown_section(bundle: RunBundle) -> Markup:
    """The stage breakdown of predict() (seed 004 §6.3.1 (3))."""
    if bundle.result is None:
        return _no_result(bundle)
    rows = bundle.result.metrics.overall.speed.breakdown
    if not rows:
        return absent("the adapter declared no stages (with self.stages(name): ... inside predict())")
    caption = Markup(
        "Host time of each named stage inside <code>predict()</code> per frame, summed over the test "
        "streams, and its share of the total; '(outside stages)' is the rest of the call."
    )
    body = [(r.stage, f"{r.ms_per_frame:.4g}", f"{100 * r.share:.1f}", r.method) for r in rows]
    return figure_block(breakdown_figure(rows), caption) + table(
        ["stage", "ms per frame", "share (%)", "timing method"], body
    )
