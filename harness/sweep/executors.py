"""Executors of a sweep behind one interface: ``local`` (default) and ``ray`` (extra ``streambench[ray]``).

**The worker measures, the driver alone writes the store.** :func:`measure` runs one
:class:`~harness.sweep.RunSpec` through its protocol (from the registry) into a private temporary directory,
collects the environment manifest of the
machine it ran on, and returns the run's files as bytes (:class:`Measured`). :func:`commit`, on the
driver, stages them with ``sweep.json`` (the spec, every attempt, the manifest and its fingerprint),
renames the staged directory into ``<results>/<run_id>`` (one atomic rename) and indexes it
(:func:`harness.runs.catalog.index_run`). A run that fails every attempt gets a ``sweep.json`` with
``status = "failed"`` and each attempt's error: recorded, never silently dropped (and run again when the
sweep is resumed).

* :class:`LocalExecutor`: one run at a time, so never two timed runs at once on one machine; in this
  process, or (``isolate=True``) each attempt in a fresh spawned worker process, whose death (a crash,
  ``os._exit``, the OOM killer) costs that attempt only.
* :class:`RayExecutor`: each run is a Ray task that requests its :class:`~harness.sweep.Resources`
  (``num_cpus`` whole cores, ``num_gpus`` whole GPUs, ``memory``), so Ray's scheduler places at most one
  timed run per GPU and never more runs on a node than it has cores; the task pins itself to that many
  free cores (:func:`pinned_cores`). Retries are the driver's (Ray's own are off), so each attempt and
  its error are recorded. ``address=None`` starts a local Ray instance.
"""

from __future__ import annotations

import abc
import contextlib
import fcntl
import os
import shutil
import socket
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime, timezone
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from harness.instruments.manifest import collect_manifest, fingerprint
from harness.io.atomic import atomic_write
from harness.runs import registry
from harness.runs.catalog import index_run
from harness.runs.interface import RunProtocol
from harness.sweep.spec import RunSpec
from harness.sweep.state import SweepProgress

__all__ = [
    "SWEEP_FILE",
    "Attempt",
    "Executor",
    "LocalExecutor",
    "Measured",
    "SweepRecord",
    "commit",
    "measure",
    "pinned_cores",
    "record_failure",
]

SWEEP_FILE = "sweep.json"
STAGING_DIR = ".sweep-staging"
CORE_LOCKS = Path(tempfile.gettempdir()) / "streambench-cores"


class Measured(BaseModel):
    """What a worker sends back: the run directory's files and where and how it was measured."""

    run_id: str
    files: dict[str, bytes]
    environment: dict[str, Any] = Field(description="harness.instruments.manifest.EnvironmentManifest")
    fingerprint: str
    worker: str = Field(description="host:pid of the worker process")
    cores: list[int] | None = Field(description="the cores the run was pinned to (None: not pinned)")
    wall_s: float = Field(description="wall time of the protocol run inside the worker")


class Attempt(BaseModel):
    """One attempt of a run: its error (``None``: it succeeded), the worker that measured it."""

    attempt: int
    error: str | None = None
    worker: str | None = None
    wall_s: float | None = Field(None, description="driver-side wall time from submission to outcome")


class SweepRecord(BaseModel):
    """``<run dir>/sweep.json``: how the sweep produced (or failed to produce) this run."""

    schema_version: int = 1
    run_id: str
    status: Literal["done", "failed"]
    executor: str
    spec: RunSpec
    attempts: list[Attempt]
    fingerprint: str | None = None
    environment: dict[str, Any] | None = None
    cores: list[int] | None = None
    measured_wall_s: float | None = None
    finished_at: datetime


