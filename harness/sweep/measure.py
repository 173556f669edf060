"""The worker's side of a sweep run: :func:`measure` runs one :class:`~streambench.harness.sweep.RunSpec`
through its protocol (from the registry) into a directory of its own, collects the environment manifest of the
machine it ran on, and returns the run's files as bytes (:class:`Measured`), for the driver to commit
(harness/sweep/executors.py). :func:`pinned_cores` gives a run whole cores no other sweep worker on the
machine holds.

An interrupted run (Ctrl-C, SIGTERM) is not a failed attempt: it stops the sweep, as
:class:`~streambench.harness.sweep.interrupts.SweepInterrupted` naming the signal; its
directory, a temporary one, is gone with it, so nothing of it is offered for ``--resume``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
from pydantic import BaseModel, Field

from streambench.harness.execution.executor import RunInterrupted
from streambench.harness.instruments.manifest import collect_manifest, fingerprint
from streambench.harness.runs import registry
from streambench.harness.sweep.interrupts import SweepInterrupted, interrupted_by
from streambench.harness.sweep.spec import RunSpec

__all__ = [
    "CORE_LOCKS",
    "Measured",
    "attempt_dir",
    "clear_stale",
    "error_text",
    "measure",
    "pinned_cores",
    "run_files",
]

CORE_LOCKS = Path(tempfile.gettempdir()) / "streambench-cores"
ATTEMPT_PREFIX = "streambench-sweep-"
OWNER_FILE = ".owner.json"


class _Owner(BaseModel):
    """Who made an attempt's directory: the sweep's process, on this host."""

    pid: int
    host: str


def attempt_dir() -> Path:
    """A fresh ``streambench-sweep-*`` directory (mode 0700) in the temporary folder, for one attempt;
    it names its owner, this process, so that a later sweep removes it should this one be killed before
    it could (:func:`clear_stale`). The caller removes it."""
    clear_stale()
    path = Path(tempfile.mkdtemp(prefix=ATTEMPT_PREFIX))
    (path / OWNER_FILE).write_text(_Owner(pid=os.getpid(), host=socket.gethostname()).model_dump_json())
    return path


def clear_stale(root: Path | None = None) -> list[Path]:
    """Remove the attempt directories under ``root`` (the temporary folder) that a sweep of this user on
    this host left when it was killed (SIGKILL: nothing of it could clean up): their owner is gone.
    Returns them."""
    removed: list[Path] = []
    for path in (root or Path(tempfile.gettempdir())).glob(f"{ATTEMPT_PREFIX}*"):
        try:
            if path.stat().st_uid != os.getuid():
                continue
            owner = _Owner.model_validate_json((path / OWNER_FILE).read_text())
        except (OSError, ValueError):  # not an attempt's directory (or not yet marked): not ours to remove
            continue
        if owner.host == socket.gethostname() and not psutil.pid_exists(owner.pid):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class Measured(BaseModel):
    """What a worker sends back: the run directory's files and where and how it was measured."""

    run_id: str
    files: dict[str, bytes]
    environment: dict[str, Any] = Field(
        description="streambench.harness.instruments.manifest.EnvironmentManifest"
    )
    fingerprint: str
    worker: str = Field(description="host:pid of the worker process")
    cores: list[int] | None = Field(description="the cores the run was pinned to (None: not pinned)")
    wall_s: float = Field(description="wall time of the protocol run inside the worker")


@contextlib.contextmanager
def pinned_cores(
    count: int, among: Sequence[int] | None = None, locks: Path | None = None
) -> Iterator[list[int] | None]:
    """Pin the calling thread (and the threads it starts) to ``count`` whole cores, taken ``among`` the
    given ones (default: its current affinity) that no other sweep worker on this machine holds (one
    ``flock`` per core under ``locks``, default :data:`CORE_LOCKS`), for the duration; restore the
    affinity after. The scheduler never places more cores' worth of runs on a machine than it has, so
    free cores exist; if they do not within 30 s, the run goes on unpinned (``None``) rather than wait
    forever. Threads that existed before (a reused worker's OpenMP pool) keep their own affinity."""
    locks = locks if locks is not None else CORE_LOCKS
    allowed = sorted(os.sched_getaffinity(0))
    candidates = sorted(among) if among is not None else allowed
    locks.mkdir(parents=True, exist_ok=True)
    held: list[tuple[int, int]] = []
    deadline = time.monotonic() + 30.0
    try:
        while len(held) < count and time.monotonic() < deadline:
            for core in candidates:
                if len(held) == count or any(c == core for c, _ in held):
                    continue
                fd = os.open(locks / f"core{core}.lock", os.O_CREAT | os.O_RDWR, 0o666)
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


def run_files(run_dir: Path) -> dict[str, bytes]:
    """The files of a run directory a sweep commits (its hidden ones, such as the lock, are not)."""
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file() and p.name[0] != "."}


def measure(
    spec: RunSpec, pin: bool = False, into: Path | None = None, core_locks: Path | None = None
) -> Measured:
    """Run one spec in this process into ``into`` (default: a temporary directory, removed after); return
    its files (the worker's side). ``pin``: on whole cores of its own (locks under ``core_locks``)."""
    import torch

    with contextlib.ExitStack() as stack:
        if into is None:
            into = attempt_dir()
            stack.callback(shutil.rmtree, into, ignore_errors=True)
        cores = stack.enter_context(pinned_cores(spec.resources.cpus, locks=core_locks)) if pin else None
        threads_before = torch.get_num_threads()
        if cores is not None and spec.run.threads.intra_op is None:
            torch.set_num_threads(len(cores))  # the run's threads on its own cores
        stack.callback(torch.set_num_threads, threads_before)
        config = spec.run.model_copy(update={"output_dir": into, "run_id": spec.run_id})
        started = time.perf_counter()
        protocol = registry.get(spec.protocol)
        settings = None
        if spec.protocol_config is not None and protocol.config_model is not None:
            settings = protocol.config_model.model_validate(spec.protocol_config)
        try:
            outcome = protocol.execute(config, settings, None)
        except (KeyboardInterrupt, RunInterrupted) as exc:  # Ctrl-C / SIGTERM stops the sweep
            raise SweepInterrupted(interrupted_by(exc)) from None
        reason = protocol.incomplete_reason(outcome.result)
        if reason is not None:  # not a finished run of the sweep: never committed as done
            if reason.startswith("interrupted"):
                raise SweepInterrupted(interrupted_by(reason))
            raise RuntimeError(f"run {spec.run_id} did not complete: {reason}")
        wall = time.perf_counter() - started
        files = run_files(into / spec.run_id)
        data_seed = getattr(spec.run.data, "seed", None)
        seeds = {"torch": spec.run.torch_seed, "sweep": spec.seed}
        if isinstance(data_seed, int):
            seeds["dataset"] = data_seed
        manifest = collect_manifest(seeds, requested_threads=spec.run.threads)
    return Measured(
        run_id=spec.run_id,
        files=files,
        environment=manifest.model_dump(mode="json"),
        fingerprint=fingerprint(manifest),
        worker=f"{socket.gethostname()}:{os.getpid()}",
        cores=cores,
        wall_s=wall,
    )


def error_text(exc: BaseException) -> str:
    """``Type: message (at file:line)``: an attempt's error as the sweep records it."""
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {last[0].filename}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"
