"""What the parent reads from a worker (harness/execution/isolation.py), read as untrusted input.

The worker is the adapter's process (DESIGN.md "Causality": the trust boundary is the adapter's
process), and a model there can write to its connection's file descriptor as well as the harness can:
bytes that are no reply, a length that promises more than ever comes, a header that is not JSON or
lacks its fields, a recording that is not one. None of that may end the run or hang it: each is a
:class:`BadReply`, which the parent turns into that stream's failure
(:class:`~streambench.harness.execution.adapter_errors.AdapterWorkerError`) and a worker ended.

:class:`ReplyReader` reads one message as ``multiprocessing.connection`` frames it (a 4-byte big-endian
signed length, or -1 then an 8-byte length, then the bytes), never more than :data:`MAX_REPLY_BYTES`
and in chunks, with a deadline on every wait once a message has begun (a message cut off is a bad
reply, not a wait forever); its sends time out too (``SO_SNDTIMEO``: a worker that stops reading its
connection cannot block the parent). Its reads take the bytes already there without a system call more
than ``Connection.recv_bytes`` makes (``MSG_DONTWAIT``), so the pipe's floor is unchanged.
:func:`reply_header` and :func:`reply_recording` parse what was read.
"""

from __future__ import annotations

import io
import json
import os
import select
import socket
import struct
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from streambench.adapters.contract import Stream
from streambench.harness.execution.adapter_errors import AdapterError, AdapterOutputError
from streambench.protocols.recording import StreamRecording, from_arrays

__all__ = [
    "MAX_REPLY_BYTES",
    "BadReply",
    "ReplyReader",
    "asked_for",
    "check_shape",
    "reply_header",
    "reply_recording",
]

MAX_REPLY_BYTES = 1 << 30
"""The largest message a worker may send (1 GiB): a recording of one stream (latency, predictions and
scores, features where recorded) is far smaller; a length past it is bytes that are no reply."""

_CHUNK = 1 << 20  # read at most this much at once: a false length allocates nothing up front


class BadReply(Exception):
    """What the worker sent is not a valid reply; the message says how."""


class ReplyReader:
    """Reads framed messages from a worker's connection with a size limit and a stall deadline.

    ``stall_s``: the longest wait for the next bytes once a message has begun (and for a send to be
    taken); the caller waits for a message to begin (``Connection.poll``) under its own timeouts."""

    def __init__(self, conn: Connection, stall_s: float) -> None:
        # a second descriptor of the same socket: its reads and options are the connection's
        self._sock = socket.socket(fileno=os.dup(conn.fileno()))
        self._stall_s = stall_s
        seconds = int(stall_s)
        self._sock.setsockopt(
            socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", seconds, int((stall_s - seconds) * 1e6))
        )

    def close(self) -> None:
        self._sock.close()

    def read(self) -> bytes:
        """One message. Raises :class:`BadReply` (a length past the limit, bytes that stop mid-message
        for ``stall_s``), ``EOFError`` (the connection closed) or ``OSError``."""
        (size,) = struct.unpack("!i", self._exactly(4))
        if size == -1:
            (size,) = struct.unpack("!Q", self._exactly(8))
        if size < 0 or size > MAX_REPLY_BYTES:
            raise BadReply(f"a message of {size:,} bytes announced (at most {MAX_REPLY_BYTES:,} are read)")
        return self._exactly(size)

    def _exactly(self, size: int) -> bytes:
        parts: list[bytes] = []
        left = size
        while left:
            try:
                chunk = self._sock.recv(min(left, _CHUNK), socket.MSG_DONTWAIT)
            except BlockingIOError:
                ready, _, _ = select.select([self._sock], [], [], self._stall_s)
                if not ready:
                    got = size - left
                    raise BadReply(
                        f"a message cut off: {got:,} of {size:,} bytes, then nothing for {self._stall_s:g} s"
                    ) from None
                continue
            if not chunk:
                raise EOFError("the worker's connection closed")
            parts.append(chunk)
            left -= len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)


def reply_header(message: bytes, kinds: tuple[str, ...]) -> dict[str, Any]:
    """A reply header: a JSON object whose ``kind`` is one of ``kinds``; :class:`BadReply` otherwise."""
    try:
        header = json.loads(message)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested past the stack
        raise BadReply(f"not a reply header: {_preview(message)}") from None
    if not isinstance(header, dict):
        raise BadReply(f"not a reply header (a JSON {type(header).__name__}): {_preview(message)}")
    kind = header.get("kind")
    if kind not in kinds:
        raise BadReply(f"a reply of kind {_printable(repr(kind))} where {' or '.join(kinds)} was due")
    return header


def reply_recording(payload: bytes) -> StreamRecording:
    """The recording a worker sent (``numpy.savez`` bytes of one stream, loaded without pickle)."""
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
            (recording,) = from_arrays({key: arrays[key] for key in arrays.files})
    except Exception as exc:  # a zip that is no npz, arrays that are no recording, a bomb (MemoryError)
        raise BadReply(f"not a recording ({type(exc).__name__}: {_printable(str(exc))})") from None
    return recording


def _preview(data: bytes) -> str:
    """The start of what was sent, quoted and printable (shown on a console and in result.json)."""
    return repr(_printable(data.decode("latin-1")))


def _printable(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters, each one outside printable ASCII shown as ``?``."""
    shown = "".join(c if " " <= c <= "~" else "?" for c in text[:limit])
    return shown + ("..." if len(text) > limit else "")


def check_shape(recording: StreamRecording, stream: Stream, adapter: str) -> None:
    """A sealed worker's recording must fit the stream this process fed: one latency per frame, and
    predictions emitted in order at frames of the stream, labelling frames at or after 0. (Where each
    prediction was emitted is then checked against the outputs committed frame by frame:
    harness/execution/output_commits.py.)"""
    n = stream.num_frames
    emitted, refers = recording.emitted_at, recording.refers_to
    problems = []
    if recording.latency_ns.size != n:
        problems.append(f"{recording.latency_ns.size} latencies for {n} frames")
    if emitted.size != refers.size or emitted.size != recording.scores.shape[0]:
        problems.append("emitted_at, refers_to and scores differ in length")
    if emitted.size and (emitted.min() < 0 or emitted.max() >= n or (np.diff(emitted) < 0).any()):
        problems.append("predictions emitted out of order or outside the stream")
    if refers.size and refers.min() < 0:
        problems.append("a prediction labels a frame before the stream")
    if problems:
        problem = "the worker's recording: " + "; ".join(problems)
        raise AdapterOutputError(adapter, stream.stream_id, max(n - 1, 0), problem)


def asked_for(exc: AdapterError, stream_id: str) -> AdapterError:
    """``exc`` filed under the stream this process asked for, whatever stream the worker named."""
    return exc if exc.stream_id == stream_id else type(exc)(exc.adapter, stream_id, exc.frame, exc.problem)
