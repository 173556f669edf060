"""The sealed worker's frame feed (issue 15; ``--sealed``): the future does not exist in the adapter's
process.

Under ``--isolate --sealed`` the worker builds no data set. For each stream the parent sends a header
(the stream's id, length and arrival times; never a payload and never a label), then serves the frames
one at a time: the worker's engine asks for frame ``i + 1`` (the one-byte message :data:`NEXT`) only
after ``predict()`` of frame ``i`` has returned and its output was taken, and the parent answers with
that one frame. So a model that walks the call stack (``sys._getframe``) or the garbage collector for
the engine's frame list finds the frames already sent and nothing else; labels never reach the worker.

A frame travels as bytes: a JSON header (index, time, per-modality timestamps, and for each payload its
dtype and shape, or ``None`` for a missing modality), a NUL byte, then the payloads' raw bytes in order.
The worker rebuilds each payload as an array that owns its memory and is read-only, exactly as
:func:`harness.execution.sealing.seal` hands it out in process. Nothing is pickled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from adapters.contract import Frame
from harness.execution.sealing import SealedFeed

__all__ = ["NEXT", "ParentFeed", "decode_frame", "encode_frame", "stream_header"]

NEXT = b"N"
"""The worker's request for the next frame (sent after the previous ``predict()`` returned)."""


def encode_frame(frame: Frame) -> bytes:
    """One frame as bytes: JSON header, NUL, raw payload bytes (C order)."""
    layout: list[Any] = []
    body: list[bytes] = []
    for name, value in frame.inputs.items():
        if value is None:
            layout.append([name, None, None])
            continue
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise TypeError(
                f"frame {frame.index}: payload {name!r} holds Python objects; a sealed worker needs arrays"
            )
        layout.append([name, array.dtype.str, list(array.shape)])
        body.append(array.tobytes())
    header = {"i": frame.index, "t": frame.t, "ts": dict(frame.timestamps or {}) or None, "m": layout}
    return json.dumps(header).encode() + b"\0" + b"".join(body)


def decode_frame(data: bytes) -> Frame:
    """Inverse of :func:`encode_frame`; every payload a read-only array that owns its memory."""
    split = data.index(b"\0")
    header = json.loads(data[:split])
    view = memoryview(data)[split + 1 :]
    inputs: dict[str, Any] = {}
    offset = 0
    for name, dtype, shape in header["m"]:
        if dtype is None:
            inputs[name] = None
            continue
        kind = np.dtype(dtype)
        size = kind.itemsize * int(np.prod(shape, dtype=np.int64))
        array = np.frombuffer(view[offset : offset + size], dtype=kind).reshape(shape).copy()
        array.flags.writeable = False
        inputs[name] = array
        offset += size
    return Frame(index=int(header["i"]), t=float(header["t"]), inputs=inputs, timestamps=header["ts"])


def stream_header(
    stream_id: str, frame_times: np.ndarray, t0: float, segment_length_s: float | None
) -> dict[str, Any]:
    """What the worker learns of a stream before its frames: id, arrival times (hence its length)."""
    return {"id": stream_id, "times": [float(t) for t in frame_times], "t0": t0, "seg": segment_length_s}


class ParentFeed(SealedFeed):
    """Worker side: the frames of one stream, each fetched from the parent when the engine asks for it.
    ``len()`` is the stream's length (the worker knows it from the header); iterating sends
    :data:`NEXT` and waits for one frame."""

    def __init__(self, conn: Connection, num_frames: int) -> None:
        self._conn = conn
        self._num_frames = num_frames

    def __len__(self) -> int:
        return self._num_frames

    def __iter__(self) -> Iterator[Frame]:
        conn = self._conn
        for _ in range(self._num_frames):
            conn.send_bytes(NEXT)
            yield decode_frame(conn.recv_bytes())
