"""Two sealed workers fed frame by frame in turn: the ``alternate`` mode of the A/B gate
(harness/execution/rounds.py).

The parent hands a sealed worker each frame when the worker asks for it (harness/execution/frame_server.py).
Here two workers, base and head, each running its own copy of the same streams in a thread of this
process, take turns: a worker's frame is sent only when the other's last frame has ended, so the two
sides' frames alternate one by one and every pair of neighbouring frames meets the machine in the same
state (its load, the other core's work, the CPU's speed). A drift of the load between rounds, which
interleaved rounds can only cancel on average, is cancelled frame by frame. The worker's own timing is
untouched: a frame's wait for its turn happens before it is sent, outside ``predict()``'s timed window,
and the parent's own clock stamps the frame when it is sent, after the wait.

A side that ends (its round done, or failed) leaves, and the other side no longer waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

__all__ = ["Lockstep", "LockstepTimeout", "Turn"]


class LockstepTimeout(RuntimeError):
    """A side waited longer than its limit for the other side's frame to end."""


class Lockstep:
    """The turn shared by two sides: whose frame is sent next."""

    def __init__(self, labels: Sequence[str], first: str) -> None:
        if first not in labels or len(set(labels)) != 2:
            raise ValueError(f"lockstep: two sides and one of them first, got {list(labels)}, {first!r}")
        self._condition = threading.Condition()
        self._labels = tuple(labels)
        self._turn = first
        self._present = set(labels)

    def turn(self, label: str) -> Turn:
        """The handle one side's thread uses."""
        if label not in self._labels:
            raise ValueError(f"lockstep: {label!r} is not a side ({', '.join(self._labels)})")
        return Turn(self, label)

    def _other(self, label: str) -> str:
        return self._labels[1] if label == self._labels[0] else self._labels[0]

    def _pass(self, label: str) -> None:
        with self._condition:
            if self._turn == label and self._other(label) in self._present:
                self._turn = self._other(label)
                self._condition.notify_all()

    def _wait(self, label: str, limit_s: float) -> None:
        with self._condition:
            ready = self._condition.wait_for(
                lambda: self._turn == label or self._other(label) not in self._present, timeout=limit_s
            )
            if not ready:
                raise LockstepTimeout(
                    f"{label} waited {limit_s:g} s for {self._other(label)}'s frame to end (lockstep)"
                )
            self._turn = label

    def _leave(self, label: str) -> None:
        with self._condition:
            self._present.discard(label)
            self._condition.notify_all()


class Turn:
    """One side's part: :meth:`wait` before its next frame is sent, :meth:`ended` when the worker asks
    for a frame or says its stream is done (its frame in flight, if any, has ended: the other side's
    turn), :meth:`leave` when its round is over."""

    def __init__(self, lockstep: Lockstep, label: str, limit_s: float = 300.0) -> None:
        self._lockstep = lockstep
        self._holding = False  # a frame of this side was sent and has not ended yet
        self.label = label
        self.limit_s = limit_s

    def ended(self) -> None:
        if self._holding:
            self._holding = False
            self._lockstep._pass(self.label)

    def wait(self) -> None:
        self._lockstep._wait(self.label, self.limit_s)
        self._holding = True

    def leave(self) -> None:
        self._lockstep._leave(self.label)
