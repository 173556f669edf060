"""An isolation worker in its own interpreter, with its own ``PYTHONPATH`` (issue 16, ``streambench ab``).

``--isolate`` starts its worker with ``multiprocessing``'s "spawn", which runs the parent's interpreter and
hands the child the parent's ``sys.path``: both sides of an A/B comparison would then import the same
checkout. In CI the two sides are two commits, so a side here is a plain child process::

    PYTHON -c BOOTSTRAP CONN_FD SLOT_FD MEMORY_LIMIT CPUS     (env PYTHONPATH = the side's paths)

The bootstrap (below; small, and using only what ``harness/execution/isolation_worker.py`` has offered
since ``--isolate`` exists, so an older checkout can be a side) drops the current directory that ``-c``
puts first on ``sys.path`` (so the working directory's checkout does not shadow the side's),
pins itself to ``CPUS``
when given (duet mode), wraps its inherited socket in a ``multiprocessing`` :class:`Connection`, maps the
progress slot (8 bytes of a shared temporary file: the frame being run, as the ``RawArray`` does for
``--isolate``), reads the run configuration and calls that checkout's ``worker_main``. The parent
(:class:`~harness.execution.isolation.IsolatedEngine`) then speaks the same protocol as with spawn:
JSON headers and ``numpy.savez`` bytes, nothing pickled.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import socket
import subprocess
import sys
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ChildProcess", "WorkerCommand", "default_pythonpath", "pin", "start_worker"]

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
from harness.execution.isolation_worker import worker_main
worker_main(config, int(sys.argv[3]) if sys.argv[3] else None, conn, slot)
"""


def default_pythonpath() -> list[str]:
    """The directory this streambench is imported from (the parent's own checkout)."""
    return [str(Path(__file__).resolve().parents[2])]


class WorkerCommand(BaseModel):
    """How one side's worker is started: interpreter, import path, extra environment, cores."""

    model_config = ConfigDict(extra="forbid")

    python: str = Field(default_factory=lambda: sys.executable, description="the side's interpreter")
    pythonpath: list[str] = Field(
        default_factory=default_pythonpath, description="put first on PYTHONPATH: the side's checkout"
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
    env["PYTHONPATH"] = os.pathsep.join([*command.pythonpath, *filter(None, [env.get("PYTHONPATH")])])
    cpus = ",".join(str(c) for c in command.cpus) if command.cpus else ""
    argv = [
        command.python,
        "-c",
        _BOOTSTRAP,
        str(child.fileno()),
        str(slot.file.fileno()),
        "" if memory_limit_mb is None else str(memory_limit_mb),
        cpus,
    ]
    popen = subprocess.Popen(argv, env=env, pass_fds=(child.fileno(), slot.file.fileno()), close_fds=True)
    child.close()
    conn = Connection(parent.detach())
    conn.send_bytes(config_json.encode())
    return ChildProcess(popen), conn


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
