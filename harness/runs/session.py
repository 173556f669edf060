"""A session of an online run (DESIGN.md "Layout", floor 3): build the data set and the adapter (here or
in an isolated worker), hand the online protocol's plan to an executor backed by the engine inside the
memory and energy window, log every stream as it finishes, score, and write ``result.json`` with the
per-frame arrays; :func:`resume_run` finishes an interrupted run from its event log.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from streambench.adapters.contract import Stream
from streambench.harness.datasets.catalog import (
    background_class_of,
    given_seed_kind,
    make_streams,
    make_warmup_stream,
)
from streambench.harness.datasets.provenance import source_files
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import clock_info
from streambench.harness.execution.event_log import (
    EVENTS_FILE,
    EventLog,
    EventLogError,
    RunLock,
    RunLog,
    SessionEvent,
    StartEvent,
    drop_torn_tail,
    read_events,
)
from streambench.harness.execution.executor import (
    EngineExecutor,
    NothingScoredError,
    ProgressHook,
    RunInterrupted,
    RunStopped,
    defer_signals,
    failed_streams,
    interrupt_on_sigterm,
)
from streambench.harness.instruments.data_hash import hash_streams
from streambench.harness.instruments.manifest import EnvironmentManifest, collect_manifest, fingerprint
from streambench.harness.instruments.memory import MemoryProbe, MemoryReport
from streambench.harness.instruments.power import EnergyReport, PowerMeter
from streambench.harness.instruments.rapl import RaplMeter, RaplReport
from streambench.harness.instruments.threads import ThreadRecord
from streambench.harness.instruments.threads import apply as apply_threads
from streambench.harness.instruments.threads import settle as settle_threads
from streambench.harness.results.files import (
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
    write_arrays,
)
from streambench.harness.results.normalisation import normalise_measured
from streambench.harness.runs import registry
from streambench.harness.runs.context import RunContext
from streambench.harness.runs.session_subject import (
    Subject,
    adapter_memory,
    measurement_quality,
    open_subject,
    session_auditor,
    with_verdicts,
)
from streambench.protocols import online
from streambench.protocols.base import Plan
from streambench.protocols.recording import StreamRecording
from streambench.protocols.session_audit import SessionAuditResult

__all__ = ["execute_run", "finished_run", "resume_run", "run_session"]


def execute_run(
    config: RunConfig, progress: ProgressHook | None = None
) -> tuple[RunResult, list[StreamRecording], Path]:
    """Run the online protocol end to end (:meth:`RunProtocol.execute
    <streambench.harness.runs.interface.RunProtocol.execute>`, which runs :func:`run_session`) and write
    ``<output_dir>/<run_id>/``; the result, the recordings and the run directory."""
    outcome = registry.get(online.NAME).execute(config, None, progress)
    return outcome.result, outcome.extra, outcome.run_dir


def run_session(run: RunContext[None, RunResult]) -> RunResult:
    """The online protocol's measurement: the run directory gets ``events.jsonl`` first (the
    configuration, then each stream as it finishes), ``result.json`` and ``arrays.npz`` last (written and
    indexed by ``run.save``, inside the window where a signal waits for them). An interrupted run (Ctrl-C,
    SIGTERM) or one stopped by ``on_error="stop"`` still writes its result, marked ``incomplete``, over the
    streams that finished; :func:`resume_run` finishes it. ``run.extra``: the recordings."""
    config = run.run.model_copy(update={"run_id": run.run_id})
    with RunLock(run.run_dir):  # one writer per run directory, from this check to the result
        if (run.run_dir / EVENTS_FILE).exists() or (run.run_dir / RESULT_FILE).exists():
            raise ValueError(
                f"{run.run_dir}: a run with this id exists already; resume it with --resume {run.run_dir}"
            )
        result, run.extra = _execute(run, config, previous=None)
    return result


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
    a complete ``result.json``), else None: resuming it has nothing to do."""
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
    # the seed the run started with, a secret one too: its log holds it
    seed_kind = previous.start.dataset_seed_kind or given_seed_kind(config.data)
    run = RunContext(config, None, run_dir.name, seed_kind, progress, RunResult, RESULT_FILE)
    result, recordings = _execute(run, config, previous=previous)
    return result, recordings, run_dir


