"""Latency the model cannot fake (DESIGN.md "Causality": "the clock that times a frame
... lives in the parent, outside the adapter's reach").

A sealed worker (:mod:`streambench.harness.execution.sealed_feed`) asks for frame ``i + 1`` only after
``predict()`` of frame ``i`` returned and the engine took its output, and says ``DONE`` after the last frame.
So the parent can time every frame on its own clock, which the adapter's process cannot read, stop or patch:
from handing frame ``i`` to the pipe until the worker's next request is back (:class:`FeedStamps`). That
round trip holds the frame's ``predict()``, the handling of its output, and the pipe itself. The pipe's
own cost (send, decode, the engine's loop, the reply) is calibrated in the same worker before the
model is imported: frames of the data set's shapes fed to the null adapter (:class:`PipeFloor`).

:func:`judge_host_timing` compares, frame by frame, the parent's round trip with the worker's own
``predict()`` figure: an honest worker's difference is the floor; a worker whose clock stands still,
or that does its work after the second clock read (in the handling of a lazy returned object, or in
a thread the engine does not wait for before asking for the next frame), shows an excess. The worker's
figure stays the fine-grained one (the floor's noise is tens of µs); the parent's is the one it cannot
fake. ``reset_state()`` (from the request to the first frame asked for) and the worker's start
(interpreter, imports, construction, warm-up) are timed by the parent too, and the worker's CPU time
over all its threads, those that exited included (:func:`process_cpu_ns`: the kernel's CPU clock of the
process), is read by the parent at each stream's edges and between streams.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.protocols.recording import StreamRecording

__all__ = [
    "FeedStamps",
    "HostTimingRecord",
    "PipeFloor",
    "StartTimes",
    "floor_of",
    "judge_host_timing",
    "process_cpu_ns",
    "thread_cpu_ns",
]

EXCESS_QUANTILE = 50
"""The excess judged is its median over frames: a worker that hides its work on more than half of its
frames is called (the median of what the worker says is what the latency row reports)."""
EXCESS_FLOOR_SPREADS = 4.0
"""An excess must exceed this many spreads of the floor (its p90 - p50) to be called ..."""
EXCESS_MIN_NS = 200_000
"""... and at least this much (0.2 ms: the resolution of the check; less hidden work is not called. An
honest torch model's round trip exceeds the null adapter's floor by ~50-100 µs here: its idle intra-op
threads spin after predict() returned, on the core the parent needs to take the reply) ..."""
EXCESS_OF_HOST = 0.5
"""... and half of the parent's own median figure (its round trip less the floor), a threshold the
worker cannot move: where the worker's CPU time cannot be read, the worker is called when it
reports less than half of what the parent saw. (Seen here: an honest 3 ms model on a loaded 2-core
machine had a median excess of 0.56 ms, a fifth of its cost; the planted cheats report 1-2 % of theirs.)"""
CPU_EXCESS_OF_HOST = 0.25
"""Where the worker's CPU time can be read (every thread's, those that exited included; no process of
its own: harness/execution/no_processes.py), a quarter of the parent's figure is enough when the CPU
confirms it: work hidden from the worker's clock is CPU its clock did not count. Judged on means over
frames, as the CPU is a total over them."""
CPU_OF_WORKER = 0.25
"""The CPU confirmation: CPU the worker's clock did not count, per frame, of at least ``EXCESS_MIN_NS``
and this share of what the worker reports per frame. The worker's overhead around ``predict()`` (the
pipe, the engine's loop, context switches) grows on a loaded machine: seen here, an honest 3 ms busy-wait
under two CPU hogs and a test run had 0.03-0.2 ms of it per frame while the parent's wake-ups were late
by ~5 ms. A cheat cannot raise this bar without reporting the latency it hides."""
BEYOND_OF_WORKER = 0.5
"""CPU the worker's clock did not count, of at least this share of its figure (and ``EXCESS_MIN_NS``), is
noted even where no frame waited for it (threads on another core)."""
WALL_OF_HOST = 0.75
WALL_MIN_NS = 1_000_000
"""Without the CPU's confirmation (work hidden as waiting, not as CPU), a wall excess is a verdict on its
own when the worker reports less than a quarter of what the parent saw and at least 1 ms a frame is
unaccounted for: past what a busy machine's late wake-ups of the parent gave honest models here (about
half of the parent's figure)."""
RESET_OF_FRAME = 10
RESET_MIN_NS = 2_000_000
"""A ``reset_state()`` is noted when it costs more than 10 frames and 2 ms (the request's own handling in
the worker is ~0.5 ms)."""
IDLE_CPU_MIN_NS = 50_000_000
"""CPU between streams is noted above 50 ms (the worker's own reply and the next request's parsing are
well below it)."""


