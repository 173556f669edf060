"""Worker processes as plain children with a command line of their own.

Two kinds:

- a *sealed* worker (:func:`start_sealed_worker`) runs this harness as ``python -I -S -c BOOTSTRAP``: no
  start-up hook runs, the path is built step by step (harness/execution/worker_paths.py), the sandbox is
  entered before anything of the adapter's is imported, and the adapter's code is found in its side's
  own directories first (``WorkerCommand.pythonpath``: a checkout of the base commit for ``ab``), else
  from the working directory, as ``python -m`` looks;
- an *isolated* worker of another checkout or interpreter (:func:`start_worker`, ``streambench ab``
  ``--base-path`` at a checkout of streambench itself, ``--base-python``)::

    PYTHON -c BOOTSTRAP CONN_FD SLOT_FD MEMORY_LIMIT CPUS HARNESS   (env PYTHONPATH = the side's paths)

  Its bootstrap (below; small, and using only what ``harness/execution/isolation_worker.py`` has offered
  since ``--isolate`` exists, so an older checkout can be a side) drops the current directory that ``-c``
  puts first on ``sys.path`` (so the working directory's checkout does not shadow the side's), pins
  itself to ``CPUS`` when given (duet mode), imports ``HARNESS`` (:func:`harness_package`: ``harness`` in
  a checkout from before streambench 0.2), wraps its inherited socket in a ``multiprocessing``
  :class:`Connection`, maps the progress slot (8 bytes of a shared temporary file: the frame being run),
  reads the run configuration and calls that checkout's ``worker_main``. The parent
  (:class:`~streambench.harness.execution.isolation.IsolatedEngine`) then speaks the same protocol as with
  a ``multiprocessing`` spawn child: JSON headers and ``numpy.savez`` bytes, nothing pickled.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import mmap
import os
import socket
import subprocess
import sys
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from streambench.harness.execution.worker_paths import WorkerPaths

__all__ = [
    "WORKER_ENVIRONMENT",
    "ChildProcess",
    "WorkerCommand",
    "default_pythonpath",
    "harness_package",
    "pin",
    "runs_this_harness",
    "start_sealed_worker",
    "start_worker",
]

_BOOTSTRAP = """\
import ctypes, mmap, os, sys
if sys.path and sys.path[0] == "":
    del sys.path[0]
if sys.argv[4]:
    os.sched_setaffinity(0, {int(c) for c in sys.argv[4].split(",")})
from multiprocessing.connection import Connection
conn = Connection(int(sys.argv[1]))
slot = (ctypes.c_longlong * 1).from_buffer(mmap.mmap(int(sys.argv[2]), 8))
config = conn.recv_bytes().decode()
import importlib
worker_main = importlib.import_module(sys.argv[5] + ".execution.isolation_worker").worker_main
worker_main(config, int(sys.argv[3]) if sys.argv[3] else None, conn, slot)
"""


_SEALED_BOOTSTRAP = """\
import ctypes, json, mmap, sys, traceback
from multiprocessing.connection import Connection
conn = Connection(int(sys.argv[1]))
slot = (ctypes.c_longlong * 1).from_buffer(mmap.mmap(int(sys.argv[2]), 8))
first = json.loads(conn.recv_bytes())
sys.path.extend(p for p in first["paths"]["harness"] if p not in sys.path)
try:
    from streambench.harness.execution.sandbox import SandboxPolicy, enter_sandbox
    record = enter_sandbox(SandboxPolicy.model_validate(first["policy"]), first["mode"])
except Exception as exc:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    failed = {"kind": "failed", "type": type(exc).__name__, "message": str(exc), "traceback": text}
    conn.send_bytes(json.dumps(failed).encode())
    sys.exit(1)
