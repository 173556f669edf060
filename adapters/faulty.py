"""A planted faulty adapter: an honest, cheap causal model that fails *on purpose*, where told.

A test fixture, not a model (the isolation tests of ``harness/execution/isolation.py`` and the engine's own
error tests use it). It commits one fault — ``fault`` — on one stream at one frame (``more_faults`` plants
further ones, each on its own stream, for a run with several faulty streams), and behaves honestly
everywhere else, so that every other stream of a run is scored as usual:

========  =====================================================================================
fault     at frame ``at_frame`` of the chosen stream, ``predict()`` ...
========  =====================================================================================
none      ... does nothing wrong (the control)
raise     ... raises ``RuntimeError``
nan       ... returns scores that contain NaN
shape     ... returns scores of shape ``[C + 1]`` instead of ``[C]``
hang      ... never returns (sleeps forever; only a timeout under ``--isolate`` ends it)
exit      ... ends its own process with ``os._exit(EXIT_CODE)`` (no clean-up, no exception)
segv      ... sends its own process ``SIGSEGV``
leak      ... and at every later frame of the stream, allocates ``leak_mb_per_frame`` MiB that it
          never frees (not even in ``reset_state()``), until the memory limit stops it
huge_ref  ... returns a prediction whose ``refers_to`` is ``2**80``, a frame index no int64 holds
garbage   ... writes a framed message that is no reply (not JSON) to every socket its process holds
          (a worker's connection to the harness), then answers as usual
raw       ... writes unframed bytes to those sockets (their first four read as a length of 1.7 GB)
close_fds ... closes every file descriptor of its process from 3 up (a worker's connection among them)
keyboard  ... raises ``KeyboardInterrupt`` (as a model's own code may; not a Ctrl-C)
base      ... raises :class:`PlantedBaseException`, a ``BaseException`` that is no ``Exception``
genexit   ... raises ``GeneratorExit``
sysexit   ... raises ``SystemExit(0)`` (``sys.exit()`` in a model)
short     ... (batch mode) ``predict_batch`` returns one output fewer than the batch's frames
long      ... (batch mode) ``predict_batch`` returns one output more than the batch's frames
nothing   ... (batch mode) ``predict_batch`` returns ``None`` instead of a list
========  =====================================================================================

**Batch mode** (``max_batch_size > 0``, the capacity protocol's ``serving = "batched"``):
``predict_batch(items)`` keeps a state per key and answers each frame as ``predict`` would; a key's first
frame begins a stream (counted and fingerprinted as below, warm-up keys included). The fault of the
stream chosen is committed by the whole call at that stream's ``at_frame``: raise, hang, exit, segv,
short, long and nothing end or spoil the call; nan and shape spoil that stream's output; leak allocates.
In ``predict`` (one stream at a time) short, long and nothing do nothing wrong.

**Which stream.** The adapter counts *streams*: a stream begins with the first ``predict()`` after
construction or after a ``reset_state()`` (consecutive resets, such as the engine's reset after
warm-up followed by the reset before the first scored stream, begin one stream, not two). Two ways to
choose one:

- ``stream_fingerprint`` (recommended under ``--isolate``): the stream whose first frame has this
  :func:`stream_fingerprint` (a CRC-32 of the first frame's payload bytes). It depends only on the
  data, so it names the same stream in every process: a worker restarted after the fault does not
  fault again on whatever stream comes next.
- ``stream_index`` (used when no fingerprint is given): the ``stream_index``-th stream this instance
  has been fed since construction, 0-based. The engine's warm-up is a stream: in a run with warm-up,
  stream 0 is the warm-up and the first scored stream is 1. The count belongs to the instance, so a
  new instance (a restarted worker) counts from 0 again.

A stream takes the first planted fault that chooses it, so one fault per stream.

**Which frame.** ``at_frame`` is ``Frame.index`` within the chosen stream.

The model (identical for every fault): the frame's feature is the mean of all values of every modality
present (0.0 when none is); the event logit is ``gain`` times an exponential moving average of that
feature (``decay`` per frame; reset by ``reset_state()``); the event probability ``sigmoid(logit)`` is
split evenly over classes ``1 .. C-1`` and class 0 (background) takes the rest. ``classes`` is
data-bound (filled from the data set).
"""

from __future__ import annotations

import os
import signal
import stat
import struct
import time
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
    StreamKey,
)

__all__ = [
    "EXIT_CODE",
    "HUGE_REF",
    "FaultyAdapter",
    "FaultyOptions",
    "PlantedBaseException",
    "PlantedFault",
    "stream_fingerprint",
]

EXIT_CODE = 13
"""The status ``fault="exit"`` ends its process with."""
HUGE_REF = 2**80
"""The ``refers_to`` of ``fault="huge_ref"``: past every int64."""
GARBAGE = b"garbage bytes, not a reply"
"""What ``fault="garbage"`` writes to its sockets framed as a message, ``fault="raw"`` unframed (its first
four bytes, b"garb", then read as a length: 1,734,439,522 bytes)."""

