"""What the command line keeps from the model it runs: its own output, its exit, its children.

- :func:`command_stdout` (item 11): while a command runs a model in this process, what the model prints
  goes to stderr — ``sys.stdout`` is ``sys.stderr`` and, where stdout is file descriptor 1, fd 1 is a
  copy of fd 2 (a C library's writes, and the stdout a worker or helper inherits) — and the command's
  own console (:data:`streambench.harness.cli.common.out`) writes to what stdout was: ``--json`` prints JSON
  alone.
- :func:`leave` (items 8 and 10), at the end of ``main``: ends the children the command left running
  (a model's helper in process that no run ended, naming each on stderr), and, when a non-daemon thread
  (a model's) would keep the interpreter from exiting, names it, flushes the output and exits at once
  with the command's exit code (``os._exit``: the interpreter would wait for that thread forever).
- :func:`adopt_orphans` (item 8): the command's process is a child subreaper, so that an orphan a model
  leaves (a double fork's grandchild) is found among its children.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import IO

__all__ = ["THREAD_GRACE_S", "adopt_orphans", "command_stdout", "leave"]

THREAD_GRACE_S = 1.0
"""How long :func:`leave` waits for non-daemon threads to end by themselves before it exits without them."""

_PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _fileno(stream: IO[str]) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # captured (a test's runner): no descriptor
        return None


@contextlib.contextmanager
def command_stdout() -> Iterator[None]:
    """The command's stdout for the command's console alone while the block runs (see the module)."""
    from streambench.harness.cli.common import out

    original = sys.stdout
    with contextlib.suppress(OSError, ValueError):
        original.flush()
    kept: int | None = None
    channel: IO[str] = original
    stderr_fd = _fileno(sys.stderr)
    if _fileno(original) == 1 and stderr_fd is not None and stderr_fd != 1:
        kept = os.dup(1)
        channel = open(  # noqa: SIM115 - closed below, after fd 1 is back
            kept, "w", encoding=original.encoding, errors=original.errors, closefd=False
        )
        os.dup2(stderr_fd, 1)
    console_file = out._file  # None: the console follows sys.stdout
    out.file = channel
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        for stream in (channel, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        sys.stdout = original
        out._file = console_file
        if kept is not None:
            os.dup2(kept, 1)
            channel.close()
            os.close(kept)


def _stray_threads(grace_s: float) -> list[threading.Thread]:
    """Non-daemon threads other than this one still running after ``grace_s``."""
    deadline = time.monotonic() + grace_s
    stray = []
    for thread in threading.enumerate():
        if thread is threading.current_thread() or thread.daemon:
            continue
        thread.join(max(deadline - time.monotonic(), 0.0))
        if thread.is_alive():
            stray.append(thread)
    return stray


def _end_children() -> None:
    """End (and name on stderr) the children this process still has: the command is over."""
    if "psutil" not in sys.modules and not _has_children():
        return
    from streambench.harness.execution.process_tree import ChildWatch

    left = ChildWatch(known=()).end()
    for process in left:
        sys.stderr.write(
            f"streambench: warning: ended process {process.pid} {process.name} ({process.command[:80]}), "
            "still running when the command ended (a model's?)\n"
        )


def _has_children() -> bool:
    """Whether this process has a child, cheaply (Linux: /proc; elsewhere: assume it may)."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return True
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/children") as children:
                if children.read().strip():
                    return True
        except OSError:
            return True
    return False


def leave(code: object) -> None:
    """The command is over with exit status ``code`` (``SystemExit.code``): end the children it left;
    if non-daemon threads remain, name them, flush and exit now. Returns when no thread remains."""
    try:
        _end_children()
        stray = _stray_threads(THREAD_GRACE_S)
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM) again: no more waiting
        stray = _stray_threads(0.0)
    if not stray:
        return
    if code is None or isinstance(code, int):
        status = code or 0
    else:  # SystemExit("message"): printed, exit status 1
        sys.stderr.write(f"{code}\n")
        status = 1
    names = ", ".join(repr(t.name) for t in stray)
    sys.stderr.write(
        f"streambench: warning: {len(stray)} non-daemon thread(s) still running once the command ended "
        f"({names}; a model's?): exiting without waiting for them\n"
    )
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()  # type: ignore[union-attr]
    os._exit(status)


def adopt_orphans() -> bool:
    """Make this process a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): an orphan among its
    descendants (a double fork's grandchild) becomes its child instead of init's, where the end of a run
    (harness/execution/process_tree.py ``ChildWatch``) and :func:`leave` find it. False where that is not
    available. Cheap, and imports nothing of the harness's: it runs before the command's start-up."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):  # pragma: no cover - no libc prctl
        return False
