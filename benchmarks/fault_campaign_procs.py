"""The fault campaign's view of processes (benchmarks/fault_campaign.py): what a scenario's command left
alive, its worker processes, and the signals some scenarios send while it runs. Not a test module."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fault_campaign import Ctx


def _stat(pid: str) -> tuple[int, int, int] | None:
    """(ppid, pgid, sid) of a process, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), int(fields[2]), int(fields[3])


def session_processes(leader: int, directory: Path) -> dict[int, str]:
    """Live processes of ``leader``'s session or process group, or whose working directory lies in
    ``directory``: pid -> command line."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        ids = _stat(entry)
        if ids is None:
            continue
        inside = leader in ids[1:]
        if not inside:
            try:
                inside = os.readlink(f"/proc/{entry}/cwd").startswith(str(directory))
            except OSError:
                inside = False
        if inside:
            try:
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
                cmd = raw.replace(b"\0", b" ").decode(errors="replace")
                state = Path(f"/proc/{entry}/stat").read_text().split(") ")[1][:1]
            except OSError:
                continue
            if state != "Z":
                found[int(entry)] = cmd.strip()[:160]
    return found


def children(pid: int) -> list[int]:
    """Every live descendant of ``pid``, parents first."""
    ppids = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            ids = _stat(entry)
            if ids is not None:
                ppids[int(entry)] = ids[0]
    out, frontier = [], [pid]
    while frontier:
        parent = frontier.pop(0)
        kids = sorted(p for p, pp in ppids.items() if pp == parent)
        out.extend(kids)
        frontier.extend(kids)
    return out


def workers(ctx: Ctx, wait_s: float = 60.0, count: int = 1) -> list[int]:
    """The pids of the run's worker processes (``python -I -S -c``), once ``count`` exist (or the wait
    ends)."""
    assert ctx.proc is not None
    deadline = time.monotonic() + wait_s
    found: list[int] = []
    while time.monotonic() < deadline and ctx.proc.poll() is None:
        found = []
        for pid in children(ctx.proc.pid):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"-I" in cmd and b"-c" in cmd:
                found.append(pid)
        if len(found) >= count:
            return found
        time.sleep(0.1)
    return found


def after(seconds: float, act: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
    def during(ctx: Ctx) -> None:
        time.sleep(seconds)
        if ctx.proc is not None and ctx.proc.poll() is None:
            act(ctx)

    return during


def once_written(pattern: str, act: Callable[[Ctx], None], wait_s: float = 120.0) -> Callable[[Ctx], None]:
    """``act`` once a file matching ``pattern`` (under the scenario's directory) exists, while the command
    runs: a signal once a search has decided its first point, whatever the machine's load."""

    def during(ctx: Ctx) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and ctx.proc is not None and ctx.proc.poll() is None:
            if any(ctx.dir.glob(pattern)):
                act(ctx)
                return
            time.sleep(0.05)

    return during


def signal_main(sig: int) -> Callable[[Ctx], None]:
    def act(ctx: Ctx) -> None:
        assert ctx.proc is not None
        os.kill(ctx.proc.pid, sig)
        ctx.notes.append(f"sent {signal.Signals(sig).name} to the command")

    return act


def signal_worker(sig: int, after_s: float = 2.0, which: int = 0) -> Callable[[Ctx], None]:
    """Once a worker exists: wait ``after_s``, then send ``sig`` to the ``which``-th worker."""

    def during(ctx: Ctx) -> None:
        found = workers(ctx, count=which + 1)
        time.sleep(after_s)
        found = workers(ctx, wait_s=5, count=which + 1) or found
        if len(found) > which and ctx.proc is not None and ctx.proc.poll() is None:
            try:
                os.kill(found[which], sig)
                ctx.notes.append(f"sent {signal.Signals(sig).name} to worker pid {found[which]}")
            except ProcessLookupError:
                ctx.notes.append("the worker had already ended")
        else:
            ctx.notes.append("no worker found to signal")

    return during
