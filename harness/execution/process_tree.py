"""The processes an adapter starts end with the run, and the result names them.

A model may start a helper process, or fork; nothing in the adapter contract ends those, so the harness
does, in each way the adapter can run:

- in a worker (sealed or ``--no-sealed``): the worker leads a process group of its own (its ``Popen``
  starts it in one; a ``multiprocessing`` worker makes one first thing,
  :func:`streambench.harness.execution.isolation_worker.bind_to_parent`), which every process the model starts
  joins unless it leaves on purpose (``setsid``). :class:`WorkerTree` notes the worker's descendants
  before it is asked to stop and, once it is gone, ends (SIGKILL) whatever is left of its group and of
  those descendants, and names each (:class:`LeftoverProcess`);
- when the harness itself dies (SIGKILL included, when nothing of it can act): the worker dies with it
  (``PR_SET_PDEATHSIG``), and a guard started with it ends its group. The guard is a small interpreter of
  its own, outside the worker's sandbox and process group and in a session of its own (no Ctrl-C of the
  terminal's reaches it), that blocks on a pipe whose only writing end this process holds: the pipe
  reaches end-of-file when this process closes it or dies, whatever killed it, and the guard then kills
  the worker's group and exits;
- in process: the adapter's children are this process's own. :class:`ChildWatch` notes this process's
  children before the adapter is built and, at the run's end, ends and names the new ones and all they
  started (the command line makes this process a child subreaper, harness/cli/hygiene.py
  ``adopt_orphans``, so that a double fork's orphan is found among them).

Nothing here runs per frame: the worker's tree is looked at when a worker ends, this process's children
when a run ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable

import psutil
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ChildWatch", "LeftoverProcess", "WorkerTree", "end_processes", "is_ours"]

COMMAND_CHARS = 300
"""A leftover's command line is kept up to this many characters (a worker's bootstrap is longer)."""

_INFRASTRUCTURE = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
_OURS: set[int] = set()  # live workers and guards this process started (never an adapter's leftover)

_GUARD = """\
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
group, fd = int(sys.argv[1]), int(sys.argv[2])
while True:
    try:
        if not os.read(fd, 64):
            break
    except InterruptedError:
        continue
    except OSError:
        break
try:
    os.killpg(group, signal.SIGKILL)
except OSError:
    pass
