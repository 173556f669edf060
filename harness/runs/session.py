"""A session of an online run (DESIGN.md "Layout", floor 3): build the data set and the adapter (here or
in an isolated worker), hand the online protocol's plan to an executor backed by the engine inside the
memory and energy window, log every stream as it finishes, score, and write ``result.json`` with the
per-frame arrays; :func:`resume_run` finishes an interrupted run from its event log.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import ValidationError

from adapters.contract import AdapterInfo, Stream
from adapters.registry import resolve
from harness.datasets.catalog import (
    check_sample_streams,
    given_seed_kind,
    make_streams,
    make_warmup_stream,
    seeded,
)
from harness.execution.config import RunConfig, run_id_for
from harness.execution.engine import Engine, clock_info
from harness.execution.event_log import (
    EVENTS_FILE,
    EventLog,
    EventLogError,
    FailureEvent,
    RunLock,
    RunLog,
    SessionEvent,
    StartEvent,
    drop_torn_tail,
    read_events,
)
from harness.execution.executor import (
    EngineExecutor,
    InProcess,
    NothingScoredError,
    ProgressHook,
    RunInterrupted,
    RunStopped,
    StreamRunner,
    defer_signals,
    failed_streams,
    interrupt_on_sigterm,
)
from harness.execution.host_timing import HostTimingRecord, judge_host_timing
from harness.execution.isolation import IsolatedEngine
from harness.execution.sandbox import SandboxRecord
from harness.execution.setup import build_adapter
from harness.instruments.data_hash import hash_streams
from harness.instruments.interference import cpu_frequency_khz
from harness.instruments.manifest import EnvironmentManifest, collect_manifest, fingerprint
from harness.instruments.memory import MemoryProbe, MemoryReport
from harness.instruments.power import EnergyReport, PowerMeter
from harness.instruments.rapl import RaplMeter, RaplReport
from harness.instruments.threads import ThreadRecord
from harness.instruments.threads import apply as apply_threads
from harness.results.files import (
    RESULT_FILE,
    ExecutionRecord,
    FailureRecord,
    ResourceRecord,
    ResultFileError,
    RunResult,
    ScoredRecord,
    SeedRecord,
    WarmupRecord,
    load_recordings,
    load_result,
    package_version,
    write_run,
)
from harness.results.normalisation import normalise
from harness.results.quality import MeasurementQuality, judge_quality
from harness.runs.catalog import index_written
from harness.runs.session_audit import SessionAuditor
from protocols import online
from protocols.base import Plan
from protocols.online_speed import measured_latency
from protocols.recording import StreamRecording
from protocols.session_audit import SessionAuditConfig, SessionAuditResult

__all__ = ["execute_run", "finished_run", "resume_run"]


def execute_run(
    config: RunConfig, progress: ProgressHook | None = None
) -> tuple[RunResult, list[StreamRecording], Path]:
    """Run the online protocol end to end and write ``<output_dir>/<run_id>/``.

    The run directory gets ``events.jsonl`` first (the configuration, then each stream as it finishes),
    ``result.json`` and ``arrays.npz`` last. An interrupted run (Ctrl-C, SIGTERM) or one stopped by
    ``on_error="stop"`` still writes its result, marked ``incomplete``, over the streams that finished;
    :func:`resume_run` finishes it.
    """
    run_id = config.run_id or run_id_for(config.adapter)
    config = config.model_copy(update={"run_id": run_id})
    run_dir = config.output_dir / run_id
    with RunLock(run_dir):  # one writer per run directory, from this check to the result (issue 18)
        if (run_dir / EVENTS_FILE).exists() or (run_dir / RESULT_FILE).exists():
            raise ValueError(
                f"{run_dir}: a run with this id exists already; resume it with --resume {run_dir}"
            )
        return _execute(config, run_dir, previous=None, progress=progress)


def resume_run(
    run_dir: Path, progress: ProgressHook | None = None
) -> tuple[RunResult, list[StreamRecording], Path]:
    """Finish an interrupted run: the same configuration and seeds (read from its event log), the streams
    not finished yet; the result is scored over all of them, as an uninterrupted run would be. The run
    directory is held (:class:`RunLock`) while it runs: a second resume of it fails at once."""
    if not (run_dir / EVENTS_FILE).is_file():
        read_events(run_dir)  # the error naming the missing log, without creating anything
    with RunLock(run_dir):
        done = finished_run(run_dir)
        if done is not None:  # nothing to run: the result stays as written (no new session, no rewrite)
            return done, load_recordings(run_dir), run_dir
        return _resume(run_dir, progress)


def finished_run(run_dir: Path) -> RunResult | None:
    """The result of a run that is finished (every planned stream in its event log, done or failed, and
    a complete ``result.json``), else None: resuming it has nothing to do (issue 18)."""
    try:
        log = read_events(run_dir)
        result = load_result(run_dir) if (run_dir / RESULT_FILE).is_file() else None
    except (EventLogError, ResultFileError):
        return None
    planned = {stream_id for stream_id, _ in log.start.plan}
    if result is None or result.status != "complete" or not planned <= log.done():
        return None
    return result


def _resume(run_dir: Path, progress: ProgressHook | None) -> tuple[RunResult, list[StreamRecording], Path]:
    previous = read_events(run_dir)
    try:
        config = RunConfig.model_validate(previous.start.config)
    except ValidationError as exc:
        where = f"{run_dir / EVENTS_FILE}: line 1"
        raise ValueError(f"{where}: the recorded configuration is invalid:\n{exc}") from None
    config = config.model_copy(update={"output_dir": run_dir.parent, "run_id": run_dir.name})
    if previous.torn_tail:  # the last session died mid-write: that stream is simply run again
        drop_torn_tail(run_dir)
    return _execute(config, run_dir, previous=previous, progress=progress)


def _execute(
    config: RunConfig, run_dir: Path, previous: RunLog | None, progress: ProgressHook | None
) -> tuple[RunResult, list[StreamRecording], Path]:
    import torch

    assert config.run_id is not None
    thread_record = apply_threads(config.threads)  # before the model exists (seed 004: 线程绑定)
    torch.manual_seed(config.torch_seed)
    if previous is None:  # the data set's seed, fixed once per run here in the parent (issue 24)
        data, seed_kind = seeded(config.data)
        config = config.model_copy(update={"data": data})
    else:  # the one the run started with, a secret one too: its log holds it
        seed_kind = previous.start.dataset_seed_kind or given_seed_kind(config.data)
    streams = make_streams(config.data)
    warmup = (
        make_warmup_stream(config.data, config.engine.warmup_frames) if config.engine.warmup_frames else None
    )
    run_plan = online.plan(config.protocol, [s.stream_id for s in streams])
    seeds = SeedRecord(
        dataset=getattr(config.data, "seed", None),
        dataset_seed_kind=seed_kind,
        torch=config.torch_seed,
        split=config.protocol.split_seed,
    )
    with _subject(config, streams, warmup) as subject:
        manifest = collect_manifest(
            seeds.model_dump(exclude={"dataset_seed_kind"}),
            hash_streams(streams),
            subject.module,
            adapter_options=config.adapter_options,
        )
        return _session(
            config, run_dir, previous, progress, subject, run_plan, seeds, manifest, thread_record, streams
        )


@dataclasses.dataclass
class _Subject:
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


@contextlib.contextmanager
def _subject(config: RunConfig, streams: Sequence[Stream], warmup: Stream | None) -> Iterator[_Subject]:
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
            yield _Subject(
                runner=isolated,
                info=info,
                module=resolve(config.adapter).__module__,
                mode="sealed" if config.isolation.sealed else "isolated",
                count_flops=lambda: isolated.count_flops(first.stream_id),
                warmup_stream_id=warmup.stream_id if warmup is not None else None,
                worker_peak_rss=lambda: isolated.peak_rss_bytes,
                host_timing=lambda recordings: judge_host_timing(
                    recordings, isolated.floor, isolated.start_times, isolated.idle_cpu_ns
                )
                if isolated.sealed
                else HostTimingRecord(
                    verdict="not-checked", reason="an isolated worker holds the data; not timed per frame"
                ),
                run_variant=isolated.run if isolated.sealed else None,
                sandbox=lambda: isolated.sandbox,
            )
        return
    adapter = build_adapter(config, first)
    engine = Engine(adapter, config.engine)
    yield _Subject(
        runner=InProcess(engine, {s.stream_id: s for s in streams}, warmup),
        info=adapter.info,
        module=type(adapter).__module__,
        mode="in-process",
        count_flops=lambda: engine.count_flops(first),
        warmup_stream_id=warmup.stream_id if warmup is not None else None,
    )


def _session(
    config: RunConfig,
    run_dir: Path,
    previous: RunLog | None,
    progress: ProgressHook | None,
    subject: _Subject,
    run_plan: Plan,
    seeds: SeedRecord,
    manifest: EnvironmentManifest,
    thread_record: ThreadRecord,
    streams: Sequence[Stream],
) -> tuple[RunResult, list[StreamRecording], Path]:
    """One session of a run (the first, or a resume): log, measure, score, write. ``streams``: the data
    set, whose labels score a failed stream as answered wrongly (issue 24 item 5)."""
    assert config.run_id is not None
    created = previous.start.created_at if previous is not None else datetime.now(timezone.utc)
    environment = fingerprint(manifest)
    data_hash = manifest.data_hash.value if manifest.data_hash.value is not None else None
    if previous is not None:  # one run, one environment, one data set: never merge two of them
        for what, before, now in (
            ("environment fingerprint", previous.start.fingerprint, environment),
            ("data hash", previous.start.data_hash, data_hash),
        ):
            if before is not None and before != now:
                raise ValueError(
                    f"{run_dir}: the run started with {what} {before}, this session has {now}; "
                    "its streams would mix two environments or data sets. Start a new run instead"
                )
    second = (
        f"no result written; every finished stream is in {run_dir / EVENTS_FILE}: finish it with "
        f"streambench run --resume {run_dir}"
    )
    with defer_signals(second) as held:  # outside the measured window a signal waits for the result
        with EventLog(run_dir) as log:
            if previous is None:
                plan_items = [(s.stream_id, s.role) for s in run_plan.streams]
                log.append(
                    StartEvent(
                        run_id=config.run_id,
                        created_at=created,
                        config=config.model_dump(mode="json"),
                        plan=plan_items,
                        fingerprint=environment,
                        data_hash=str(data_hash) if data_hash is not None else None,
                        dataset_seed_kind=seeds.dataset_seed_kind,
                    )
                )
            done = previous.recordings if previous is not None else []
            failed = previous.failures if previous is not None else []
            log.append(
                SessionEvent(
                    started_at=datetime.now(timezone.utc),
                    resumed=previous is not None,
                    streams_done=len(done) + len(failed),
                    isolated=subject.mode != "in-process",
                )
            )
            auditor = _auditor(config.protocol.audit, subject, streams, run_plan, done, failed)
            executor = EngineExecutor(
                subject.runner,
                progress,
                log,
                config.on_error,
                done=done,
                failed=failed,
                between=auditor.before if auditor is not None else None,
            )

            gpu_meter = PowerMeter.open(config.power)
            cpu_meter = RaplMeter.open()
            stopped: str | None = None
            try:
                with interrupt_on_sigterm():
                    gpu_meter.measure_idle()  # before warm-up, while the device is idle
                    executor.warm_up()
                    memory, gpu_energy, cpu_energy, frames, stopped = _measured(
                        executor, run_plan, gpu_meter, cpu_meter
                    )
            finally:
                gpu_meter.close()
                cpu_meter.close()
        recordings = executor.ordered(run_plan)
        memory, worker_peak, worker_reason = _adapter_memory(subject, memory)
        flops, flops_reason = subject.count_flops() if stopped is None else (None, f"not counted: {stopped}")
        if not any(r.role == "test" for r in recordings):
            if stopped is not None and stopped.startswith("interrupted"):  # nothing to score yet
                raise RunInterrupted(f"{stopped} before the first test stream finished; {second}")
            raise NothingScoredError(run_dir, executor.failures, stopped)
        wrong = failed_streams(executor.failures, streams)  # scored as answered wrongly, never dropped
        metrics = online.score(recordings, config.protocol, subject.info.classes, wrong)
        quality = _measurement_quality(recordings, subject.info.device)
        host_timing = subject.host_timing(recordings)
        audit = (
            auditor.judge(recordings, {f.stream_id: f.message for f in executor.failures})
            if auditor is not None
            else SessionAuditResult(skipped=f"not audited in session: the adapter ran {subject.mode}")
        )
        per_frame = gpu_energy.energy_per_frame_j(frames)
        sessions = 1 + (len(previous.sessions) if previous is not None else 0)
        result = RunResult(
            run_id=config.run_id,
            created_at=created,
            streambench_version=package_version("streambench") or "unknown",
            status="complete" if stopped is None else "incomplete",
            incomplete_reason=stopped,
            adapter=config.adapter,
            adapter_options=config.adapter_options,
            adapter_info=subject.info,
            dataset=config.data.kind,
            dataset_config=config.data.model_dump(mode="json"),
            protocol_config=config.protocol,
            engine=config.engine,
            execution=ExecutionRecord(
                mode=subject.mode, on_error=config.on_error, sessions=sessions, sandbox=subject.sandbox()
            ),
            seeds=seeds,
            clock=clock_info(subject.info.device),
            threads=thread_record,
            environment=manifest,
            fingerprint=environment,
            resources=ResourceRecord(
                memory=memory,
                gpu_energy=gpu_energy,
                cpu_energy=cpu_energy,
                energy_per_frame_j=per_frame,
                energy_per_frame_reason=None
                if per_frame is not None
                else gpu_energy.reason or "no energy measured",
                power_at_rtf1_w=gpu_energy.mean_power_w if config.engine.pacing == "paced" else None,
                power_at_rtf1_reason=_rtf1_reason(config, gpu_energy),
                frames_measured=frames,
                flops_per_frame=flops,
                flops_reason=flops_reason,
                worker_peak_rss_bytes=worker_peak,
                worker_peak_rss_reason=worker_reason,
            ),
            warmup=WarmupRecord(stream_id=subject.warmup_stream_id, frames=executor.warmup_frames)
            if subject.warmup_stream_id is not None and executor.warmup_frames
            else None,
            streams={role: run_plan.ids(role) for role in ("test", "validation")},
            scored=ScoredRecord(
                planned_streams=len(run_plan.streams),
                scored_streams=len(recordings),
                scored_frames=sum(r.num_frames for r in recordings),
                failed_streams=len(executor.failures),
                failed_frames=sum(f.num_frames for f in wrong if f.role == "test"),
                failure_rule="wrong",
                predictions_beyond_end=sum(r.beyond_end for r in recordings),
            ),
            failures=[FailureRecord(**f.model_dump(exclude={"kind"})) for f in executor.failures],
            metrics=metrics,
            measurement_quality=_with_verdicts(quality, host_timing, audit),
            session_audit=audit,
            host_timing=host_timing,
        )
        if config.baseline is not None:
            result.normalisation = normalise(result, config.baseline)
        path = write_run(run_dir, result, recordings, wrong)
        index_written(run_dir)

    if held and stopped is None:  # honoured now that the result is written (issue 18)
        raise RunInterrupted(
            f"signal {held[0]} while scoring; it waited for the result, which is complete: {path}"
        )
    return result, recordings, path.parent


def _measured(
    executor: EngineExecutor, run_plan: Plan, gpu_meter: PowerMeter, cpu_meter: RaplMeter
) -> tuple[MemoryReport, EnergyReport, RaplReport, int, str | None]:
    """Run the plan inside the memory and energy window; the meters are read only at its edges and on
    their own sampling threads, never inside the timed frame loop. Returns the reports, the frames fed
    in the window, and why the run stopped early (None: it did not)."""
    probe = MemoryProbe()
    before = sum(r.num_frames for r in executor.recordings)
    stopped: str | None = None
    probe.start()
    gpu_meter.start()
    cpu_meter.start()
    try:
        executor.execute(run_plan)
    except KeyboardInterrupt:
        stopped = "interrupted (KeyboardInterrupt)"
    except RunInterrupted as exc:
        stopped = f"interrupted ({exc})"
    except RunStopped as exc:
        stopped = f"stopped at the first adapter failure (--on-error stop): {exc}"
    finally:
        cpu_energy = cpu_meter.stop()
        gpu_energy = gpu_meter.stop()
        memory = probe.stop()
    frames = sum(r.num_frames for r in executor.recordings) - before
    return memory, gpu_energy, cpu_energy, frames, stopped


def _adapter_memory(subject: _Subject, memory: MemoryReport) -> tuple[MemoryReport, int | None, str]:
    """(the harness's memory report, the worker's peak RSS, why it is what it is). Under ``--isolate``
    the adapter's memory is the worker's, which the harness's probe cannot see: the worker reports its
    own peak with every reply (issue 18)."""
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
    how = "getrusage(RUSAGE_SELF).ru_maxrss in the worker: its peak since it started, imports included"
    return harness_only, peak, how + "; the largest over the run's workers, read after each stream"


def _rtf1_reason(config: RunConfig, gpu_energy: EnergyReport) -> str | None:
    if config.engine.pacing != "paced":
        return "needs a paced run (--pacing paced): unpaced frames do not arrive in real time"
    return None if gpu_energy.mean_power_w is not None else gpu_energy.reason or "no power measured"


def _measurement_quality(recordings: Sequence[StreamRecording], device: str) -> MeasurementQuality:
    """The run's measurement-quality verdict (harness/results/quality.py) from its recordings."""
    counts = [r.context_switches.get("involuntary") for r in recordings]
    latency = [measured_latency(r) for r in recordings]
    return judge_quality(
        np.concatenate(latency) if latency else np.zeros(0, dtype=np.int64),
        streams=len(recordings),
        involuntary_switches=None if None in counts else sum(c or 0 for c in counts),
        clock_resolution_ns=clock_info(device).resolution_ns,
        cpu_frequency=cpu_frequency_khz(),
    )