@dataclasses.dataclass
class FeedStamps:
    """The parent's clock around one fed stream: ``request_ns`` when the request was sent, ``sends[i]``
    when frame ``i`` was handed to the pipe, ``acks[i]`` when the worker asked for frame ``i`` (so
    ``acks[i + 1]`` is the end of frame ``i``), ``done_ns`` when it said the stream was over; ``commits``:
    the outputs that came with each request and with the end (harness/execution/output_commits.py)."""

    request_ns: int
    sends: list[int] = dataclasses.field(default_factory=list)
    acks: list[int] = dataclasses.field(default_factory=list)
    done_ns: int | None = None
    commits: list[bytes] = dataclasses.field(default_factory=list)  # with each ack, then the end's
    cpu_first_ns: int | None = None
    """The worker's process CPU time when it asked for the first frame (the floor's stream only)."""
    cpu_done_ns: int | None = None
    """... and when it said the stream was over."""

    def host_ns(self) -> np.ndarray | None:
        """Per frame, the parent's round trip; None unless every frame was fed and the worker said DONE
        (a prefix, a warm-up slice or a failed stream has no complete timing)."""
        n = len(self.sends)
        if self.done_ns is None or n == 0 or len(self.acks) != n:
            return None
        ends = np.asarray([*self.acks[1:], self.done_ns], dtype=np.int64)
        return ends - np.asarray(self.sends, dtype=np.int64)

    def reset_ns(self) -> int | None:
        """From the request to the first frame asked for: the worker's ``reset_state()`` (and the request's
        own handling, a few µs)."""
        return self.acks[0] - self.request_ns if self.acks else None


class PipeFloor(BaseModel):
    """The round trip of a frame to the null adapter in the same worker, before the model was imported."""

    model_config = ConfigDict(extra="forbid")

    frames: int = Field(ge=1)
    median_ns: int
    p10_ns: int
    p90_ns: int
    cpu_per_frame_ns: int | None = Field(
        None,
        description="the worker's CPU time a floor frame (its side of the pipe: reading, decoding, "
        "replying); None where it was not read",
    )


def floor_of(host_ns: np.ndarray, cpu_ns: int | None = None) -> PipeFloor:
    """The floor of the round trips ``host_ns``; ``cpu_ns``: the worker's CPU time over those frames."""
    values = np.asarray(host_ns, dtype=np.int64)
    p10, p50, p90 = np.percentile(values, [10, 50, 90])
    per_frame = None if cpu_ns is None else max(cpu_ns, 0) // int(values.size)
    return PipeFloor(
        frames=int(values.size),
        median_ns=int(p50),
        p10_ns=int(p10),
        p90_ns=int(p90),
        cpu_per_frame_ns=per_frame,
    )


class StartTimes(BaseModel):
    """The worker's start as the parent timed it (seconds): process and imports until the floor's first
    frame was asked for, the model's import and construction (calibration end until the warm-up's first
    frame was asked for), and the warm-up (until the worker said it was ready)."""

    model_config = ConfigDict(extra="forbid")

    process_s: float | None
    construction_s: float | None
    warmup_s: float | None