"""


class LeftoverProcess(BaseModel):
    """A process the adapter left running when its run (or its worker) ended; the harness ended it."""

    model_config = ConfigDict(extra="forbid")

    pid: int
    name: str = Field(description="the process's name (its comm, as ps shows it)")
    command: str = Field(description=f"its command line, up to {COMMAND_CHARS} characters")


def describe(process: psutil.Process) -> LeftoverProcess | None:
    """The record of a live process; None if it is gone (or a zombie: only its exit status is left)."""
    try:
        with process.oneshot():
            if process.status() == psutil.STATUS_ZOMBIE:
                return None
            name, argv = process.name(), process.cmdline()
    except psutil.Error:
        return None
    command = " ".join(argv).replace("\n", " ") or name
    if len(command) > COMMAND_CHARS:
        command = command[: COMMAND_CHARS - 1] + "…"
    return LeftoverProcess(pid=process.pid, name=name, command=command)


def end_processes(processes: Iterable[psutil.Process], group: int | None = None) -> list[LeftoverProcess]:
    """Name the live ones of ``processes``, then kill them (SIGKILL) and, when given, process group
    ``group`` (never this process's own), and collect them; the records of those that were alive."""
    found: dict[int, tuple[psutil.Process, LeftoverProcess]] = {}
    for process in processes:
        record = describe(process)
        if record is not None and process.pid != os.getpid():
            found.setdefault(process.pid, (process, record))
    if group is not None and group != os.getpgrp():
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    for process, _ in found.values():
        with contextlib.suppress(psutil.Error):
            process.kill()
    _collect([process for process, _ in found.values()])
    return [record for _, record in found.values()]


def _collect(processes: list[psutil.Process], timeout_s: float = 5.0) -> None:
    """Wait until each of ``processes`` is gone or a zombie (one that is not this process's child is
    reaped by its parent, or by init, whenever that gets to it), reaping this process's own."""
    deadline = time.monotonic() + timeout_s
    while processes and time.monotonic() < deadline:
        running = []
        for process in processes:
            with contextlib.suppress(OSError):  # ChildProcessError: not this process's child
                os.waitpid(process.pid, os.WNOHANG)
            try:
                if process.status() != psutil.STATUS_ZOMBIE:
                    running.append(process)
            except psutil.Error:  # gone
                continue
        processes = running
        if processes:
            time.sleep(0.01)


def group_members(group: int) -> list[psutil.Process]:
    """The processes of process group ``group``."""
    members = []
    for pid in psutil.pids():
        try:
            if os.getpgid(pid) == group:
                members.append(psutil.Process(pid))
        except (OSError, psutil.Error):
            continue
    return members


def is_ours(process: psutil.Process) -> bool:
    """A worker or guard this process started, or multiprocessing's own helper (its resource tracker)."""
    if process.pid in _OURS:
        return True
    try:
        command = " ".join(process.cmdline())
    except psutil.Error:
        return False
    return any(part in command for part in _INFRASTRUCTURE)


class WorkerTree:
    """One worker's process group (its id is the worker's pid) and the guard that ends it if this
    process dies. :meth:`note` while the worker lives, :meth:`end` once it is gone."""

    def __init__(self, worker_pid: int) -> None:
        self.pid = worker_pid
        self._seen: list[psutil.Process] = []
        read, self._write = os.pipe()  # not inheritable: the guard's copy is passed alone
        try:
            self._guard: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _GUARD, str(worker_pid), str(read)],
                pass_fds=(read,),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:  # pragma: no cover - cannot start a process: the group still ends with the run
            self._guard = None
        finally:
            os.close(read)
        _OURS.update({worker_pid, *([self._guard.pid] if self._guard is not None else [])})

    def note(self) -> None:
        """The worker's descendants now (before it is asked to stop): those that left its group too."""
        try:
            self._seen = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            self._seen = []

    def end(self) -> list[LeftoverProcess]:
        """After the worker is gone: end what is left of its group and of the descendants noted, name
        each, and let the guard go."""
        guard = self._guard.pid if self._guard is not None else None
        candidates = [p for p in [*group_members(self.pid), *self._seen] if p.pid not in (self.pid, guard)]
        leftovers = end_processes(candidates, group=self.pid)
        self.release()
        return leftovers

    def release(self) -> None:
        """Close the guard's pipe (it ends the group, by then empty, and exits) and collect it."""
        if self._write >= 0:
            os.close(self._write)
            self._write = -1
        if self._guard is not None:
            try:
                self._guard.wait(5.0)
            except subprocess.TimeoutExpired:  # pragma: no cover - a guard that does not exit
                self._guard.kill()
                self._guard.wait()
            _OURS.discard(self._guard.pid)
        _OURS.discard(self.pid)


class ChildWatch:
    """In process: the children this process has before the adapter is built (or ``known``); :meth:`end`
    ends and names the new ones (and everything they started) at the run's end."""

    def __init__(self, known: Iterable[int] | None = None) -> None:
        self._before = {p.pid for p in self._children()} if known is None else set(known)

    @staticmethod
    def _children() -> list[psutil.Process]:
        try:
            return psutil.Process().children()
        except psutil.Error:  # pragma: no cover - /proc unreadable
            return []

    def end(self) -> list[LeftoverProcess]:
        new = [p for p in self._children() if p.pid not in self._before and not is_ours(p)]
        tree = list(new)
        for child in new:
            with contextlib.suppress(psutil.Error):
                tree.extend(child.children(recursive=True))
        return end_processes(tree)
