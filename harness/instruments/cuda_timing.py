"""Device-side timing of ``predict()`` with CUDA events (seed 004 §6.2.2: "GPU 计时使用 CUDA events").

The host latency (``perf_counter_ns`` around ``predict()``, ending with the synchronisation the adapter
needs to read its output) stays the latency of record; CUDA event pairs recorded around the same call
give the device's share. Events come from a pool preallocated per stream and are read only after the
stream, so the loop never waits on the device for them. A frame whose two times disagree by more than a
set factor is flagged: device time above host time means the adapter returned before its work was done
(a missing synchronisation); host time far above device time means the host side dominates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import numpy as np

__all__ = ["CudaEventTimer", "DeviceTimer", "marked"]

_In = TypeVar("_In")
_Out = TypeVar("_Out")


class DeviceTimer(Protocol):
    """Start/end marks around each ``predict()`` of one stream, read after the stream."""

    def start(self) -> None: ...

    def end(self) -> None: ...

    def read_ns(self) -> np.ndarray:
        """Device time of each marked call, in ns (after the stream; may synchronise)."""
        ...


class CudaEventTimer:
    """A pool of ``2 * capacity`` CUDA events (``enable_timing=True``), recorded in pairs."""

    def __init__(self, capacity: int, torch_module: Any | None = None) -> None:
        if torch_module is None:
            import torch

            torch_module = torch
        self._torch: Any = torch_module
        event = self._torch.cuda.Event
        self._starts = [event(enable_timing=True) for _ in range(capacity)]
        self._ends = [event(enable_timing=True) for _ in range(capacity)]
        self._next_start = 0
        self._next_end = 0

    def start(self) -> None:
        self._starts[self._next_start].record()
        self._next_start += 1

    def end(self) -> None:
        self._ends[self._next_end].record()
        self._next_end += 1

    def read_ns(self) -> np.ndarray:
        self._torch.cuda.synchronize()
        pairs = zip(self._starts[: self._next_end], self._ends[: self._next_end], strict=True)
        # elapsed_time is in milliseconds (float, about 0.5 µs resolution)
        return np.array([round(s.elapsed_time(e) * 1e6) for s, e in pairs], dtype=np.int64)


def marked(predict: Callable[[_In], _Out], timer: DeviceTimer) -> Callable[[_In], _Out]:
    """``predict`` between a start and an end device mark (CUDA events), inside the host-timed call."""
    start, end = timer.start, timer.end

    def call(frame: _In) -> _Out:
        start()
        try:
            return predict(frame)
        finally:
            end()

    return call
