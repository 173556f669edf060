"""A sealed serving lane reads its worker as untrusted input (harness/execution/serving_lanes.py): bytes a
model writes to its worker's connection (adapters/faulty.py's ``garbage`` and ``raw``), a message cut off,
a control message answered with anything but its answer, a connection the model closed (``close_fds``) are
each a named failure at once, never a wait forever. The worker's side is played here by the other end of a
socket pair (the end-to-end runs with real workers: tests/harness/runs/test_capacity_faults_sealed.py)."""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection

import pytest

from streambench.adapters.faulty import GARBAGE
from streambench.harness.execution.sealed_feed import PIPE_LOST
from streambench.harness.execution.serving_lanes import (
    BadServingReply,
    SealedLane,
    ServingError,
    ServingTimeout,
    WorkerEnded,
)
from streambench.harness.execution.worker_replies import ReplyReader

STALL_S = 0.3


class _Ended:
    """The worker's process as the lane sees it once its connection closed."""

    pid = 4242
    exitcode = PIPE_LOST

    def join(self, timeout: float | None = None) -> None:
        pass


@pytest.fixture
def pair() -> Iterator[tuple[SealedLane, socket.socket]]:
    """A lane on one end of a socket pair (no worker process), and the worker's end."""
    mine, theirs = socket.socketpair()
    lane = SealedLane.__new__(SealedLane)  # the reading half of a lane: no process started
    lane.conn = Connection(mine.detach())
    lane.reader = ReplyReader(lane.conn, STALL_S)
    lane.process = _Ended()  # type: ignore[assignment]
    lane.timeout_s, lane.stall_s = 5.0, STALL_S
    yield lane, theirs
    lane.reader.close()
    lane.conn.close()
    theirs.close()


def _framed(data: bytes) -> bytes:
    return struct.pack("!i", len(data)) + data


def test_a_reply_is_read_as_it_was_framed(pair: tuple[SealedLane, socket.socket]) -> None:
    lane, worker = pair
    worker.sendall(_framed(b"R" + bytes(8)))
    assert lane.receive() == b"R" + bytes(8)


def test_unframed_bytes_are_no_reply_at_once(pair: tuple[SealedLane, socket.socket]) -> None:
    """``raw``: the first four bytes read as a length of 1.7 GB (before: a read waiting for it forever)."""
    lane, worker = pair
    worker.sendall(GARBAGE + _framed(b"R" + bytes(8)))  # the model's bytes, then the worker's real reply
    started = time.monotonic()
    with pytest.raises(
        BadServingReply, match=r"\(pid 4242\) sent what is no reply: a message of 1,734,439,522"
    ):
        lane.receive()
    assert time.monotonic() - started < STALL_S


def test_a_message_cut_off_is_no_reply_after_the_stall(pair: tuple[SealedLane, socket.socket]) -> None:
    lane, worker = pair
    worker.sendall(struct.pack("!i", 100) + bytes(10))
    with pytest.raises(BadServingReply, match=r"a message cut off: 10 of 100 bytes, then nothing for 0\.3 s"):
        lane.receive()


def test_a_connection_the_model_closed_names_the_worker_and_why(
    pair: tuple[SealedLane, socket.socket],
) -> None:
    """``close_fds``: the worker's end closed; the worker exits 74, which the lane names."""
    lane, worker = pair
    worker.close()
    with pytest.raises(WorkerEnded, match=r"\(pid 4242\) exited with code 74: its connection to the harness"):
        lane.receive()


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (_framed(GARBAGE), r"b'garbage bytes, not a reply' in answer to b'Z'"),  # ``garbage``, framed
        (_framed(b"E{not json"), r"an error reply to b'Z' that is not readable"),
        (_framed(b"E" + json.dumps({"message": "no type"}).encode()), r"an error reply to b'Z' that is not"),
    ],
)
def test_a_control_message_answered_with_what_is_no_answer(
    pair: tuple[SealedLane, socket.socket], answer: bytes, says: str
) -> None:
    lane, worker = pair
    worker.sendall(answer)
    with pytest.raises(BadServingReply, match=says):
        lane.request(b"Z", timeout_s=5.0)


def test_a_control_message_the_adapter_failed_on_is_its_error(pair: tuple[SealedLane, socket.socket]) -> None:
    lane, worker = pair
    worker.sendall(_framed(b"E" + json.dumps({"type": "RuntimeError", "message": "planted"}).encode()))
    with pytest.raises(ServingError, match=r"^RuntimeError: planted$") as raised:
        lane.request(b"Z", timeout_s=5.0)
    assert not isinstance(raised.value, BadServingReply)
    worker.sendall(_framed(b"Z"))
    assert lane.request(b"Z", timeout_s=5.0) == b"Z"


@pytest.mark.parametrize(
    ("serving", "prepared", "message", "limit"),
    [
        ("batched", 0, b"P" + (4).to_bytes(4, "little"), STALL_S),  # batched serving builds no instance
        ("replicas", 4, b"P" + (3).to_bytes(4, "little"), STALL_S),  # the worker holds enough: none built
        ("replicas", 0, b"Z", STALL_S),  # forgetting every stream is a reset, no build
        ("replicas", 2, b"P" + (3).to_bytes(4, "little"), 5.0),  # builds one more: the start timeout
    ],
)
def test_a_worker_that_stops_answering_between_points_is_ended_at_the_frame_timeout_unless_it_builds(
    pair: tuple[SealedLane, socket.socket], serving: str, prepared: int, message: bytes, limit: float
) -> None:
    """A control message waits as long as its work may take: the start timeout (5 s here) when it builds
    instances, else the frame timeout (``stall_s``): a stopped worker between points (SIGSTOP) ended the
    search only after the start timeout (300 s by default) whatever ``--frame-timeout`` said."""
    lane, _ = pair
    lane.builds, lane.prepared = serving == "replicas", prepared
    with pytest.raises(ServingTimeout, match=rf"did not answer {message[:1]!r} in {limit:g} s"):
        lane.request(message)


def test_a_prepare_answer_is_what_the_worker_holds(pair: tuple[SealedLane, socket.socket]) -> None:
    lane, worker = pair
    worker.sendall(_framed((5).to_bytes(4, "little")))
    lane.request(b"P" + (5).to_bytes(4, "little"))
    assert lane.prepared == 5
