"""The host clock latencies are read from (``time.perf_counter_ns``), described for the result, and the
wait the paced loop uses to release frames on that clock (seed 004 §6.2.3 "计时点")."""

from __future__ import annotations

import time
from collections.abc import Callable

from pydantic import BaseModel

__all__ = ["ClockInfo", "clock_info", "wait_until"]

_SPIN_NS = 200_000  # the last 0.2 ms before a release are spun, not slept (sleep overshoots)


class ClockInfo(BaseModel):
    """The clock latencies are read from, recorded with every result."""

    name: str
    implementation: str
    resolution_ns: float
    monotonic: bool
    sync_policy: str
    pacing: str


def clock_info(device: str) -> ClockInfo:
    info = time.get_clock_info("perf_counter")
    sync = "none (CPU adapter: the output is ready when predict() returns)"
    if device.startswith("cuda"):
        sync = "the adapter synchronises before returning the output it needs"
    return ClockInfo(
        name="time.perf_counter_ns",
        implementation=info.implementation,
        resolution_ns=info.resolution * 1e9,
        monotonic=info.monotonic,
        sync_policy=sync,
        pacing="unpaced",
    )


def wait_until(due_ns: int, clock: Callable[[], int]) -> None:
    """Sleep, then spin, until the wall clock reaches ``due_ns`` (``perf_counter_ns`` time)."""
    remaining = due_ns - clock()
    if remaining > _SPIN_NS:
        time.sleep((remaining - _SPIN_NS) / 1e9)
    while clock() < due_ns:
        pass
