"""No new processes from the adapter's worker: a seccomp filter that refuses them (DESIGN.md, "Causality":
"every process and thread it starts is counted or refused").

The parent reads the worker's CPU time from ``/proc`` to confirm what its clock sees (harness/execution/
host_timing.py). A thread's time stays in its process's account after it exits; a process the model
starts does not (its time is its own, and lost with it once another process reaps it). So threads are
counted and processes refused: once confined, ``fork``, ``vfork`` and a ``clone`` without
``CLONE_THREAD`` fail with ``EPERM`` (Python: ``PermissionError`` from ``os.fork``, ``subprocess``,
``multiprocessing``), and ``clone3``, whose flags a filter cannot read, with ``ENOSYS``, so the C library
falls back to ``clone`` for a thread. The filter binds every thread of the worker and everything it runs.

Mechanism: libseccomp (through ``pyseccomp``, its ctypes binding). Where it is unavailable the worker runs
on and the sandbox record says new processes are allowed, and why.
"""

from __future__ import annotations

import errno

__all__ = ["CLONE_THREAD", "refuse_new_processes"]

CLONE_THREAD = 0x00010000
"""``<linux/sched.h>``: the flag that makes a ``clone`` a thread of the caller's process."""


def refuse_new_processes() -> tuple[bool, str]:
    """Worker side: install the filter on every thread of this process; (installed, what it is or why
    not)."""
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as exc:  # the binding, or libseccomp itself, is missing
        return False, f"new processes allowed: seccomp is unavailable ({type(exc).__name__}: {exc})"
    try:
        refusal = seccomp.SyscallFilter(seccomp.ALLOW)
        for name in ("fork", "vfork"):
            try:
                refusal.add_rule(seccomp.ERRNO(errno.EPERM), name)
            except (OSError, ValueError, RuntimeError):  # no such system call on this architecture
                continue
        refusal.add_rule(
            seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0)
        )
        refusal.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        refusal.set_attr(seccomp.Attr.CTL_TSYNC, 1)
        refusal.load()
    except (OSError, ValueError, RuntimeError) as exc:
        return False, f"new processes allowed: the seccomp filter failed ({type(exc).__name__}: {exc})"
    return True, "new processes refused (seccomp)"