def _execute(
    run: RunContext[None, RunResult], config: RunConfig, previous: RunLog | None
) -> tuple[RunResult, list[StreamRecording]]:
    """A session of the run (its first, or a resume): ``config``, the run's with its id and its data
    set's seed fixed (by the protocol's template, or as the log recorded it)."""
    import torch

    thread_record = apply_threads(config.threads)  # before the model exists (seed 004: 线程绑定)
    torch.manual_seed(config.torch_seed)
    streams = make_streams(config.data)
    warmup = (
        make_warmup_stream(config.data, config.engine.warmup_frames) if config.engine.warmup_frames else None
    )
    run_plan = online.plan(config.protocol, [s.stream_id for s in streams])
    seeds = SeedRecord(
        dataset=getattr(config.data, "seed", None),
        dataset_seed_kind=run.seed_kind,
        torch=config.torch_seed,
        split=config.protocol.split_seed,
    )
    with open_subject(config, streams, warmup) as subject:
        seen = subject.process()  # the adapter's process once built: its threads and modules
        threads = seen.threads if seen is not None else None
        thread_record = settle_threads(thread_record, config.threads, threads, subject.mode == "sealed")
        manifest = collect_manifest(
            seeds.model_dump(exclude={"dataset_seed_kind"}),
            hash_streams(streams),
            subject.module,
            adapter_options=config.adapter_options,
            adapter_modules=(seen.modules, seen.new_modules) if seen is not None else None,
            adapter_threads=threads,
            data_sources=source_files(streams),
            requested_threads=config.threads,
        )
        return _session(run, config, previous, subject, run_plan, seeds, manifest, thread_record, streams)


def _session(
    run: RunContext[None, RunResult],
    config: RunConfig,
    previous: RunLog | None,
    subject: Subject,
    run_plan: Plan,
    seeds: SeedRecord,
    manifest: EnvironmentManifest,
    thread_record: ThreadRecord,
    streams: Sequence[Stream],
) -> tuple[RunResult, list[StreamRecording]]:
    """One session of a run (the first, or a resume): log, measure, score, write. ``streams``: the data
    set, whose labels score a failed stream as answered wrongly."""
    assert config.run_id is not None
    run_dir, progress = run.run_dir, run.progress
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
            auditor = session_auditor(config.protocol.audit, subject, streams, run_plan, done, failed)
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
                with interrupt_on_sigterm(held):  # a signal held since the log began ends the run now
                    gpu_meter.measure_idle()  # before warm-up, while the device is idle
                    executor.warm_up()
                    memory, gpu_energy, cpu_energy, frames, stopped = _measured(
                        executor, run_plan, gpu_meter, cpu_meter
                    )
            except (KeyboardInterrupt, RunInterrupted) as exc:  # outside _measured's window
                raise RunInterrupted(f"interrupted ({exc or type(exc).__name__}); {second}") from None
            finally:
                gpu_meter.close()
                cpu_meter.close()
        recordings = executor.ordered(run_plan)
        memory, worker_peak, worker_reason = adapter_memory(subject, memory)
        flops, flops_reason = subject.count_flops() if stopped is None else (None, f"not counted: {stopped}")
        if not any(r.role == "test" for r in recordings):
            if stopped is not None and stopped.startswith("interrupted"):  # nothing to score yet
                raise RunInterrupted(f"{stopped} before the first test stream finished; {second}")
            raise NothingScoredError(run_dir, executor.failures, stopped)
        wrong = failed_streams(executor.failures, streams)  # scored as answered wrongly, never dropped
        background = background_class_of(config.data)  # F1 counts every class but the data's background
        metrics = online.score(recordings, config.protocol, subject.info.classes, wrong, background)
        quality = measurement_quality(recordings, subject.info.device)
        host_timing = subject.host_timing(recordings)
        audit = (
            auditor.judge(recordings, {f.stream_id: (f.frame, f.message) for f in executor.failures})
            if auditor is not None
            else SessionAuditResult(skipped=f"not audited in session: the adapter ran {subject.mode}")
        )
        per_frame = gpu_energy.energy_per_frame_j(frames)
        sessions = 1 + (len(previous.sessions) if previous is not None else 0)
        leftovers = subject.end_processes()  # the model is done: what it started ends now, named
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
                mode=subject.mode,
                on_error=config.on_error,
                sessions=sessions,
                sandbox=subject.sandbox(),
                leftover_processes=leftovers,
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
            measurement_quality=with_verdicts(quality, host_timing, audit),
            session_audit=audit,
            host_timing=host_timing,
        )
        if config.baseline is not None:  # read after measuring: a failure costs the figures, not the run
            result.normalisation = normalise_measured(result, config.baseline)
        write = lambda directory: write_arrays(directory, recordings, wrong)  # noqa: E731
        path = run.save(result, files=write, replace=True) / RESULT_FILE  # resumed: replaces its own

    if held and stopped is None:  # honoured now that the result is written
        raise RunInterrupted(
            f"signal {held[0]} while scoring; it waited for the result, which is complete: {path}"
        )
    return result, recordings


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


def _rtf1_reason(config: RunConfig, gpu_energy: EnergyReport) -> str | None:
    if config.engine.pacing != "paced":
        return "needs a paced run (--pacing paced): unpaced frames do not arrive in real time"
    return None if gpu_energy.mean_power_w is not None else gpu_energy.reason or "no power measured"
