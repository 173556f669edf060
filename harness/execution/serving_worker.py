"""The serving side of the capacity protocol: the adapter answering batches of frames of many
live streams, in a sealed worker process or in this one.

The load generator (harness/execution/load_generator.py) sends a worker a batch only when the worker is
free, and only of frames that have arrived, so the worker's process never holds a frame before its
arrival, nor anything of another stream's future; it learns no stream id, only an opaque key per
stream (a fresh one for every stream: DESIGN.md "Causality", "the worker is told only what the model
needs").

Two ways to serve (``CapacityConfig.serving``):

- ``replicas``: one frame per batch; each stream gets an adapter instance of its own from this worker's
  pool (built before the point, ``reset_state()`` at the stream's first frame, back to the pool after its
  last), fed through ``predict()``: a worker holding many streams keeps each one's state apart, as a
  server keeps a session per client;
- ``batched``: one frame of each of several streams per call of the adapter's ``predict_batch`` (the
  adapter keeps a state per key, adapters/contract.py).

Messages are bytes, nothing pickled. A batch: ``b"B"``, the item count (u32), then per item its key
(i64), flags (u8: 1 = a stream's first frame, 2 = its last) and the length (u32) of the frame's bytes
(:func:`streambench.harness.execution.sealed_feed.encode_frame`). The reply: ``b"R"``, item and
prediction counts (u32, u32), the predictions per item (i32 ``[n]``), each prediction's ``refers_to``
(i64 ``[P]``, -1: the frame itself) and its scores (f32 ``[P, C]``); or ``b"E"`` and a JSON error.
"""

from __future__ import annotations

import json
import struct
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.adapters.contract import Adapter, Frame, Prediction, PredictOutput, StreamKey
from streambench.harness.execution.adapter_errors import TRACEBACK_LIMIT, bounded
from streambench.harness.execution.outputs import MAX_REF
from streambench.harness.execution.sealed_feed import decode_frame, pipe_lost
from streambench.harness.instruments.threads import ThreadConfig

__all__ = [
    "FIRST",
    "LAST",
    "SERVING_MARK",
    "ServingCore",
    "ServingError",
    "ServingSpec",
    "decode_reply",
    "encode_batch",
    "serving_main",
]

FIRST, LAST = 1, 2
"""Item flags: the frame is its stream's first (a fresh state) / last (its instance goes back)."""
SERVING_MARK = "serving:"
"""Prefix of a serving worker's spec on the sealed worker's pipe (harness/execution/sealed_worker.py)."""
_ITEM = struct.Struct("<qBI")
_COUNT = struct.Struct("<I")
_REPLY = struct.Struct("<II")


class ServingError(RuntimeError):
    """The adapter failed on an item of a batch (``item``: its position; -1: the batch as a whole)."""

    def __init__(self, message: str, item: int = -1) -> None:
        super().__init__(message)
        self.item = item


class ServingSpec(BaseModel):
    """What a serving worker is told: the adapter, its options and data-bound options, how it serves."""

    model_config = ConfigDict(extra="forbid")

    adapter: str
    adapter_options: dict[str, Any] = Field(default_factory=dict)
    data_bound: dict[str, Any]
    threads: ThreadConfig = Field(default_factory=ThreadConfig)
    torch_seed: int = 0
    serving: str = "replicas"
    max_batch: int = 1
    memory_limit_mb: int | None = Field(
        None, description="address space the adapter may add once built (RLIMIT_AS, as --memory-limit-mb)"
    )


def encode_batch(items: Sequence[tuple[StreamKey, int, bytes]]) -> bytes:
    """A batch message from ``(key, flags, frame bytes)`` items."""
    parts = [b"B", _COUNT.pack(len(items))]
    for key, flags, data in items:
        parts.append(_ITEM.pack(key, flags, len(data)))
        parts.append(data)
    return b"".join(parts)


def _decode_batch(message: bytes) -> list[tuple[StreamKey, int, Frame]]:
    (count,) = _COUNT.unpack_from(message, 1)
    offset = 1 + _COUNT.size
    items = []
    for _ in range(count):
        key, flags, size = _ITEM.unpack_from(message, offset)
        offset += _ITEM.size
        items.append((key, flags, decode_frame(message[offset : offset + size])))
        offset += size
    return items


def _encode_reply(outputs: Sequence[PredictOutput], num_classes: int) -> bytes:
    counts = np.zeros(len(outputs), dtype=np.int32)
    refers: list[int] = []
    scores: list[np.ndarray] = []
    for b, out in enumerate(outputs):
        predictions = [] if out is None else [out] if isinstance(out, Prediction) else list(out)
        counts[b] = len(predictions)
        for prediction in predictions:
            if not isinstance(prediction, Prediction):
                raise ServingError(f"returned {type(prediction).__name__}, expected a Prediction", b)
            row = np.asarray(prediction.scores, dtype=np.float32).reshape(-1)
            if row.size != num_classes:
                raise ServingError(
                    f"scores of shape {np.shape(prediction.scores)}, expected ({num_classes},)", b
                )
            refers.append(_frame_index(prediction.refers_to, b))
            scores.append(row)
    block = np.stack(scores) if scores else np.zeros((0, num_classes), dtype=np.float32)
    head = b"R" + _REPLY.pack(len(outputs), len(refers))
    return head + counts.tobytes() + np.asarray(refers, dtype=np.int64).tobytes() + block.tobytes()


