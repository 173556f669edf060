"""What the machine did to a measurement: context switches of the timing thread, and the CPU frequency.

* :func:`thread_switches`: ``getrusage(RUSAGE_THREAD)``'s voluntary / involuntary context switch counts of
  the calling thread (Linux). Read before and after a stream, never inside a frame's timed window (one read
  costs ~0.3 µs; a sealed worker reads it around each frame's fetch from the pipe, to leave those out).
  An involuntary switch means the scheduler took the core away mid-stream: the frame it hit includes
  another process's time (MLPerf LoadGen judges a run's validity on what it could measure of this kind).
* :func:`cpu_frequency_khz`: each core's current frequency from ``/sys/devices/system/cpu/cpu*/cpufreq/
  scaling_cur_freq`` where the kernel exposes it; ``None`` with the reason where it does not (many VMs).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["cpu_frequency_khz", "thread_switches"]

_CPUFREQ = Path("/sys/devices/system/cpu")


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