class HostTimingRecord(BaseModel):
    """``result.json``: the parent's clock against the worker's. Figures are over the scored
    streams whose every frame the parent timed; ``verdict`` is ``disagree`` when the parent's round trip
    exceeds the worker's figure plus the floor beyond the calibrated noise (a stopped clock, work after
    the return), ``not-checked`` with the reason where there is no parent clock (in-process)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["agree", "disagree", "not-checked"]
    reason: str | None = None
    floor: PipeFloor | None = None
    frames: int = 0
    host_p50_ns: int | None = Field(None, description="the parent's round trip less the floor's median")
    host_p95_ns: int | None = None
    worker_p50_ns: int | None = Field(None, description="the worker's own predict() figure")
    excess_p50_ns: int | None = Field(
        None, description="median over frames of (round trip - worker figure - floor median)"
    )
    threshold_ns: int | None = Field(None, description="the excess above which the two clocks disagree")
    reset_p50_ns: int | None = Field(None, description="reset_state() per stream, parent's clock")
    reset_max_ns: int | None = None
    start: StartTimes | None = None
    worker_cpu_ns: int | None = Field(
        None,
        description="the worker's CPU time over all its threads during the timed streams (the process's CPU "
        "clock)",
    )
    worker_cpu_idle_ns: int | None = Field(
        None, description="the worker's CPU time between streams, when it should be idle"
    )
    stream_wall_ns: int | None = Field(None, description="the parent's wall time of those streams")
    notes: list[str] = Field(
        default_factory=list, description="what a reader should know (a costly reset_state(), idle CPU)"
    )


def judge_host_timing(
    recordings: Sequence[StreamRecording],
    floor: PipeFloor | None,
    start: StartTimes | None = None,
    idle_cpu_ns: int | None = None,
) -> HostTimingRecord:
    """The verdict over the recordings' parent-timed frames (``host_ns``), against the calibrated floor."""
    timed = [r for r in recordings if r.host_ns is not None and r.host_ns.size == r.latency_ns.size]
    if any(r.paced_start_ns is not None for r in timed):
        why = (
            "a paced run: the parent's round trip of a frame holds the worker's wait for the frame's "
            "arrival, so it cannot be set against predict()'s time; the latencies are the worker's clock"
        )
        return HostTimingRecord(verdict="not-checked", reason=why, floor=floor, start=start)
    if floor is None or not timed:
        why = "no calibrated floor" if floor is None else "no stream was timed by the parent"
        return HostTimingRecord(verdict="not-checked", reason=why, floor=floor, start=start)
    host = np.concatenate([r.host_ns for r in timed if r.host_ns is not None])
    worker = np.concatenate([r.latency_ns for r in timed])
    excess = host - worker - floor.median_ns
    net = np.maximum(host - floor.median_ns, 0)
    worker_p50 = int(np.median(worker))
    host_p50 = int(np.median(net))
    spread = EXCESS_FLOOR_SPREADS * (floor.p90_ns - floor.median_ns)
    threshold = int(max(spread, EXCESS_MIN_NS, EXCESS_OF_HOST * host_p50))
    excess_q = int(np.percentile(excess, EXCESS_QUANTILE))
    resets = [r.host_reset_ns for r in timed if r.host_reset_ns is not None]
    cpu = [r.worker_cpu_ns for r in timed]
    # a busy machine delays the parent's wake-ups too (two CPU hogs: an honest 3 ms model "disagreed");
    # where the worker's CPU time is read, hidden work must also show as CPU its clock did not count
    cpu_total = sum(c for c in cpu if c is not None) if cpu and all(c is not None for c in cpu) else None
    # the worker's side of the pipe costs CPU every frame (the floor's frames measured it): not hidden work
    own = floor.cpu_per_frame_ns or 0
    unexplained = None if cpu_total is None else (cpu_total - int(worker.sum())) / host.size - own
    cpu_bar = max(EXCESS_MIN_NS, CPU_OF_WORKER * float(worker.mean()))
    notes = []
    if unexplained is None:  # no CPU to confirm with: the wall alone, at half the parent's figure
        called = excess_q > threshold
    else:  # hidden CPU at a quarter of the parent's figure; hidden waiting at three quarters
        # the CPU's confirmation is a total, so the wall set against it is too: the mean excess (a model
        # can move its hidden work from frame to frame, which a median of frames misses)
        excess_mean = float(excess.mean())
        # (no floor-spread term here: the CPU, not the pipe's calibrated noise, tells the excess is work)
        cpu_threshold = int(max(EXCESS_MIN_NS, CPU_EXCESS_OF_HOST * float(net.mean())))
        wall_threshold = int(max(spread, WALL_MIN_NS, WALL_OF_HOST * host_p50))
        hidden_cpu = unexplained > cpu_bar and excess_mean > cpu_threshold
        called = hidden_cpu or excess_q > wall_threshold
        threshold = cpu_threshold if unexplained > cpu_bar else wall_threshold
        if hidden_cpu:
            notes.append(
                f"the worker spent {unexplained / 1e6:.3g} ms of CPU a frame its own clock did not count"
            )
        elif unexplained > max(EXCESS_MIN_NS, BEYOND_OF_WORKER * float(worker.mean())):
            notes.append(
                f"the worker's threads used {unexplained / 1e6:.3g} ms of CPU a frame beyond the "
                f"{float(worker.mean()) / 1e6:.3g} ms predict() reported, without a frame waiting for it: a "
                "multi-threaded model's own threads, or work moved out of predict() onto another core"
            )
        elif called:
            notes.append(f"{excess_q / 1e6:.3g} ms a frame unaccounted for by the worker's clock, not CPU")
    reset_p50 = int(np.median(resets)) if resets else None
    if reset_p50 is not None and reset_p50 > max(RESET_OF_FRAME * host_p50, RESET_MIN_NS):
        notes.append(
            f"reset_state() takes {reset_p50 / 1e6:.3g} ms per stream on the parent's clock, "
            f"{reset_p50 / max(host_p50, 1):.0f}x a frame: a deployment pays it per stream"
        )
    if idle_cpu_ns is not None and idle_cpu_ns > IDLE_CPU_MIN_NS:
        notes.append(
            f"the worker used {idle_cpu_ns / 1e6:.3g} ms of CPU between streams, outside every timed frame"
        )
    return HostTimingRecord(
        verdict="disagree" if called else "agree",
        floor=floor,
        frames=int(host.size),
        host_p50_ns=host_p50,
        host_p95_ns=int(np.percentile(net, 95)),
        worker_p50_ns=worker_p50,
        excess_p50_ns=excess_q,
        threshold_ns=threshold,
        reset_p50_ns=reset_p50,
        reset_max_ns=max(resets) if resets else None,
        start=start,
        worker_cpu_ns=sum(c for c in cpu if c is not None) if all(c is not None for c in cpu) else None,
        worker_cpu_idle_ns=idle_cpu_ns,
        stream_wall_ns=sum(r.host_wall_ns or 0 for r in timed),
        notes=notes,
    )


