"""The dynamic batcher of the capacity protocol (harness/execution/batcher.py)."""

from __future__ import annotations

from streambench.harness.execution.batcher import DynamicBatcher


def test_batcher_waits_for_a_fuller_batch_at_most_max_wait() -> None:
    batcher = DynamicBatcher(max_batch=3, max_wait_ns=1000, policy="queue")
    batcher.add(0, stream=7, arrival_ns=100)
    assert batcher.take(500) is None and batcher.due_at() == 1100
    batcher.add(1, stream=8, arrival_ns=600)
    assert batcher.take(1100) == ([(0, 7), (1, 8)], [])  # the oldest waited max_wait: sent as it is
    for f, s in [(2, 1), (3, 1), (4, 2), (5, 3)]:
        batcher.add(f, stream=s, arrival_ns=2000 + f)
    # full at once, one frame per stream: stream 1's second frame waits for the next batch
    assert batcher.take(2010) == ([(2, 1), (4, 2), (5, 3)], [])
    assert batcher.take(2010) is None and batcher.waiting == 1
    drop = DynamicBatcher(max_batch=1, max_wait_ns=0, policy="drop")
    for f in range(3):
        drop.add(f, stream=0, arrival_ns=f)
    assert drop.take(5) == ([(2, 0)], [0, 1])  # drop to the newest