def _frame_index(ref: object, item: int) -> int:
    """A prediction's ``refers_to`` as a reply carries it (-1: the frame itself): an int that an int64
    holds, not negative, as the online engine checks it (harness/execution/outputs.py ``check_ref``); a
    string, a float or a bool is not converted."""
    if ref is None:
        return -1
    if isinstance(ref, bool) or not isinstance(ref, (int, np.integer)):
        raise ServingError(f"refers_to={ref!r} is not a frame index (int)", item)
    value = int(ref)
    if not 0 <= value <= MAX_REF:
        raise ServingError(f"refers_to={value} is outside [0, 2**63 - 1]", item)
    return value


def decode_reply(
    message: bytes, num_classes: int, items: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(predictions per item [n], refers_to [P] (-1: the frame itself), scores [P, C])`` of a batch of
    ``items`` frames (None: any number); a ``b"E"`` reply raises :class:`ServingError` with the worker's
    message, and so does a reply that is not one (the worker's process is untrusted: its bytes are checked
    against the counts they announce)."""
    if message[:1] == b"E":
        error = json.loads(message[1:])
        raise ServingError(f"{error['type']}: {error['message']}", int(error.get("item", -1)))
    if message[:1] != b"R" or len(message) < 1 + _REPLY.size:
        raise ServingError(f"the worker sent what is no reply: {message[:60]!r}")
    n, p = _REPLY.unpack_from(message, 1)
    size = 1 + _REPLY.size + 4 * n + (8 + 4 * num_classes) * p
    if len(message) != size:
        raise ServingError(
            f"the worker's reply announces {n} item(s) and {p} prediction(s), {size:,} bytes: it holds "
            f"{len(message):,}"
        )
    if items is not None and n != items:
        raise ServingError(f"the worker's reply answers {n} frame(s) of a batch of {items}")
    offset = 1 + _REPLY.size
    counts = np.frombuffer(message, dtype=np.int32, count=n, offset=offset)
    offset += 4 * n
    refers = np.frombuffer(message, dtype=np.int64, count=p, offset=offset)
    offset += 8 * p
    scores = np.frombuffer(message, dtype=np.float32, count=p * num_classes, offset=offset)
    if (counts < 0).any() or int(counts.sum()) != p or (refers < -1).any():
        raise ServingError("the worker's reply: predictions per frame that do not add up, or refers_to < 0")
    return counts, refers, scores.reshape(p, num_classes)


class ServingCore:
    """The adapter(s) of one worker and how a batch is served (module docstring)."""

    def __init__(self, build: Callable[[], Adapter], serving: str, max_batch: int) -> None:
        self.build = build
        self.serving = serving
        self.adapter = build()
        self.num_classes = len(self.adapter.info.classes)
        self.max_batch_size = int(getattr(self.adapter, "max_batch_size", 0) or 0)
        if serving == "batched" and max_batch > self.max_batch_size:
            name = self.adapter.info.name
            refused = (
                "has no batch mode" if not self.max_batch_size else f"takes at most {self.max_batch_size}"
            )
            raise ValueError(f"max_batch = {max_batch}: adapter {name!r} {refused} (predict_batch)")
        self._free: list[Adapter] = [self.adapter]
        self._active: dict[StreamKey, Adapter] = {}

    def prepare(self, streams: int) -> int:
        """Replicas: instances for ``streams`` streams at once, built before the point (not timed)."""
        while self.serving == "replicas" and len(self._free) + len(self._active) < streams:
            self._free.append(self.build())
        return len(self._free) + len(self._active)

    def reset(self) -> None:
        """Forget every stream (between points)."""
        self._free.extend(self._active.values())
        self._active.clear()
        for adapter in self._free:
            adapter.reset_state()

    def warm(self, encoded: Sequence[bytes], max_batch: int) -> int:
        """Feed the (public) warm-up frames, each decoded only when its turn comes (nothing of a stream's
        future exists here before it is fed, warm-up included), then forget them; the frames fed."""
        step = max_batch if self.serving == "batched" else 1
        for start in range(0, len(encoded), step):
            chunk = [decode_frame(data) for data in encoded[start : start + step]]
            if self.serving == "batched":
                self.adapter.predict_batch([(-1 - k, f) for k, f in enumerate(chunk)])  # type: ignore[attr-defined]
            else:
                self.adapter.predict(chunk[0])
            del chunk
        self.reset()
        return len(encoded)

    def serve(self, message: bytes) -> bytes:
        """One batch message in, its reply out (errors as a ``b"E"`` reply)."""
        position = -1
        try:
            items = _decode_batch(message)
            if self.serving == "batched":
                outputs = self.adapter.predict_batch([(key, frame) for key, _, frame in items])  # type: ignore[attr-defined]
                if not isinstance(outputs, (list, tuple)):
                    raise ServingError(
                        f"predict_batch returned {type(outputs).__name__}, expected a list of {len(items)} "
                        "outputs"
                    )
                if len(outputs) != len(items):
                    raise ServingError(
                        f"predict_batch returned {len(outputs)} outputs for {len(items)} frames"
                    )
            else:
                outputs = []
                for key, flags, frame in items:
                    position += 1
                    if flags & FIRST:
                        adapter = self._free.pop() if self._free else self.build()
                        adapter.reset_state()
                        self._active[key] = adapter
                    outputs.append(self._active[key].predict(frame))
                    if flags & LAST:
                        self._free.append(self._active.pop(key))
            return _encode_reply(outputs, self.num_classes)
        except BaseException as exc:  # SIGINT is ignored in a worker: a KeyboardInterrupt is the model's
            item = exc.item if isinstance(exc, ServingError) else position
            trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            error = {"type": type(exc).__name__, "message": bounded(str(exc)), "item": item}
            error["traceback"] = bounded(trace, TRACEBACK_LIMIT)
            return b"E" + json.dumps(error).encode()


def serving_main(spec_json: str, conn: Connection, slot: Any) -> None:
    """Entry point of a sealed serving worker (harness/execution/sealed_worker.py hands over its pipe once
    the sandbox is entered). Replies ``ready`` (or ``failed``), then serves: ``B`` batches, ``P`` + u32
    (prepare instances), ``W`` + frames (warm up), ``Z`` (forget every stream), ``C`` (close). An adapter
    failure on ``P``, ``W`` or ``Z`` is answered ``b"E"`` and a JSON error, as a batch's, and the worker
    serves on; ``memory_limit_mb`` caps the address space once the adapter is built (RLIMIT_AS)."""
    from streambench.adapters.registry import create_adapter
    from streambench.harness.execution.isolation_worker import limit_memory
    from streambench.harness.execution.torch_setup import configure_torch_when_imported

    note = None
    try:
        spec = ServingSpec.model_validate_json(spec_json)
        configured = configure_torch_when_imported(spec.threads, spec.torch_seed)
        bound = {
            "classes": tuple(spec.data_bound["classes"]),
            "input_dims": dict(spec.data_bound["input_dims"]),
        }
        core = ServingCore(
            lambda: create_adapter(spec.adapter, spec.adapter_options, data_bound=bound),
            spec.serving,
            spec.max_batch,
        )
        configured()
        if spec.memory_limit_mb is not None:  # once built, as the isolated worker does
            note = limit_memory(spec.memory_limit_mb)
    except Exception as exc:
        conn.send_bytes(
            json.dumps({"kind": "failed", "type": type(exc).__name__, "message": str(exc)}).encode()
        )
        return
    info = core.adapter.info.model_dump(mode="json")
    ready = {"kind": "ready", "info": info, "max_batch_size": core.max_batch_size, "memory_limit_note": note}
    _send(conn, json.dumps(ready).encode())
    while True:
        try:
            message = conn.recv_bytes()
        except EOFError:  # the harness closed its end
            return
        except OSError:  # this end is: closed (by the model) or broken
            pipe_lost()
        kind = message[:1]
        if kind == b"B":
            _send(conn, core.serve(message))
            continue
        if kind not in (b"P", b"W", b"Z"):
            return
        try:
            if kind == b"P":
                answer = _COUNT.pack(core.prepare(_COUNT.unpack_from(message, 1)[0]))
            elif kind == b"W":
                answer = _COUNT.pack(core.warm(_split_frames(message[1:]), spec.max_batch))
            else:
                core.reset()
                answer = b"Z"
        except BaseException as exc:  # the adapter failed outside a batch (building, warming up, resetting)
            answer = b"E" + json.dumps({"type": type(exc).__name__, "message": str(exc), "item": -1}).encode()
        _send(conn, answer)


def _send(conn: Connection, message: bytes) -> None:
    """A reply to the harness; a connection that failed under this worker (closed by the model closing
    its process's descriptors, or broken) ends the worker quietly (:func:`pipe_lost`, exit 74)."""
    try:
        conn.send_bytes(message)
    except OSError:
        pipe_lost()


def join_frames(frames: Sequence[bytes]) -> bytes:
    """Encoded frames in one message body (u32 length before each)."""
    return b"".join(_COUNT.pack(len(f)) + f for f in frames)


def _split_frames(body: bytes) -> list[bytes]:
    parts, offset = [], 0
    while offset < len(body):
        (size,) = _COUNT.unpack_from(body, offset)
        parts.append(body[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return parts