@contextlib.contextmanager
def pinned_cores(count: int, among: Sequence[int] | None = None) -> Iterator[list[int] | None]:
    """Pin the calling thread (and the threads it starts) to ``count`` whole cores, taken ``among`` the
    given ones (default: its current affinity) that no other sweep worker on this machine holds (one
    ``flock`` per core under :data:`CORE_LOCKS`), for the duration; restore the affinity after. The
    scheduler never places more cores' worth of runs on a machine than it has, so free cores exist; if
    they do not within 30 s, the run goes on unpinned (``None``) rather than wait forever. Threads that
    existed before (a reused worker's OpenMP pool) keep their own affinity."""
    allowed = sorted(os.sched_getaffinity(0))
    candidates = sorted(among) if among is not None else allowed
    CORE_LOCKS.mkdir(parents=True, exist_ok=True)
    held: list[tuple[int, int]] = []
    deadline = time.monotonic() + 30.0
    try:
        while len(held) < count and time.monotonic() < deadline:
            for core in candidates:
                if len(held) == count or any(c == core for c, _ in held):
                    continue
                fd = os.open(CORE_LOCKS / f"core{core}.lock", os.O_CREAT | os.O_RDWR, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    held.append((core, fd))
                except OSError:
                    os.close(fd)
            if len(held) < count:
                time.sleep(0.05)
        cores = sorted(c for c, _ in held) if len(held) == count else None
        if cores is not None:
            os.sched_setaffinity(0, cores)
        yield cores
    finally:
        os.sched_setaffinity(0, allowed)
        for _, fd in held:
            os.close(fd)  # releases the lock


def measure(spec: RunSpec, pin: bool = False) -> Measured:
    """Run one spec in this process into a temporary directory; return its files (the worker's side)."""
    import torch


    with tempfile.TemporaryDirectory(prefix="streambench-sweep-") as tmp, contextlib.ExitStack() as stack:
        cores = stack.enter_context(pinned_cores(spec.resources.cpus)) if pin else None
        threads_before = torch.get_num_threads()
        if cores is not None and spec.run.threads.intra_op is None:
            torch.set_num_threads(len(cores))  # the run's threads on its own cores
        stack.callback(torch.set_num_threads, threads_before)
        config = spec.run.model_copy(update={"output_dir": Path(tmp), "run_id": spec.run_id})
        started = time.perf_counter()
        protocol = registry.get(spec.protocol)
        settings = None
        if spec.protocol_config is not None and protocol.config_model is not None:
            settings = protocol.config_model.model_validate(spec.protocol_config)
        outcome = protocol.execute(config, settings, None)
        reason = protocol.incomplete_reason(outcome.result)
        if reason is not None:  # not a finished run of the sweep: never committed as done
            if reason.startswith("interrupted"):
                raise KeyboardInterrupt(reason)  # Ctrl-C / SIGTERM stops the sweep, not just this run
            raise RuntimeError(f"run {spec.run_id} did not complete: {reason}")
        wall = time.perf_counter() - started
        run_dir = Path(tmp) / spec.run_id
        files = {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file()}
        data_seed = getattr(spec.run.data, "seed", None)
        seeds = {"torch": spec.run.torch_seed, "sweep": spec.seed}
        if isinstance(data_seed, int):
            seeds["dataset"] = data_seed
        manifest = collect_manifest(seeds)
    return Measured(
        run_id=spec.run_id,
        files={name: data for name, data in files.items() if not name.startswith(".")},
        environment=manifest.model_dump(mode="json"),
        fingerprint=fingerprint(manifest),
        worker=f"{socket.gethostname()}:{os.getpid()}",
        cores=cores,
        wall_s=wall,
    )


def _stage(results_dir: Path, run_id: str, files: dict[str, bytes]) -> Path:
    """Write ``files`` into a fresh staging directory (outside the store's listing) and rename it into
    ``<results>/<run_id>``, replacing an earlier failure record; the rename is atomic."""
    staging_root = results_dir / STAGING_DIR
    staging_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=staging_root, prefix=f"{run_id}."))
    try:
        for name, data in files.items():
            atomic_write(staging / name, lambda handle, data=data: handle.write(data))  # type: ignore[misc]
        staging.chmod(0o755)
        run_dir = results_dir / run_id
        if run_dir.exists():
            shutil.rmtree(run_dir)
        os.replace(staging, run_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return run_dir


def commit(
    spec: RunSpec, measured: Measured, attempts: Sequence[Attempt], results_dir: Path, executor: str
) -> Path:
    """The driver's side: write the measured run (and its ``sweep.json``) into the store and index it."""
    record = SweepRecord(
        run_id=spec.run_id,
        status="done",
        executor=executor,
        spec=spec,
        attempts=list(attempts),
        fingerprint=measured.fingerprint,
        environment=measured.environment,
        cores=measured.cores,
        measured_wall_s=measured.wall_s,
        finished_at=datetime.now(timezone.utc),
    )
    files = dict(measured.files)
    files[SWEEP_FILE] = record.model_dump_json(indent=2).encode()
    run_dir = _stage(results_dir, spec.run_id, files)
    index_run(run_dir)
    return run_dir


def record_failure(spec: RunSpec, attempts: Sequence[Attempt], results_dir: Path, executor: str) -> Path:
    """A run that failed every attempt: ``<results>/<run_id>/sweep.json`` with each attempt's error (no
    result file, so the store does not list it and a resumed sweep runs it again)."""
    record = SweepRecord(
        run_id=spec.run_id,
        status="failed",
        executor=executor,
        spec=spec,
        attempts=list(attempts),
        finished_at=datetime.now(timezone.utc),
    )
    return _stage(results_dir, spec.run_id, {SWEEP_FILE: record.model_dump_json(indent=2).encode()})


def _error(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


class Executor(abc.ABC):
    """Runs specs, retrying each up to ``retries`` more times, and commits or records every one."""

    name: str

    def __init__(self, retries: int = 2) -> None:
        self.retries = retries

    @abc.abstractmethod
    def run(self, specs: Sequence[RunSpec], results_dir: Path, progress: SweepProgress) -> list[SweepRecord]:
        """Every spec ends committed (``done``) or recorded (``failed``); returns their records."""

    def _finish(
        self,
        spec: RunSpec,
        measured: Measured | None,
        attempts: list[Attempt],
        results_dir: Path,
        progress: SweepProgress,
    ) -> SweepRecord:
        if measured is not None:
            run_dir = commit(spec, measured, attempts, results_dir, self.name)
        else:
            run_dir = record_failure(spec, attempts, results_dir, self.name)
        progress.finished(spec.run_id, ok=measured is not None)
        return SweepRecord.model_validate_json((run_dir / SWEEP_FILE).read_text())


def _isolated_measure(spec: RunSpec) -> Measured:
    """One attempt in a fresh spawned process (nothing inherited from the driver but ``sys.path`` and
    the protocols registered here, which it registers again)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_measure_registered, spec, registry.added()).result()


def _measure_registered(spec: RunSpec, added: Sequence[RunProtocol]) -> Measured:
    """:func:`measure` in a spawned process, after registering the driver's added protocols."""
    for protocol in added:
        registry.register(protocol, replace=True)
    return measure(spec, True)


class LocalExecutor(Executor):
    """One run at a time on this machine: in this process, or in an isolated worker per attempt."""

    def __init__(self, retries: int = 2, isolate: bool = False) -> None:
        super().__init__(retries)
        self.isolate = isolate
        self.name = "local-isolated" if isolate else "local"

    def run(self, specs: Sequence[RunSpec], results_dir: Path, progress: SweepProgress) -> list[SweepRecord]:
        """Each spec in order, each attempt to its end before the next begins."""
        records = []
        for spec in specs:
            attempts: list[Attempt] = []
            measured: Measured | None = None
            for number in range(1, self.retries + 2):
                progress.started(spec.run_id, number)
                started = time.perf_counter()
                try:
                    measured = _isolated_measure(spec) if self.isolate else measure(spec)
                except BrokenProcessPool:
                    error = "worker process lost (it exited or was killed mid-run)"
                except Exception as exc:  # any failure of the run is this attempt's, recorded below
                    error = _error(exc)
                else:
                    attempts.append(Attempt(attempt=number, worker=measured.worker, wall_s=_since(started)))
                    break
                attempts.append(Attempt(attempt=number, error=error, wall_s=_since(started)))
                if number <= self.retries:
                    progress.retrying(spec.run_id, error)
            records.append(self._finish(spec, measured, attempts, results_dir, progress))
        return records


def _since(started: float) -> float:
    return time.perf_counter() - started