def _with_verdicts(
    quality: MeasurementQuality, host: HostTimingRecord, audit: SessionAuditResult
) -> MeasurementQuality:
    """INVALID when the parent's clock disagrees with the worker's (issue 24): the worker's latency
    figures then measure what the model let its own clock say; and when the session's own audit failed:
    the model answered a copy of a scored stream differently."""
    if audit.passed is False:
        first = next(c for c in audit.checks if not c.passed)
        reason = f"the session's audit failed: {first.name} of {first.first_stream}: {first.detail}"
        quality = quality.model_copy(update={"verdict": "INVALID", "reasons": [*quality.reasons, reason]})
    if host.verdict != "disagree":
        return quality
    excess, threshold = (host.excess_p25_ns or 0) / 1e3, (host.threshold_ns or 0) / 1e3
    reason = (
        f"the parent's clock disagrees with the worker's: lower-quartile excess {excess:.0f} µs per frame "
        f"over the pipe's floor (threshold {threshold:.0f} µs)"
    )
    return quality.model_copy(update={"verdict": "INVALID", "reasons": [*quality.reasons, reason]})


def _auditor(
    config: SessionAuditConfig,
    subject: _Subject,
    streams: Sequence[Stream],
    run_plan: Plan,
    done: Sequence[StreamRecording],
    failed: Sequence[FailureEvent],
) -> SessionAuditor | None:
    """The session's own audit (issue 24 item 6) over the streams this session runs; sealed runs only
    (in process a variant would not look like a scored stream to a model that walks the call stack)."""
    if subject.run_variant is None:
        return None
    finished = {r.stream_id for r in done} | {f.stream_id for f in failed}
    todo = [s.stream_id for s in run_plan.streams if s.stream_id not in finished]
    return SessionAuditor(subject.run_variant, {s.stream_id: s for s in streams}, todo, config)
