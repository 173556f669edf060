"""What the load generator (harness/execution/load_generator.py) makes of a serving worker's reply that is
not one: bytes a model wrote to its worker's connection in place of the reply, a lane that found no reply,
a reply whose counts do not hold its bytes. Each is the point's failure naming the frames of the batch it
answered (simulated clock: tests/harness/execution/capacity_sim.py)."""

from __future__ import annotations

import re
import struct

import pytest

from streambench.adapters.faulty import GARBAGE
from streambench.harness.execution.capacity_search import SourceStreams
from streambench.harness.execution.load_generator import PointFailure, run_point
from streambench.harness.execution.serving_lanes import BadServingReply
from tests.harness.execution.capacity_sim import SimClock, SimLane, _core, _setup, _stream

SOURCES = SourceStreams.of([_stream(f"s{k}", 20.0, 10, k) for k in range(2)])


class SpoilingLane(SimLane):
    """Serves honestly, but its ``spoil``-th reply is replaced by what ``spoiled`` makes of it."""

    def __init__(self, clock: SimClock, spoil: int, spoiled: object) -> None:
        super().__init__(clock, _core("batched", 4), 1_000_000)
        self.spoil, self.spoiled, self.replies = spoil, spoiled, 0

    def receive(self) -> bytes:
        reply = super().receive()
        self.replies += 1
        if self.replies != self.spoil:
            return reply
        if isinstance(self.spoiled, BaseException):
            raise self.spoiled
        return self.spoiled(reply)  # type: ignore[operator]


def _point(lane: SpoilingLane) -> PointFailure:
    setup = _setup(SOURCES, 2, 200_000_000, 1, max_batch=4, max_wait_ns=25_000_000, deadline_ns=10**9)
    with pytest.raises(PointFailure) as failed:
        run_point(setup, [lane], lane.clock)
    return failed.value


def _batch_of(lane: SpoilingLane, reply: int) -> list[int]:
    """The frame indices (in their streams) of the batch that got the ``reply``-th reply."""
    return lane.sent[reply - 1][2]


@pytest.mark.parametrize(
    ("spoiled", "says"),
    [
        (lambda reply: GARBAGE, r"the worker sent what is no reply: b'garbage bytes, not a reply'"),
        (BadServingReply("the serving worker (pid 7) sent what is no reply: a message of"), r"\(pid 7\)"),
        (lambda reply: reply[:-4], r"announces 2 item\(s\) and 2 prediction\(s\), 49 bytes: it holds 45"),
        (lambda reply: b"R" + struct.pack("<II", 1, 0) + bytes(4), r"answers 1 frame\(s\) of a batch of 2"),
    ],
    ids=["garbage", "bad reply", "cut short", "fewer items"],
)
def test_a_reply_that_is_none_fails_the_point_at_its_batch(spoiled: object, says: str) -> None:
    clock = SimClock()
    lane = SpoilingLane(clock, 3, spoiled)
    failure = _point(lane)
    assert failure.kind == "error" and failure.error_type == "BadReply"
    assert re.search(says, str(failure)), str(failure)
    setup = _setup(SOURCES, 2, 200_000_000, 1, max_batch=4, max_wait_ns=25_000_000, deadline_ns=10**9)
    named = sorted(int(setup.schedule.frame[f]) for f in failure.frames)
    assert named == sorted(_batch_of(lane, 3)) and len(named) == 2  # the third batch: both streams' frame