conn.send_bytes(json.dumps({"kind": "sandbox", **record.model_dump(mode="json")}).encode())
spec = conn.recv_bytes().decode()
from streambench.harness.execution.sealed_worker import sealed_main
from streambench.harness.execution.worker_paths import WorkerPaths
sealed_main(spec, conn, slot, WorkerPaths.model_validate(first["paths"]))
import os
sys.stdout.flush()
sys.stderr.flush()
os._exit(0)  # nothing left to keep (results went through the pipe): skip the interpreter's teardown
"""
"""A sealed worker's first instructions, run as ``python -I -S -c``: no start-up hook of the environment
or of the model's directories runs (harness/execution/worker_paths.py); the path to the harness, then the
sandbox, then the worker."""


_DETACHED: dict[str, Any] = {
    "close_fds": True,
    "stdin": subprocess.DEVNULL,
    "stdout": 2,  # the harness's stderr: what the model prints is not the command's output
    **({"process_group": 0} if sys.version_info >= (3, 11) else {"start_new_session": True}),
}
"""How a worker is started: no terminal input, its stdout on stderr, and a process group of its own that
whatever the model starts joins (harness/execution/process_tree.py ends it)."""

WORKER_ENVIRONMENT = frozenset(
    {
        "PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "TZ", "TMPDIR",
        "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "NVIDIA_VISIBLE_DEVICES",
        "OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "KMP_AFFINITY", "KMP_BLOCKTIME", "OMP_PROC_BIND",
        "OMP_PLACES", "TORCH_HOME", "HF_HOME", "HF_HUB_OFFLINE", "XDG_CACHE_HOME", "VIRTUAL_ENV",
    }
)  # fmt: skip
"""The environment variables a sealed worker inherits: what a model's libraries need
(locale, library paths, devices, thread counts, model caches), nothing that names the run, the
protocol, the test or the data (``PYTEST_CURRENT_TEST``, ``STREAMBENCH_*``, ``CI``... are dropped)."""


def start_sealed_worker(
    spec_json: str,
    slot: SharedSlot,
    sandbox_json: str,
    extra_env: dict[str, str] | None = None,
    paths: WorkerPaths | None = None,
) -> tuple[ChildProcess, Connection]:
    """Start a sealed worker (:func:`streambench.harness.execution.sealed_worker.sealed_main`) as a plain
    child whose command line is the same for every run and protocol (``PYTHON -I -S -c BOOTSTRAP CONN_FD
    SLOT_FD``; a ``multiprocessing`` spawn child would get the parent's ``sys.argv`` and main module),
    whose environment is :data:`WORKER_ENVIRONMENT`'s part of this one, and whose import path is
    ``paths`` (default: the adapter's code found from the working directory, then this process's
    ``sys.path``; harness/execution/worker_paths.py). Its first act is to enter the sandbox of
    ``sandbox_json`` (``{"policy": SandboxPolicy, "mode": ...}``, harness/execution/sandbox.py), before any
    thread starts, before any start-up hook and before anything of the model's is imported; it answers
    ``{"kind": "sandbox", ...SandboxRecord}`` (or ``failed``), then reads the spec. ``extra_env``:
    variables the user set for this worker (an ``ab`` side's ``WorkerCommand.env``)."""
    from streambench.harness.execution.worker_paths import worker_paths

    parent, child = socket.socketpair()
    env = {key: value for key, value in os.environ.items() if key in WORKER_ENVIRONMENT}
    env.update(extra_env or {})
    first = {**json.loads(sandbox_json), "paths": (paths or worker_paths()).model_dump(mode="json")}
    argv = [sys.executable, "-I", "-S", "-c", _SEALED_BOOTSTRAP, str(child.fileno()), str(slot.file.fileno())]
    popen = subprocess.Popen(argv, env=env, pass_fds=(child.fileno(), slot.file.fileno()), **_DETACHED)
    child.close()
    conn = Connection(parent.detach())
    _hand_over(conn, json.dumps(first).encode(), spec_json.encode())
    return ChildProcess(popen), conn


def default_pythonpath() -> list[str]:
    """The directory this streambench is imported from: the one holding the ``streambench`` package (a
    checkout's root, whose ``streambench/`` links the floors, or the installation's site-packages)."""
    import streambench

    return [str(Path(streambench.__file__).resolve().parent.parent)]


def harness_package(command: WorkerCommand) -> str:
    """The import name of the harness a worker started with ``command`` runs: ``streambench.harness``,
    or ``harness`` for a checkout from before streambench 0.2 (its floors were top-level packages), so
    that ``ab`` can still set today's code against an older commit. Decided from the first entry of the
    command's ``PYTHONPATH`` that holds either layout; none: the installed ``streambench.harness``."""
    for entry in command.pythonpath:
        root = Path(entry)
        if (root / "streambench" / "__init__.py").is_file():
            return "streambench.harness"
        if (root / "harness" / "execution" / "isolation_worker.py").is_file():
            return "harness"
    return "streambench.harness"


def runs_this_harness(command: WorkerCommand) -> bool:
    """Whether a worker started with ``command`` would run this very harness: this interpreter, and no
    other ``streambench`` first on its own directories (a side's checkout of a project that uses
    streambench runs this one; a checkout of streambench itself runs its own). Only then can a sealed
    worker, which speaks this process's protocol, stand in for it."""
    import importlib.machinery

    import streambench

    if os.path.realpath(command.python) != os.path.realpath(sys.executable):
        return False
    if harness_package(command) == "harness":  # a checkout of streambench from before 0.2
        return False
    entries = [os.path.abspath(p) for p in command.pythonpath if os.path.isdir(p)]
    spec = importlib.machinery.PathFinder.find_spec("streambench", entries) if entries else None
    if spec is None or spec.origin is None:
        return True  # nothing of its own: it imports the streambench this process does
    return os.path.realpath(spec.origin) == os.path.realpath(streambench.__file__)


class WorkerCommand(BaseModel):
    """How one side's worker is started: interpreter, the side's own directories, extra environment, cores."""

    model_config = ConfigDict(extra="forbid")

    python: str = Field(default_factory=lambda: sys.executable, description="the side's interpreter")
    pythonpath: list[str] = Field(
        default_factory=list,
        description="the side's own directories, first for every import its adapter makes (a checkout of "
        "the base commit); empty: the working directory, then this process's sys.path",
    )
    env: dict[str, str] = Field(default_factory=dict, description="extra environment variables")
    cpus: tuple[int, ...] | None = Field(None, description="pin the worker to these cores (duet mode)")


class ChildProcess:
    """The part of :class:`multiprocessing.process.BaseProcess` the isolated engine uses, over Popen."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def exitcode(self) -> int | None:
        return self._popen.poll()

    def is_alive(self) -> bool:
        return self._popen.poll() is None

    def join(self, timeout: float | None = None) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout)

    def terminate(self) -> None:
        if self.is_alive():
            self._popen.terminate()

    def kill(self) -> None:
        if self.is_alive():
            self._popen.kill()


class SharedSlot:
    """One int64 in a shared temporary file: the progress slot across an ``exec``."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the slot
        self.file.write(b"\0" * 8)
        self.file.flush()
        self._map = mmap.mmap(self.file.fileno(), 8)
        self._value = (ctypes.c_longlong * 1).from_buffer(self._map)

    def __getitem__(self, index: int) -> int:
        return int(self._value[index])

    def __setitem__(self, index: int, value: int) -> None:
        self._value[index] = value


def start_worker(
    command: WorkerCommand, config_json: str, memory_limit_mb: int | None, slot: SharedSlot
) -> tuple[ChildProcess, Connection]:
    """Start a worker as a child process; returns it and the parent's end of its connection."""
    parent, child = socket.socketpair()
    env = {**os.environ, **command.env}
    own = command.pythonpath or default_pythonpath()
    env["PYTHONPATH"] = os.pathsep.join([*own, *filter(None, [env.get("PYTHONPATH")])])
    cpus = ",".join(str(c) for c in command.cpus) if command.cpus else ""
    argv = [
        command.python,
        "-c",
        _BOOTSTRAP,
        str(child.fileno()),
        str(slot.file.fileno()),
        "" if memory_limit_mb is None else str(memory_limit_mb),
        cpus,
        harness_package(command),
    ]
    try:
        popen = subprocess.Popen(argv, env=env, pass_fds=(child.fileno(), slot.file.fileno()), **_DETACHED)
    except OSError as exc:  # no such interpreter, or not executable: a side's configuration (--base-python)
        child.close()
        parent.close()
        from streambench.harness.execution.worker_errors import WorkerError  # numpy: only when failing

        why = exc.strerror or str(exc)
        raise WorkerError(f"the worker's interpreter {command.python!r} cannot be started: {why}") from None
    child.close()
    conn = Connection(parent.detach())
    _hand_over(conn, config_json.encode())
    return ChildProcess(popen), conn


def _hand_over(conn: Connection, *messages: bytes) -> None:
    """Send a new worker what it reads first. A worker already gone (an interpreter that is no Python, a
    crash at start) is found by the caller's first read, which says how it ended: the pipe broken here
    would be a ``BrokenPipeError`` that click takes for its own output's (exit 1, no word)."""
    try:
        for message in messages:
            conn.send_bytes(message)
    except (BrokenPipeError, ConnectionResetError):
        return


def pin(pid: int, cpus: tuple[int, ...]) -> None:
    """Pin every thread of process ``pid`` to ``cpus`` (Linux: affinity is per thread)."""
    try:
        tasks: list[Any] = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tasks = [pid]
    for tid in tasks:
        try:
            os.sched_setaffinity(tid, set(cpus))
        except OSError:  # a thread that ended meanwhile
            continue