Fault = Literal[
    "none", "raise", "nan", "shape", "hang", "exit", "segv", "leak",
    "huge_ref", "garbage", "raw", "close_fds", "keyboard", "base", "genexit", "sysexit",
    "short", "long", "nothing",
]  # fmt: skip
BATCH_FAULTS = ("short", "long", "nothing")
"""Faults only a batch call can commit (its list of outputs)."""


class PlantedBaseException(BaseException):
    """What ``fault="base"`` raises: a ``BaseException`` that no ``except Exception`` takes."""


def stream_fingerprint(frame: Frame) -> str:
    """CRC-32 (8 hex digits) of a frame's payload bytes, modalities in sorted name order, ``None`` skipped.

    Computed by :class:`FaultyAdapter` on the first frame of every stream; give it the first frame of
    the stream to fault on (``next(iter(stream.frames()))``).
    """
    crc = 0
    for name in sorted(frame.inputs):
        payload = frame.inputs[name]
        if payload is not None:
            crc = zlib.crc32(name.encode(), crc)
            crc = zlib.crc32(np.ascontiguousarray(payload).tobytes(), crc)
    return f"{crc:08x}"


class PlantedFault(BaseModel):
    """One fault: what goes wrong, on which stream, at which frame (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fault: Fault = Field("none", description="what goes wrong at frame at_frame of the chosen stream")
    stream_index: int = Field(
        0, ge=0, description="the stream to fault on, counted per instance (warm-up included), 0-based"
    )
    stream_fingerprint: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{8}$",
        description="the stream to fault on: stream_fingerprint() of its first frame (wins over the index)",
    )
    at_frame: int = Field(0, ge=0, description="Frame.index at which the fault happens")

    def chooses(self, ordinal: int, fingerprint: str) -> bool:
        """Whether the stream begun as number ``ordinal`` with first-frame ``fingerprint`` is this one."""
        if self.stream_fingerprint is not None:
            return fingerprint == self.stream_fingerprint
        return ordinal == self.stream_index


class FaultyOptions(AdapterOptions, PlantedFault):
    """Options of :class:`FaultyAdapter`: one fault (the :class:`PlantedFault` fields), optionally more
    (``more_faults``, for one run with several faulty streams). ``classes`` is data-bound."""

    model_config = ConfigDict(extra="forbid", frozen=False)

    classes: tuple[str, ...] | None = Field(
        default=None, min_length=2, description="class names, background first; None: (background, event)"
    )
    more_faults: tuple[PlantedFault, ...] = Field(
        (), description="further faults; a stream takes the first fault that chooses it"
    )
    leak_mb_per_frame: float = Field(16.0, gt=0, le=4096, description="fault='leak': MiB kept per frame")
    max_batch_size: int = Field(0, ge=0, description="> 0: the batch mode (predict_batch) takes this many")
    gain: float = Field(4.0, gt=0, description="event logit = gain * smoothed feature")
    decay: float = Field(0.8, ge=0, lt=1, description="weight of the past in the smoothed feature")

    @property
    def planted(self) -> tuple[PlantedFault, ...]:
        """Every fault, the top-level one first (left out when it is ``"none"``)."""
        first = PlantedFault(
            fault=self.fault,
            stream_index=self.stream_index,
            stream_fingerprint=self.stream_fingerprint,
            at_frame=self.at_frame,
        )
        return ((first,) if first.fault != "none" else ()) + self.more_faults


class FaultyAdapter(StreamingAdapter):
    """An honest smoothed-loudness model that commits its planted faults (see the module docstring)."""

    Options: ClassVar[type[AdapterOptions]] = FaultyOptions
    NAME: ClassVar[str] = "faulty"

    def __init__(self, options: FaultyOptions | None = None) -> None:
        opts = options if options is not None else FaultyOptions()
        assert isinstance(opts, FaultyOptions)
        super().__init__(opts)
        self._opts = opts
        classes = opts.classes if opts.classes is not None else ("background", "event")
        self._info = AdapterInfo(name=self.NAME, classes=classes, modalities=("any",), version="1")
        self._num_classes = len(classes)
        self._leak_bytes = round(opts.leak_mb_per_frame * 2**20)
        self.leaked: list[np.ndarray] = []  # fault="leak": never freed, not even by reset_state()
        self.streams_seen = 0  # streams begun since construction (a stream begins at its first predict)
        self._planted = opts.planted
        self._new_stream = True
        self._active: PlantedFault | None = None  # the fault chosen for the current stream
        self._smoothed = 0.0
        self.max_batch_size = opts.max_batch_size
        self._keyed: dict[int, tuple[float, PlantedFault | None]] = {}  # batch mode: per key

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self._smoothed = 0.0
        self._new_stream = True
        self._active = None
        self._keyed.clear()

    def predict_batch(self, items: Sequence[tuple[StreamKey, Frame]]) -> list[PredictOutput]:
        """One frame of each of several streams (a state per key); the planted fault of a stream in the
        batch is committed at its ``at_frame`` (module docstring)."""
        if not self.max_batch_size:
            raise NotImplementedError("FaultyAdapter has no batch mode (max_batch_size = 0)")
        outputs: list[PredictOutput] = []
        spoil: str | None = None
        for key, frame in items:
            if key not in self._keyed:
                self._keyed[key] = (0.0, self._choose(frame))
            smoothed, active = self._keyed[key]
            if active is not None and frame.index >= active.at_frame:
                if active.fault in BATCH_FAULTS and frame.index == active.at_frame:
                    spoil = active.fault
                else:
                    broken = self._commit(active, frame)
                    if broken is not None:
                        outputs.append(broken)
                        continue
            smoothed = self._opts.decay * smoothed + (1.0 - self._opts.decay) * _feature(frame.inputs)
            self._keyed[key] = (smoothed, active)
            outputs.append(self._scores(smoothed))
        if spoil == "short":
            return outputs[:-1]
        if spoil == "long":
            return [*outputs, outputs[-1]]
        if spoil == "nothing":
            return None  # type: ignore[return-value]  # the planted fault: not a list
        return outputs

    def predict(self, frame: Frame) -> PredictOutput:
        if self._new_stream:
            self._begin_stream(frame)
        active = self._active
        if active is not None and frame.index >= active.at_frame:
            broken = self._commit(active, frame)
            if broken is not None:
                return broken
        self._smoothed = self._opts.decay * self._smoothed + (1.0 - self._opts.decay) * _feature(frame.inputs)
        return self._scores(self._smoothed)

    def _scores(self, smoothed: float) -> Prediction:
        p = 1.0 / (1.0 + np.exp(-self._opts.gain * smoothed))
        scores = np.full(self._num_classes, p / (self._num_classes - 1), dtype=np.float32)
        scores[0] = 1.0 - p
        return Prediction(scores=scores)

    def _begin_stream(self, frame: Frame) -> None:
        self._new_stream = False
        self._active = self._choose(frame)

    def _choose(self, frame: Frame) -> PlantedFault | None:
        """A stream begins at ``frame``: the first planted fault that chooses it (counted in streams_seen)."""
        chosen = None
        if self._planted:
            fingerprint = stream_fingerprint(frame)
            chosen = next((p for p in self._planted if p.chooses(self.streams_seen, fingerprint)), None)
        self.streams_seen += 1
        return chosen

    def _commit(self, planted: PlantedFault, frame: Frame) -> Prediction | None:
        """Commit the fault at or after ``at_frame``; a broken output to return instead, or ``None``."""
        fault = planted.fault
        if fault == "leak":
            self.leaked.append(np.ones(self._leak_bytes, dtype=np.uint8))  # written, so resident
            return None
        if frame.index != planted.at_frame:
            return None
        if fault == "raise":
            raise RuntimeError(f"planted fault at frame {frame.index}")
        if fault == "nan":
            return Prediction(scores=np.full(self._num_classes, np.nan, dtype=np.float32))
        if fault == "shape":
            return Prediction(scores=np.zeros(self._num_classes + 1, dtype=np.float32))
        if fault == "hang":
            while True:
                time.sleep(3600)
        if fault == "exit":
            os._exit(EXIT_CODE)
        if fault == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
            time.sleep(10)  # the signal is delivered asynchronously; never return in the meantime
        if fault == "huge_ref":
            return Prediction(scores=np.full(self._num_classes, 0.5, dtype=np.float32), refers_to=HUGE_REF)
        if fault in ("garbage", "raw"):
            _write_to_sockets(struct.pack("!i", len(GARBAGE)) + GARBAGE if fault == "garbage" else GARBAGE)
        elif fault == "close_fds":
            os.closerange(3, _fd_limit())
        elif fault == "sysexit":
            raise SystemExit(0)
        elif fault in _RAISED:
            raise _RAISED[fault](f"planted fault at frame {frame.index}")
        return None


_RAISED: dict[str, type[BaseException]] = {
    "keyboard": KeyboardInterrupt,
    "base": PlantedBaseException,
    "genexit": GeneratorExit,
}


def _fd_limit() -> int:
    try:
        return min(os.sysconf("SC_OPEN_MAX"), 65536)
    except (OSError, ValueError):  # pragma: no cover - no sysconf
        return 1024


def _write_to_sockets(data: bytes) -> None:
    """Write ``data`` to every socket this process holds (found by ``fstat``, as any model could)."""
    for fd in range(3, min(_fd_limit(), 1024)):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, data)
        except OSError:
            continue


def _feature(inputs: Mapping[str, Any]) -> float:
    """Mean of every value of every modality present (``None`` skipped); 0.0 if none is."""
    total, count = 0.0, 0
    for payload in inputs.values():
        if payload is not None:
            values = np.asarray(payload, dtype=np.float64)
            total += float(values.sum())
            count += values.size
    return total / count if count else 0.0
