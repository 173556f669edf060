"""One attempt of a sweep's run in a process of its own (the local executor's default, ``isolate=True``):
a crash, ``os._exit`` or the OOM killer costs that attempt only, and a signal to the sweep
ends the attempt's whole process tree at once.

The driver makes the attempt's directory (``streambench-sweep-*`` in the temporary folder, mode 0700)
and owns it: ``job.json`` (:class:`AttemptJob`) in, the run's files and ``outcome.json``
(:class:`AttemptOutcome`) out, and the attempt's ``TMPDIR`` (so what the run puts in the temporary
folder — a sealed worker's sandbox directory — goes with it). The driver removes the directory however
the attempt ends: done, failed, crashed or interrupted.

The attempt is a plain child (``python -c``; no ``multiprocessing``, so no resource tracker is started
that could outlive a killed sweep) with the driver's import path, in a session of its own: a Ctrl-C
at the terminal reaches the driver only, which ends the attempt's process group and every descendant
(SIGKILL; nothing the attempt holds is kept) before it reports. The attempt dies with the driver
(``PR_SET_PDEATHSIG``), SIGKILL of the driver included, and its own workers die with it.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
from pydantic import BaseModel, ConfigDict, Field

from streambench.harness.execution.process_tree import end_processes
from streambench.harness.runs import registry
from streambench.harness.sweep.interrupts import SweepInterrupted, held
from streambench.harness.sweep.measure import (
    CORE_LOCKS,
    Measured,
    attempt_dir,
    error_text,
    measure,
    run_files,
)
from streambench.harness.sweep.spec import RunSpec

__all__ = ["AttemptError", "AttemptJob", "AttemptOutcome", "WorkerLost", "main", "run_attempt"]

JOB_FILE = "job.json"
OUTCOME_FILE = "outcome.json"
RUN_DIR = "run"
TMP_DIR = "tmp"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_ORPHANED = 75  # the attempt found the driver gone before it could bind itself to it


class AttemptJob(BaseModel):
    """What the attempt's process is told: the run, the protocols the driver registered (``module:Class``,
    built again there with no arguments), where the cores' locks are, and the driver's pid."""

    model_config = ConfigDict(extra="forbid")

    spec: RunSpec
    protocols: list[str] = Field(default_factory=list)
    core_locks: str = Field(description="the driver's lock directory of pinned cores (not the attempt's)")
    driver_pid: int


class AttemptOutcome(BaseModel):
    """What the attempt's process reports: how it measured the run (its files stay in the directory), or
    the error that failed it."""

    model_config = ConfigDict(extra="forbid")

    measured: dict[str, object] | None = Field(None, description="Measured, without its files")
    error: str | None = None


class AttemptError(RuntimeError):
    """The attempt failed: its message is the error as the attempt's process recorded it."""


class WorkerLost(AttemptError):
    """The attempt's process ended without an outcome (it exited, crashed or was killed mid-run)."""


def _protocol_refs() -> list[str]:
    return [f"{type(p).__module__}:{type(p).__qualname__}" for p in registry.added()]


def run_attempt(spec: RunSpec) -> Measured:
    """Measure ``spec`` in a fresh process; its error is :class:`AttemptError` (:class:`WorkerLost`: the
    process died). A :class:`~streambench.harness.sweep.interrupts.SweepInterrupted` arriving meanwhile ends
    the process tree first; the attempt's directory is removed in every case."""
    workdir: Path | None = None
    popen: subprocess.Popen[bytes] | None = None
    interrupted = False
    try:
        with held():  # the directory and the process both exist, or neither (then the signal is raised)
            workdir = attempt_dir()
            (workdir / TMP_DIR).mkdir()
            job = AttemptJob(
                spec=spec, protocols=_protocol_refs(), core_locks=str(CORE_LOCKS), driver_pid=os.getpid()
            )
            (workdir / JOB_FILE).write_text(job.model_dump_json())
            popen = _start(workdir)
        popen.wait()
        return _outcome(workdir, spec.run_id, popen.returncode)
    except SweepInterrupted:
        interrupted = True
        raise
    finally:
        with held(reraise=not interrupted):  # no signal cuts the clean-up short; a first one follows it
            if popen is not None:
                _end_tree(popen)
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)


def _start(workdir: Path) -> subprocess.Popen[bytes]:
    paths = [os.path.abspath(p or os.curdir) for p in sys.path]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(p for p in paths if os.path.isdir(p)))
    env["TMPDIR"] = str(workdir / TMP_DIR)
    command = [
        sys.executable,
        "-c",
        "from streambench.harness.sweep.attempt import main; main()",
        str(workdir),
    ]
    # stdout is the sweep's stderr: what a model prints is not the command's output (``--json``)
    return subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=2, start_new_session=True)


def _end_tree(popen: subprocess.Popen[bytes]) -> None:
    """End the attempt's process group and every descendant (those in groups of their own too), at once."""
    try:
        tree = [psutil.Process(popen.pid), *psutil.Process(popen.pid).children(recursive=True)]
    except psutil.Error:
        tree = []
    end_processes(tree, group=popen.pid)
    with contextlib.suppress(subprocess.TimeoutExpired):
        popen.wait(5.0)


def _outcome(workdir: Path, run_id: str, returncode: int) -> Measured:
    path = workdir / OUTCOME_FILE
    if not path.is_file():
        how = (
            f"killed by {signal.Signals(-returncode).name}" if returncode < 0 else f"exit status {returncode}"
        )
        raise WorkerLost(f"worker process lost (it exited or was killed mid-run: {how})")
    outcome = AttemptOutcome.model_validate_json(path.read_text())
    if outcome.error is not None or outcome.measured is None:
        raise AttemptError(outcome.error or "the attempt reported neither a result nor an error")
    return Measured.model_validate({**outcome.measured, "files": run_files(workdir / RUN_DIR / run_id)})


def _bind_to_driver(driver_pid: int) -> None:
    """Die with the driver (Linux: the kernel's SIGKILL when it dies); a driver already gone: exit now.
    SIGINT is ignored: the driver reports an interruption and ends this process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != driver_pid:
        os._exit(_ORPHANED)


def main() -> None:
    """The attempt's process: ``python -c '...main()' WORKDIR`` (started by :func:`run_attempt`)."""
    workdir = Path(sys.argv[1])
    job = AttemptJob.model_validate_json((workdir / JOB_FILE).read_text())
    _bind_to_driver(job.driver_pid)
    outcome: AttemptOutcome
    try:
        for ref in job.protocols:  # the driver's added protocols (a test's, a plug-in's)
            module, _, name = ref.partition(":")
            target: Any = importlib.import_module(module)
            for part in name.split("."):
                target = getattr(target, part)
            registry.register(target(), replace=True)
        measured = measure(job.spec, pin=True, into=workdir / RUN_DIR, core_locks=Path(job.core_locks))
        outcome = AttemptOutcome(measured=measured.model_dump(mode="json", exclude={"files"}))
    except BaseException as exc:  # the attempt's failure (a signal to it alone, too): recorded, retried
        outcome = AttemptOutcome(error=error_text(exc))
    (workdir / OUTCOME_FILE).write_text(outcome.model_dump_json())
