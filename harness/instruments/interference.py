"""What the machine did to a measurement: context switches of the timing thread, and the CPU frequency.

* :func:`thread_switches`: ``getrusage(RUSAGE_THREAD)``'s voluntary / involuntary context switch counts of
  the calling thread (Linux). Read before and after a stream, never inside a frame's timed window (one read
  costs ~0.3 µs; a sealed worker reads it around each frame's fetch from the pipe, to leave those out).
  An involuntary switch means the scheduler took the core away mid-stream: the frame it hit includes
  another process's time (MLPerf LoadGen judges a run's validity on what it could measure of this kind).
* :func:`system_busy_ns`: CPU time every process on the machine used so far (``/proc/stat``'s first line:
  user, nice, system, irq, softirq and steal, in ``USER_HZ`` ticks, so a 10 ms resolution per core). Read
  around a window with the run's own processes' CPU time, it gives what *other* processes took (the
  capacity protocol reads it around each point).
* :func:`busy_wait_probe`: ``streambench selftest``'s busy-wait, a few frames of a known duration spun on
  ``perf_counter_ns``: another process can only add time to them (harness/execution/selftest_checks.py
  judges them).
* :func:`cpu_frequency_khz`: each core's current frequency from ``/sys/devices/system/cpu/cpu*/cpufreq/
  scaling_cur_freq`` where the kernel exposes it; ``None`` with the reason where it does not (many VMs).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

__all__ = ["busy_wait_probe", "cpu_frequency_khz", "system_busy_ns", "thread_switches"]

_CPUFREQ = Path("/sys/devices/system/cpu")
_STAT = Path("/proc/stat")
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system [idle iowait] irq softirq steal (guest is in user)


def system_busy_ns(stat: Path = _STAT) -> int | None:
    """CPU time (ns, summed over cores) the whole machine has been busy since boot; None where unknown."""
    try:
        with open(stat, "rb") as handle:
            fields = handle.readline().split()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    if not fields or fields[0] != b"cpu" or len(fields) < 9:
        return None
    try:
        busy = sum(int(fields[1 + k]) for k in _BUSY_FIELDS)
    except ValueError:
        return None
    return busy * 1_000_000_000 // ticks


def busy_wait_probe(duration_us: float = 1000.0, frames: int = 40) -> np.ndarray:
    """Latencies (ns) of ``frames`` busy waits of ``duration_us`` each, timed as the selftest times them."""
    nominal = round(duration_us * 1000)
    out = np.empty(frames, dtype=np.int64)
    now = time.perf_counter_ns
    for k in range(frames):
        start = now()
        end = start + nominal
        while (t := now()) < end:
            pass
        out[k] = t - start
    return out


def thread_switches() -> tuple[int, int] | None:
    """(voluntary, involuntary) context switches of the calling thread so far; ``None`` where unknown."""
    try:
        import resource

        usage = resource.getrusage(resource.RUSAGE_THREAD)
    except (ImportError, AttributeError, OSError):  # pragma: no cover - not Linux
        return None
    return int(usage.ru_nvcsw), int(usage.ru_nivcsw)


def cpu_frequency_khz(root: Path = _CPUFREQ) -> tuple[list[int] | None, str | None]:
    """Current frequency of each core (kHz), or ``(None, reason)``."""
    files = sorted(root.glob("cpu[0-9]*/cpufreq/scaling_cur_freq"))
    if not files:
        return None, f"not readable: no {root}/cpu*/cpufreq/scaling_cur_freq (no cpufreq driver exposed)"
    try:
        return [int(f.read_text().strip()) for f in files], None
    except (OSError, ValueError) as exc:
        return None, f"not readable: {exc}"
