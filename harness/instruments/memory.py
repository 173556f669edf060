"""Peak memory of a run (DESIGN.md "Instruments": memory — peak GPU memory from torch, peak RSS).

Seed 004 §6.2.3 "硬件与环境" asks for the GPU model and its memory; the memory a model needs to run is
the matching cost. :class:`MemoryProbe` brackets a run: ``start()`` before, ``stop()`` after.

Peak RSS. The OS keeps a high-water mark of the process's resident set; a probe cannot sample fast
enough to see a short spike, so it reads that mark instead:

- Linux: at ``start()`` the probe resets the mark to the current RSS (``echo 5 > /proc/self/clear_refs``,
  Linux >= 4.0) and at ``stop()`` reads ``VmHWM`` from ``/proc/self/status``: the peak *inside the
  window* (``peak_rss_scope="window"``). The reset is process-wide (another probe running at the same
  time would see its own window shortened).
- otherwise (reset not permitted, other OS): ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (KiB on
  Linux, bytes on macOS), or psutil's ``peak_wset`` on Windows — the process peak *since the process
  started* (``peak_rss_scope="process"``), an upper bound of the window's peak.

Peak CUDA memory: ``torch.cuda.max_memory_allocated`` after ``torch.cuda.reset_peak_memory_stats`` at
``start()``. It counts tensors of torch's caching allocator only (not the CUDA context, not other
libraries such as ONNX Runtime); ``None`` with the reason when there is no CUDA device.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import psutil
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MemoryProbe", "MemoryReport", "process_peak_rss_bytes"]


class MemoryReport(BaseModel):
    """Memory of one window (bytes)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    peak_rss_bytes: int = Field(ge=0)
    peak_rss_scope: Literal["window", "process"] = Field(
        description="window: peak between start() and stop(); process: peak since the process started"
    )
    peak_rss_method: str
    rss_start_bytes: int = Field(ge=0)
    rss_end_bytes: int = Field(ge=0)
    peak_cuda_bytes: int | None = Field(default=None, description="torch.cuda.max_memory_allocated")
    peak_cuda_reserved_bytes: int | None = Field(default=None, description="torch.cuda.max_memory_reserved")
    cuda_device: str | None = None
    cuda_reason: str | None = None


def _cuda_unavailable_reason() -> str | None:
    """``None`` when torch can use a CUDA device, else why not."""
    import torch

    if torch.version.cuda is None:
        return "no CUDA device (torch is built without CUDA)"
    if not torch.cuda.is_available():
        return "no CUDA device (torch.cuda.is_available() is False)"
    return None


class MemoryProbe:
    """Brackets a window: ``start()``, the work, ``stop() -> MemoryReport``.

    ``proc_root`` is the procfs root (injectable for tests); ``cuda_device`` the device whose peak is
    read (default: torch's current device).
    """

    def __init__(self, cuda_device: str | int | None = None, proc_root: Path = Path("/proc")) -> None:
        self.cuda_device = cuda_device
        self.proc_root = proc_root
        self._process = psutil.Process()
        self._rss_start: int | None = None
        self._window = False
        self._cuda_reason: str | None = None

    def _reset_high_water_mark(self) -> bool:
        if not sys.platform.startswith("linux"):
            return False
        try:
            (self.proc_root / "self" / "clear_refs").write_text("5")
        except OSError:
            return False
        return self._read_hwm() is not None

    def _read_hwm(self) -> int | None:
        return _read_hwm(self.proc_root / "self" / "status")

    def start(self) -> None:
        """Record the RSS, reset the high-water marks (RSS where permitted, torch's CUDA peak)."""
        self._cuda_reason = _cuda_unavailable_reason()
        if self._cuda_reason is None:
            import torch

            torch.cuda.synchronize(self.cuda_device)
            torch.cuda.reset_peak_memory_stats(self.cuda_device)
        self._window = self._reset_high_water_mark()
        self._rss_start = int(self._process.memory_info().rss)

    def _process_peak(self, rss_end: int) -> tuple[int, str]:
        try:
            import resource
        except ImportError:  # Windows
            peak = getattr(self._process.memory_info(), "peak_wset", None)
            if peak is not None:
                return int(peak), "psutil peak_wset (process peak since start)"
            return max(rss_end, self._rss_start or 0), "max(rss_start, rss_end): the OS exposes no peak"
        maxrss = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        unit = 1 if sys.platform == "darwin" else 1024
        return maxrss * unit, "getrusage(RUSAGE_SELF).ru_maxrss (process peak since start)"

    def stop(self) -> MemoryReport:
        """Read the peaks of the window started by :meth:`start`."""
        if self._rss_start is None:
            raise RuntimeError("MemoryProbe.stop() called before start()")
        peak_cuda: int | None = None
        peak_reserved: int | None = None
        device: str | None = None
        if self._cuda_reason is None:
            import torch

            torch.cuda.synchronize(self.cuda_device)
            peak_cuda = int(torch.cuda.max_memory_allocated(self.cuda_device))
            peak_reserved = int(torch.cuda.max_memory_reserved(self.cuda_device))
            index = torch.cuda.current_device() if self.cuda_device is None else self.cuda_device
            device = str(torch.device("cuda", index) if isinstance(index, int) else torch.device(index))
        rss_end = int(self._process.memory_info().rss)
        hwm = self._read_hwm() if self._window else None
        scope: Literal["window", "process"]
        if hwm is not None:
            peak, method, scope = hwm, "VmHWM after a clear_refs reset at start() (window peak)", "window"
        else:
            (peak, method), scope = self._process_peak(rss_end), "process"
        rss_start, self._rss_start = self._rss_start, None
        return MemoryReport(
            peak_rss_bytes=max(peak, rss_start, rss_end),
            peak_rss_scope=scope,
            peak_rss_method=method,
            rss_start_bytes=rss_start,
            rss_end_bytes=rss_end,
            peak_cuda_bytes=peak_cuda,
            peak_cuda_reserved_bytes=peak_reserved,
            cuda_device=device,
            cuda_reason=self._cuda_reason,
        )


def _read_hwm(status_file: Path) -> int | None:
    """``VmHWM`` of a ``/proc/<pid>/status`` file, in bytes; None where unreadable."""
    try:
        status = status_file.read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None


def process_peak_rss_bytes(pid: int, proc_root: Path = Path("/proc")) -> int | None:
    """Another process's peak resident set since it started (or since it last reset its mark), read by
    this process from ``/proc/<pid>/status`` (``VmHWM``; Linux): a worker's memory on the parent's
    word, not the worker's. None where unreadable (not Linux, or the process is gone)."""
    return _read_hwm(proc_root / str(pid) / "status")
