"""The machine's load as the capacity search reads it (harness/instruments/interference.py):
``/proc/stat``'s busy time, and the selftest's busy-wait probe."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from streambench.harness.instruments.interference import busy_wait_probe, system_busy_ns


def test_busy_time_sums_user_nice_system_irq_softirq_and_steal(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat.write_text("cpu  100 5 40 9000 30 2 3 7 11 0\ncpu0 50 2 20 4500 15 1 1 3 5 0\n")
    ticks = 100 + 5 + 40 + 2 + 3 + 7  # idle and iowait left out; guest is inside user already
    assert system_busy_ns(stat) == ticks * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    stat.write_text("intr 1 2 3\n")
    assert system_busy_ns(stat) is None
    assert system_busy_ns(tmp_path / "missing") is None


def test_the_busy_wait_probe_never_measures_below_its_duration() -> None:
    latencies = busy_wait_probe(200.0, 10)
    assert latencies.shape == (10,) and latencies.dtype == np.int64
    assert (latencies >= 200_000).all()
