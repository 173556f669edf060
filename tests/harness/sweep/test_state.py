"""A sweep's progress (harness/sweep/state.py): counts and the time left from the throughput."""

from __future__ import annotations

import pytest

from streambench.harness.sweep.state import SweepProgress

# --- progress -------------------------------------------------------------------------------------------


def test_progress_counts_and_estimates_the_time_left_from_the_throughput() -> None:
    now = [100.0]
    seen: list[str] = []
    progress = SweepProgress(10, skipped=2, listener=lambda snap, msg: seen.append(msg), clock=lambda: now[0])
    assert progress.snapshot().eta_s is None
    progress.started("a")
    progress.started("b")
    now[0] = 104.0
    progress.finished("a", ok=True)
    snap = progress.snapshot()
    assert (snap.done, snap.skipped, snap.running, snap.failed, snap.remaining) == (3, 2, 1, 0, 6)
    assert snap.eta_s == pytest.approx(7 * 4.0)  # 6 remaining + 1 running, one run ended per 4 s
    progress.retrying("b", "boom")
    progress.started("b", 2)
    now[0] = 110.0
    progress.finished("b", ok=False)
    snap = progress.snapshot()
    assert (snap.done, snap.running, snap.failed, snap.remaining) == (3, 0, 1, 6)
    assert snap.eta_s == pytest.approx(6 * 10.0 / 2)
    assert seen == [
        "started a",
        "started b",
        "done a",
        "retrying b: boom",
        "started b (attempt 2)",
        "FAILED b",
    ]
