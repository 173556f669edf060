"""Executors of a sweep behind one interface: ``local`` (default) and ``ray`` (extra ``streambench[ray]``).

**The worker measures, the driver alone writes the store.** :func:`~streambench.harness.sweep.measure.measure`
runs one :class:`~streambench.harness.sweep.RunSpec` through its protocol (from the registry) into a private
temporary directory, collects the environment manifest of the machine it ran on, and returns the run's files
as bytes (:class:`~streambench.harness.sweep.measure.Measured`). :func:`commit`, on the
driver, stages them with ``sweep.json`` (the spec, every attempt, the manifest and its fingerprint),
renames the staged directory into ``<results>/<run_id>`` (one atomic rename) and indexes it
(:func:`streambench.harness.runs.catalog.index_run`). A run that fails every attempt gets a ``sweep.json``
with ``status = "failed"`` and each attempt's error: recorded, never silently dropped (and run again when the
sweep is resumed).

* :class:`LocalExecutor`: one run at a time, so never two timed runs at once on one machine; in this
  process, or (``isolate=True``) each attempt in a fresh process of its own
  (:mod:`streambench.harness.sweep.attempt`), whose death (a crash, ``os._exit``, the OOM killer) costs that
  attempt only, and whose whole process tree a signal to the sweep ends at once.
* :class:`RayExecutor`: each run is a Ray task that requests its :class:`~streambench.harness.sweep.Resources`
  (``num_cpus`` whole cores, ``num_gpus`` whole GPUs, ``memory``), so Ray's scheduler places at most one
  timed run per GPU and never more runs on a node than it has cores; the task pins itself to that many
  free cores (:func:`pinned_cores`). Retries are the driver's (Ray's own are off), so each attempt and
  its error are recorded. ``address=None`` starts a local Ray instance.

A signal (SIGINT, SIGTERM) stops the sweep (:mod:`streambench.harness.sweep.interrupts`): the run in progress
is discarded with its directory; a run being committed is committed first.
"""

from __future__ import annotations

import abc
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from streambench.harness.io.atomic import atomic_write
from streambench.harness.runs.catalog import index_run
from streambench.harness.sweep.attempt import AttemptError, run_attempt
from streambench.harness.sweep.interrupts import held
from streambench.harness.sweep.measure import Measured, error_text, measure, pinned_cores
from streambench.harness.sweep.spec import RunSpec
from streambench.harness.sweep.state import SweepProgress

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
        with held():  # a signal now waits until the run is in the store (or recorded)
            if measured is not None:
                run_dir = commit(spec, measured, attempts, results_dir, self.name)
            else:
                run_dir = record_failure(spec, attempts, results_dir, self.name)
            progress.finished(spec.run_id, ok=measured is not None)
        return SweepRecord.model_validate_json((run_dir / SWEEP_FILE).read_text())


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
                    measured = run_attempt(spec) if self.isolate else measure(spec)
                except AttemptError as exc:  # as the attempt's own process recorded it
                    error = str(exc)
                except Exception as exc:  # any failure of the run is this attempt's, recorded below
                    error = error_text(exc)
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
