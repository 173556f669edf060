"""The sealed worker's frame feed (``--sealed``): the future does not exist in the adapter's
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
:func:`streambench.harness.execution.sealing.seal` hands it out in process. Nothing is pickled.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Literal, NoReturn

import numpy as np

from streambench.adapters.contract import Frame, Stream
from streambench.harness.execution.output_commits import Outbox
from streambench.harness.execution.sealing import SealedFeed

__all__ = [
    "CALIBRATION_FRAMES",
    "DONE",
    "NEXT",
    "PIPE_LOST",
    "Extra",
    "ParentFeed",
    "StreamsToFeed",
    "calibration_stream",
    "decode_frame",
    "encode_frame",
    "pipe_lost",
    "stream_header",
]

NEXT = b"N"
"""The worker's request for the next frame (sent after the previous ``predict()`` returned)."""
DONE = b"D"
"""The worker's word that the last frame's ``predict()`` returned and its output was taken: the end of
the last frame on the parent's clock (harness/execution/host_timing.py)."""


PIPE_LOST = 74
"""Exit status of a worker whose connection to the parent failed under it (closed, e.g. by the model
closing its process's file descriptors, or broken); the parent names it (worker_errors.py)."""


def pipe_lost() -> NoReturn:
    """End this worker at once and quietly with :data:`PIPE_LOST`: with its connection gone nothing can
    be reported, and a traceback would reach the harness's console (the worker's stderr is its own)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed by the model too
            continue
    os._exit(PIPE_LOST)


Extra = Literal["features", "weights"]
"""A prediction field the engine can record besides the scores (``EngineConfig.record``)."""


@dataclass(frozen=True)
class StreamsToFeed:
    """A protocol's own streams, fed in place of the run's data set (the hysteresis protocol's A→B→A
    streams): ``streams[0]`` is the sample the worker's data-bound options come from; ``warmup`` the
    warm-up stream (``None``: no warm-up)."""

    streams: Sequence[Stream]
    warmup: Stream | None


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
    token: str, frame_times: np.ndarray, t0: float, segment_length_s: float | None
) -> dict[str, Any]:
    """What the worker learns of a stream before its frames: an opaque token that names this one request
    (never the stream's id: the parent keeps the mapping, and a stream fed twice gets two tokens), the
    arrival times (hence its length and frame rate)."""
    return {"id": token, "times": [float(t) for t in frame_times], "t0": t0, "seg": segment_length_s}


class ParentFeed(SealedFeed):
    """Worker side: the frames of one stream, each fetched from the parent when the engine asks for it.
    ``len()`` is the stream's length (the worker knows it from the header); iterating sends
    :data:`NEXT` and waits for one frame, and :data:`DONE` once the engine asks past the last one."""

    def __init__(self, conn: Connection, num_frames: int, outbox: Outbox) -> None:
        self._conn = conn
        self._num_frames = num_frames
        self._outbox = outbox

    def __len__(self) -> int:
        return self._num_frames

    def __iter__(self) -> Iterator[Frame]:
        conn, take = self._conn, self._outbox.take  # each request carries the previous frame's output
        for _ in range(self._num_frames):
            try:
                conn.send_bytes(NEXT + take())
                data = conn.recv_bytes()
            except (OSError, EOFError):  # the connection is gone (closed by the model, or the parent's)
                pipe_lost()
            yield decode_frame(data)
        try:
            conn.send_bytes(DONE + take())
        except OSError:
            pipe_lost()


CALIBRATION_FRAMES = 64
"""Frames of the pipe's floor (harness/execution/host_timing.py): ~2-3 ms of a worker's start."""


def calibration_stream(sample: Stream, frames: int = CALIBRATION_FRAMES) -> Stream:
    """Noise frames with the layout of ``sample``'s first frame (the same modalities, dtypes and shapes,
    so the same bytes cross the pipe and are decoded), for the floor fed to the null adapter before the
    model is imported. Noise, not data: nothing of the data set reaches the worker this way."""
    first = next(iter(sample.frames()))
    rng = np.random.default_rng()
    layout = {name: None if value is None else np.asarray(value) for name, value in first.inputs.items()}

    def payload(value: np.ndarray | None) -> np.ndarray | None:
        if value is None:
            return None
        if value.dtype.kind == "f":
            return rng.standard_normal(value.shape).astype(value.dtype)
        return rng.integers(0, 2, size=value.shape).astype(value.dtype)

    period = float(np.median(np.diff(sample.frame_times))) if sample.num_frames > 1 else 0.04
    times = sample.t0 + period * np.arange(1, frames + 1)
    built = [
        Frame(index=i, t=float(t), inputs={name: payload(v) for name, v in layout.items()})
        for i, t in enumerate(times)
    ]
    return Stream(
        stream_id="calibration",
        classes=sample.classes,
        labels=np.zeros((frames, len(sample.classes)), dtype=bool),
        frame_times=times,
        frame_source=lambda: built,
        modalities=sample.modalities,
        t0=sample.t0,
    )
