"""The adapter under test as an online session holds it (harness/runs/session.py): in this process or
in a worker (sealed by default), with what the session reads off it at the end — its memory, its
host-side timing verdict, its sandbox, the processes it left running — and the session's own
audit, and the run's measurement-quality verdict with those verdicts folded in."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import numpy as np

from streambench.adapters.contract import AdapterInfo, Stream
from streambench.adapters.registry import resolve
from streambench.harness.datasets.catalog import check_sample_streams
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine, clock_info
from streambench.harness.execution.event_log import FailureEvent
from streambench.harness.execution.executor import InProcess, StreamRunner
from streambench.harness.execution.host_timing import HostTimingRecord, judge_host_timing
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.process_tree import ChildWatch, LeftoverProcess
from streambench.harness.execution.sandbox import SandboxRecord
from streambench.harness.execution.setup import build_adapter
from streambench.harness.execution.torch_setup import AdapterProcess, watch_build
from streambench.harness.instruments.interference import cpu_frequency_khz
from streambench.harness.instruments.memory import MemoryReport
from streambench.harness.results.quality import MeasurementQuality, judge_quality
from streambench.harness.runs.session_audit import SessionAuditor
from streambench.protocols.base import Plan
from streambench.protocols.online_speed import measured_latency
from streambench.protocols.recording import StreamRecording
from streambench.protocols.session_audit import SessionAuditConfig, SessionAuditResult

__all__ = [
    "Subject",
    "adapter_memory",
    "measurement_quality",
    "open_subject",
    "session_auditor",
    "with_verdicts",
]


@dataclasses.dataclass
class Subject:
    """The adapter under test as the session sees it, in this process or in an isolated worker."""

    runner: StreamRunner
    info: AdapterInfo
    module: str  # the adapter class's module (its git commit goes into the manifest)
    mode: Literal["in-process", "isolated", "sealed"]
    count_flops: Callable[[], tuple[int | None, str | None]]
    warmup_stream_id: str | None
    worker_peak_rss: Callable[[], int | None] = lambda: None
    host_timing: Callable[[Sequence[StreamRecording]], HostTimingRecord] = lambda _: HostTimingRecord(
        verdict="not-checked", reason="in-process (--in-process): the model shares the harness's clock"
    )
    run_variant: Callable[[Stream], StreamRecording] | None = None  # sealed: any stream this process holds
    sandbox: Callable[[], SandboxRecord | None] = lambda: None
    end_processes: Callable[[], list[LeftoverProcess]] = list  # the run is over: end what the model left
    process: Callable[[], AdapterProcess | None] = lambda: None  # its threads and modules once built


@contextlib.contextmanager
def open_subject(config: RunConfig, streams: Sequence[Stream], warmup: Stream | None) -> Iterator[Subject]:
    first = streams[0]
    if config.isolate:  # built, warmed up and timed in a worker process only; never in this one
        with IsolatedEngine(config, config.isolation) as isolated:
            info = isolated.info
            if tuple(info.classes) != tuple(first.classes):
                raise ValueError(
                    f"adapter {config.adapter!r} declares {len(info.classes)} classes, the data set has "
                    f"{len(first.classes)}; they must match in name and order"
                )
            check_sample_streams(info, [first])
            yield Subject(
                runner=isolated,
                info=info,
                module=resolve(config.adapter).__module__,
                mode="sealed" if config.isolation.sealed else "isolated",
                count_flops=lambda: isolated.count_flops(first.stream_id),
                warmup_stream_id=warmup.stream_id if warmup is not None else None,
                worker_peak_rss=lambda: isolated.peak_rss_bytes,
                host_timing=lambda recordings: (
                    judge_host_timing(recordings, isolated.floor, isolated.start_times, isolated.idle_cpu_ns)
                    if isolated.sealed
                    else HostTimingRecord(
                        verdict="not-checked", reason="an isolated worker holds the data; not timed per frame"
                    )
                ),
                run_variant=isolated.run if isolated.sealed else None,
                sandbox=lambda: isolated.sandbox,
                end_processes=isolated.finish,
                process=lambda: _reported(isolated.adapter_process),
            )
        return
    children = ChildWatch()  # in process, what the model starts is this process's
    try:
        built = watch_build()
        adapter = build_adapter(config, first)
        process = built()
        engine = Engine(adapter, config.engine)
        yield Subject(
            runner=InProcess(engine, {s.stream_id: s for s in streams}, warmup),
            info=adapter.info,
            module=type(adapter).__module__,
            mode="in-process",
            count_flops=lambda: engine.count_flops(first),
            warmup_stream_id=warmup.stream_id if warmup is not None else None,
            end_processes=children.end,
            process=lambda: process,
        )
    finally:
        children.end()  # a run that ended early, too


def _reported(process: dict[str, object] | None) -> AdapterProcess | None:
    """The worker's report of its process; None when it sent none or one this harness cannot
    read (an A/B side's other checkout): the record then says less, the run goes on."""
    try:
        return AdapterProcess.model_validate(process) if process is not None else None
    except ValueError:
        return None


def adapter_memory(subject: Subject, memory: MemoryReport) -> tuple[MemoryReport, int | None, str]:
    """(the harness's memory report, the worker's peak RSS, why it is what it is). Under ``--isolate``
    the adapter's memory is the worker's, which the harness's probe cannot see: this process reads the
    worker's high-water mark from /proc after every reply (not the worker's word)."""
    if subject.mode == "in-process":
        return memory, None, "the adapter ran in this process: its memory is memory.peak_rss_bytes"
    harness_only = memory.model_copy(
        update={
            "peak_rss_method": f"{memory.peak_rss_method}; of the harness process only: the adapter ran "
            "in an isolated worker (resources.worker_peak_rss_bytes)"
        }
    )
    peak = subject.worker_peak_rss()
    if peak is None:
        return harness_only, None, "no worker reported its peak (getrusage unavailable, or none finished)"
    how = (
        "the worker's high-water mark (VmHWM of /proc/<pid>/status, read by the harness, not reported by "
        "the worker; its own getrusage report only where /proc is unreadable): its peak since it started, "
        "imports included"
    )
    return harness_only, peak, how + "; the largest over the run's workers, read after each stream"


def measurement_quality(recordings: Sequence[StreamRecording], device: str) -> MeasurementQuality:
    """The run's measurement-quality verdict (harness/results/quality.py) from its recordings."""
    counts = [r.context_switches.get("involuntary") for r in recordings]
    latency = [measured_latency(r) for r in recordings]
    return judge_quality(
        np.concatenate(latency) if latency else np.zeros(0, dtype=np.int64),
        streams=len(recordings),
        involuntary_switches=None if None in counts else sum(c or 0 for c in counts),
        clock_resolution_ns=clock_info(device).resolution_ns,
        cpu_frequency=cpu_frequency_khz(),
        own_threads_share=own_threads_share(recordings),
    )


def own_threads_share(recordings: Sequence[StreamRecording]) -> float | None:
    """The CPU time of the worker's threads other than the engine's, as a share of the engine thread's, over
    the streams (read by the harness from ``/proc``); None where any stream lacks it (in process)."""
    pairs = [(r.worker_cpu_ns, r.worker_main_cpu_ns) for r in recordings]
    if not pairs or any(total is None or main is None for total, main in pairs):
        return None
    total = sum(t or 0 for t, _ in pairs)
    main = sum(m or 0 for _, m in pairs)
    return max(total - main, 0) / main if main > 0 else None


def with_verdicts(
    quality: MeasurementQuality, host: HostTimingRecord, audit: SessionAuditResult
) -> MeasurementQuality:
    """INVALID when the parent's clock disagrees with the worker's: the worker's latency
    figures then measure what the model let its own clock say; and when the session's own audit failed:
    the model answered a copy of a scored stream differently."""
    if audit.passed is False:
        first = next(c for c in audit.checks if not c.passed)
        reason = f"the session's audit failed: {first.name} of {first.first_stream}: {first.detail}"
        quality = quality.model_copy(update={"verdict": "INVALID", "reasons": [*quality.reasons, reason]})
    if host.verdict != "disagree":
        return quality
    excess, threshold = (host.excess_p50_ns or 0) / 1e3, (host.threshold_ns or 0) / 1e3
    reason = (
        f"the parent's clock disagrees with the worker's: median excess {excess:.0f} µs per frame "
        f"over the pipe's floor (threshold {threshold:.0f} µs)"
    )
    return quality.model_copy(update={"verdict": "INVALID", "reasons": [*quality.reasons, reason]})


def session_auditor(
    config: SessionAuditConfig,
    subject: Subject,
    streams: Sequence[Stream],
    run_plan: Plan,
    done: Sequence[StreamRecording],
    failed: Sequence[FailureEvent],
) -> SessionAuditor | None:
    """The session's own audit over the streams this session runs; sealed runs only
    (in process a variant would not look like a scored stream to a model that walks the call stack)."""
    if subject.run_variant is None:
        return None
    finished = {r.stream_id for r in done} | {f.stream_id for f in failed}
    todo = [s.stream_id for s in run_plan.streams if s.stream_id not in finished]
    return SessionAuditor(subject.run_variant, {s.stream_id: s for s in streams}, todo, config)