def _stat_ticks(path: str) -> int:
    """utime + stime (clock ticks) of a ``/proc/.../stat`` file (fields 14 and 15; the name in field 2 may
    hold spaces, so fields are counted after its closing parenthesis)."""
    with open(path, "rb") as stat:
        after = stat.read().rsplit(b")", 1)[1].split()
    return int(after[11]) + int(after[12])


def process_cpu_ns(pid: int) -> int | None:
    """CPU time of process ``pid``, threads that have exited included, in ns; None where unreadable (not
    Linux, or the process is gone).

    Read from the kernel's CPU-time clock of the process (``clock_gettime`` of the clock id
    ``clock_getcpuclockid(3)`` returns: ``(~pid << 3) | 2``, CPUCLOCK_SCHED of the whole thread group, in
    ns: every live thread's run time and that of the threads that exited). Where that clock cannot be read,
    :func:`_process_cpu_from_proc` (``/proc``, exited threads at clock-tick resolution). (The sealed worker
    may start no process, harness/execution/no_processes.py, so its threads are all of its CPU.)"""
    try:
        return time.clock_gettime_ns(((~pid) << 3) | _CPUCLOCK_SCHED)
    except (OSError, AttributeError, OverflowError):
        return _process_cpu_from_proc(pid)


_CPUCLOCK_SCHED = 2
"""The process CPU clock that counts scheduler run time (linux/posix-timers.h)."""


def _process_cpu_from_proc(pid: int) -> int | None:
    """:func:`process_cpu_ns` from ``/proc``: the live threads' run time at the scheduler's resolution
    (``/proc/<pid>/task/*/schedstat``, ns), and the exited threads' as the process's total less its live
    threads' (``/proc/<pid>/stat``, clock ticks of 1 / ``SC_CLK_TCK`` s: each reading may be off by a tick
    a thread)."""
    live_ns, live_ticks = 0, 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        total_ticks = _stat_ticks(f"/proc/{pid}/stat")
    except (OSError, ValueError, IndexError):
        return None
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as stat:
                ns = int(stat.read().split()[0])
            ticks = _stat_ticks(f"/proc/{pid}/task/{task}/stat")
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended while we read: its time is in the process's total
        live_ns += ns
        live_ticks += ticks
    exited_ticks = max(total_ticks - live_ticks, 0)
    return live_ns + exited_ticks * 1_000_000_000 // _CLK_TCK


_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def thread_cpu_ns(pid: int, tid: int) -> int | None:
    """CPU time of thread ``tid`` of process ``pid`` (its scheduler run time, ns); None where unreadable."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as stat:
            return int(stat.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def now_ns() -> int:
    """The parent's clock (``perf_counter_ns``: monotonic, this process's; the worker cannot touch it)."""
    return time.perf_counter_ns()
