"""The parent reads a worker's connection as untrusted input (harness/execution/worker_replies.py): a
framed message as ``multiprocessing.connection`` sends it; a length past the limit, a message cut off,
a header that is no JSON object of an expected kind, a recording that is no recording are each a
:class:`BadReply` at once or after the stall deadline, never a wait forever nor an error that ends
the run."""

from __future__ import annotations

import io
import os
import socket
import struct
import threading
from collections.abc import Iterator
from multiprocessing.connection import Connection

import numpy as np
import pytest

from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.worker_replies import (
    MAX_REPLY_BYTES,
    BadReply,
    ReplyReader,
    reply_header,
    reply_recording,
)
from streambench.protocols.recording import to_arrays
from tests.support import ScriptedAdapter, constant, make_stream

STALL_S = 0.2


@pytest.fixture
def pipe() -> Iterator[tuple[ReplyReader, Connection, socket.socket]]:
    """The parent's reader, the worker's connection and a raw handle on the worker's socket (what a
    model writing to its process's file descriptors holds)."""
    parent, child = socket.socketpair()
    parent_conn, child_conn = Connection(parent.detach()), Connection(child.detach())
    reader = ReplyReader(parent_conn, STALL_S)
    raw = socket.socket(fileno=os.dup(child_conn.fileno()))
    yield reader, child_conn, raw
    reader.close()
    raw.close()
    parent_conn.close()
    child_conn.close()


def test_framed_messages_are_read_whole_small_and_large(
    pipe: tuple[ReplyReader, Connection, socket.socket],
) -> None:
    reader, child, _ = pipe
    big = bytes(range(256)) * 40_000  # 10 MB: more than the socket holds, sent while being read
    sender = threading.Thread(target=lambda: [child.send_bytes(b'{"kind": "ok"}'), child.send_bytes(big)])
    sender.start()
    assert reader.read() == b'{"kind": "ok"}'
    assert reader.read() == big
    sender.join()


@pytest.mark.parametrize(
    ("sent", "announced"),
    [
        (b"garbage bytes on the pipe", "1,734,439,522"),  # b"garb" read as a length
        (struct.pack("!i", -1) + struct.pack("!Q", 2**62), "4,611,686,018,427,387,904"),  # 8-byte length
        (struct.pack("!i", -7), "-7"),
    ],
)
def test_a_length_past_the_limit_is_a_bad_reply_at_once(
    pipe: tuple[ReplyReader, Connection, socket.socket], sent: bytes, announced: str
) -> None:
    reader, _, raw = pipe
    raw.sendall(sent)
    with pytest.raises(BadReply, match=f"a message of {announced} bytes announced"):
        reader.read()
    assert MAX_REPLY_BYTES == 2**30


def test_a_message_cut_off_is_a_bad_reply_after_the_stall_deadline(
    pipe: tuple[ReplyReader, Connection, socket.socket],
) -> None:
    reader, _, raw = pipe
    raw.sendall(struct.pack("!i", 1000) + b"x" * 10)  # promises 1000 bytes, sends 10, then nothing
    with pytest.raises(BadReply, match=r"a message cut off: 10 of 1,000 bytes, then nothing for 0.2 s"):
        reader.read()


def test_a_closed_connection_is_end_of_file(pipe: tuple[ReplyReader, Connection, socket.socket]) -> None:
    reader, child, raw = pipe
    raw.sendall(struct.pack("!i", 50) + b"y" * 5)
    raw.close()
    child.close()
    with pytest.raises(EOFError):
        reader.read()


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (b"garbage bytes, not a reply", "not a reply header: 'garbage bytes, not a reply'"),
        (b"\xff\xfe\x00", "not a reply header: '\\?\\?\\?'"),
        (b"[1, 2]", "a JSON list"),
        (b'{"kind": "ready"}', "a reply of kind 'ready' where ok or adapter_error or failed was due"),
        (b'{"no": "kind"}', "a reply of kind None where"),
        (b"[" * 100_000, "not a reply header"),
    ],
)
def test_a_header_that_is_not_one_is_a_bad_reply(message: bytes, problem: str) -> None:
    with pytest.raises(BadReply, match=problem):
        reply_header(message, ("ok", "adapter_error", "failed"))
    assert reply_header(b'{"kind": "ok", "x": 1}', ("ok",)) == {"kind": "ok", "x": 1}


def test_a_recording_that_is_not_one_is_a_bad_reply() -> None:
    engine = Engine(ScriptedAdapter(constant([0.5, 0.5])), EngineConfig(warmup_frames=0))
    recording = engine.run_stream(make_stream(num_frames=3))
    buffer = io.BytesIO()
    np.savez(buffer, **to_arrays([recording]))  # type: ignore[arg-type]
    assert reply_recording(buffer.getvalue()).num_frames == 3
    with pytest.raises(BadReply, match="not a recording"):
        reply_recording(b"PK\x03\x04 not a zip")
    other = io.BytesIO()
    np.savez(other, anything=np.zeros(3))
    with pytest.raises(BadReply, match="not a recording"):
        reply_recording(other.getvalue())
