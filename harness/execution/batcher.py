"""The dynamic batcher of one serving worker, after Triton Inference Server's.

Triton's dynamic batcher (``dynamic_batching { max_queue_delay_microseconds }``, model ``max_batch_size``):
when a model instance is free, the requests waiting in the scheduler are put into a batch in the order
they arrived, up to the largest batch allowed; if fewer are waiting, the batcher may hold them for at most
``max_queue_delay_microseconds`` (counted from the arrival of the oldest) for others to join, and sends
what it has when that delay is over. With a delay of 0 it sends whatever is waiting at once. Its
*sequence batcher* (for stateful models) puts at most one request of a sequence into a batch: so does
this one (a stream's frames are fed in order, one per batch, its state carried between them).

The harness adds frames when they have arrived (the load generator never adds one early), so nothing it
hands out can be in the future of its stream or of any other. Under the ``drop`` policy (drop to the
newest, as the paced engine's) a stream whose frames queued up is fed its newest frame and the older
ones are dropped. A replica is this batcher with ``max_batch = 1`` and no delay.

Times are integers (ns) supplied by the caller: the batcher reads no clock.
"""

from __future__ import annotations

import heapq
from collections import deque

from streambench.protocols.pacing import PacingPolicy

__all__ = ["DynamicBatcher"]


class DynamicBatcher:
    """Frames (integer ids) waiting for one worker, per stream, and the rule that batches them."""

    __slots__ = ("_heads", "_queues", "drop", "max_batch", "max_wait_ns", "waiting")

    def __init__(self, max_batch: int, max_wait_ns: int, policy: PacingPolicy) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if max_wait_ns < 0:
            raise ValueError(f"max_wait_ns must be >= 0, got {max_wait_ns}")
        self.max_batch = max_batch
        self.max_wait_ns = max_wait_ns
        self.drop = policy == "drop"
        self._queues: dict[int, deque[tuple[int, int]]] = {}
        self._heads: list[tuple[int, int]] = []  # (arrival of a stream's oldest waiting frame, stream)
        self.waiting = 0

    def add(self, frame: int, stream: int, arrival_ns: int) -> None:
        """A frame that has arrived (the caller's promise: ``arrival_ns`` is not after now)."""
        queue = self._queues.get(stream)
        if queue is None:
            queue = self._queues[stream] = deque()
        if not queue:
            heapq.heappush(self._heads, (arrival_ns, stream))
        queue.append((frame, arrival_ns))
        self.waiting += 1

    def due_at(self) -> int | None:
        """When the waiting frames must be sent even if no more join (None: nothing waits)."""
        if not self._heads:
            return None
        return self._heads[0][0] + self.max_wait_ns

    def take(self, now_ns: int) -> tuple[list[tuple[int, int]], list[int]] | None:
        """For a free worker at ``now_ns``: ``(batch, dropped)`` — the batch as ``(frame, stream)`` pairs,
        oldest stream first, at most one frame per stream — or None when it should wait (nothing waits,
        or fewer than ``max_batch`` streams wait and the oldest has waited less than ``max_wait_ns``)."""
        heads = self._heads
        if not heads:
            return None
        if len(heads) < self.max_batch and now_ns < heads[0][0] + self.max_wait_ns:
            return None
        batch: list[tuple[int, int]] = []
        dropped: list[int] = []
        again: list[tuple[int, int]] = []
        while heads and len(batch) < self.max_batch:
            _, stream = heapq.heappop(heads)
            queue = self._queues[stream]
            if self.drop:
                while len(queue) > 1:
                    dropped.append(queue.popleft()[0])
            frame, _ = queue.popleft()
            batch.append((frame, stream))
            if queue:
                again.append((queue[0][1], stream))
        for entry in again:
            heapq.heappush(heads, entry)
        self.waiting -= len(batch) + len(dropped)
        return batch, dropped

    def clear(self) -> list[int]:
        """Forget every waiting frame; their ids."""
        left = [frame for queue in self._queues.values() for frame, _ in queue]
        self._queues.clear()
        self._heads.clear()
        self.waiting = 0
        return left
