"""A content hash of the streams a run was measured on (the "data hash" of the environment manifest).

Seed 004 §6.2.2's environment lock list ("环境锁定清单") pins everything a number depends on; the data is
one of them. :func:`hash_streams` is a sha256 over what the model saw and what it was scored against:
each stream's id, classes, modalities, ``t0``, segment length, frame times and labels, then every frame
(``stream.frames()``): index, arrival time, per-modality timestamps and payload bytes. The same data set
(e.g. the synthetic one with the same config and seed) gives the same hash on any machine: every field
is length-prefixed, arrays are hashed with their dtype and shape in little-endian byte order, and
streams are taken in order of their ids. ``Stream.meta`` is not hashed (it annotates, it is not data).
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Iterable
from typing import Any

import numpy as np

from streambench.adapters.contract import Stream

__all__ = ["hash_streams"]

_VERSION = b"streambench-data-hash-v1"


class _Hasher:
    def __init__(self) -> None:
        self.digest = hashlib.sha256(_VERSION)

    def bytes(self, data: bytes) -> None:
        self.digest.update(struct.pack("<Q", len(data)))
        self.digest.update(data)

    def text(self, value: str) -> None:
        self.bytes(value.encode("utf-8"))

    def number(self, value: float | None) -> None:
        if value is None:
            self.bytes(b"none")
        else:
            self.bytes(struct.pack("<d", float(value)) if not math.isnan(value) else b"nan")

    def array(self, value: np.ndarray) -> None:
        if value.dtype.hasobject:
            raise TypeError("object arrays have no stable byte representation")
        little = value.astype(value.dtype.newbyteorder("<"), copy=False)
        self.text(little.dtype.str)
        self.text(repr(tuple(int(n) for n in little.shape)))
        self.bytes(np.ascontiguousarray(little).tobytes())


def _payload(hasher: _Hasher, value: Any) -> None:
    if value is None:
        hasher.text("missing")
    elif isinstance(value, (bytes, bytearray, memoryview)):
        hasher.text("bytes")
        hasher.bytes(bytes(value))
    else:
        array = value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)
        hasher.text("array")
        hasher.array(array)


def hash_streams(streams: Iterable[Stream]) -> str:
    """sha256 hex digest (64 characters) of the streams' ids, times, labels and payloads.

    Raises ``ValueError`` on duplicate stream ids and ``TypeError`` (naming the stream and frame) on a
    payload that has no stable byte representation.
    """
    ordered = sorted(streams, key=lambda s: s.stream_id)
    ids = [s.stream_id for s in ordered]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate stream ids: {sorted({i for i in ids if ids.count(i) > 1})[:5]}")
    hasher = _Hasher()
    hasher.number(len(ordered))
    for stream in ordered:
        hasher.text("stream")
        hasher.text(stream.stream_id)
        hasher.text("\x1f".join(stream.classes))
        hasher.text("\x1f".join(stream.modalities))
        hasher.number(stream.t0)
        hasher.number(stream.segment_length_s)
        hasher.array(np.asarray(stream.frame_times, dtype=np.float64))
        hasher.array(np.asarray(stream.labels, dtype=bool))
        count = 0
        for frame in stream.frames():
            count += 1
            hasher.number(frame.index)
            hasher.number(frame.t)
            stamps = frame.timestamps or {}
            for name in sorted(set(frame.inputs) | set(stamps)):
                hasher.text(name)
                hasher.number(stamps.get(name))
                try:
                    _payload(hasher, frame.inputs.get(name))
                except TypeError as exc:
                    raise TypeError(
                        f"stream {stream.stream_id!r}, frame {frame.index}, modality {name!r}: {exc}"
                    ) from None
        hasher.number(count)
    return hasher.digest.hexdigest()
