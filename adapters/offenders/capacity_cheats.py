"""OFFENDERS (capacity): two ways to raise a capacity figure without serving more streams honestly, each
with an honest twin of the same model and cost.

The model (all four): the reference model's matched filters in numpy (the codebook's class signatures,
adapters/codebook.py, one per modality; events averaged over the modalities present, background the least
sure), a leaky integrator (``smoothing``) and a softmax (``temperature``), so it scores on the synthetic
data as the reference model does; each frame answered costs ``cost_ms`` of busy work.

* :class:`LoadShedderAdapter` sheds load: it notes the wall time of a session's first frame, and a frame
  whose arrival on the stream clock (``Frame.t``) lies more than ``behind_ms`` before the wall time it is
  served at is answered "background" (score 1 for class 0) at once, with no work. Served alone it is never
  behind; under load its queue empties at once, so a search that holds F1 against the loaded run's own
  outputs sees the deadline met and its (shed) F1 "held". Held against its own unloaded output on the same
  frames (protocols/capacity_accuracy.py) its F1 falls where it sheds, and its answers differ.
  Twin: :class:`LoadShedderTwinAdapter`, never sheds.
* :class:`SessionCacheAdapter` keeps a content cache shared by every session and instance of its process:
  a frame whose payload it has seen before is answered from the cache at once (the stored scores, and the
  stored state). Where a capacity search replays the data set's streams across live sessions, most frames
  are hits and its capacity rises far above its twin's; with fresh sources per session (harness/runs/
  capacity.py) no payload repeats and it gains nothing. ``HITS`` counts the process's hits (for tests).
  Twin: :class:`SessionCacheTwinAdapter`, never caches.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.codebook import class_signature, default_classes
from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
)

__all__ = [
    "HITS",
    "CapacityCheatOptions",
    "LoadShedderAdapter",
    "LoadShedderTwinAdapter",
    "SessionCacheAdapter",
    "SessionCacheTwinAdapter",
]

HITS = [0]
"""Cache hits of this process so far (:class:`SessionCacheAdapter`)."""
_CACHE: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}


class CapacityCheatOptions(AdapterOptions):
    """Options of the capacity offenders and their twins (``classes`` and ``input_dims`` are data-bound)."""

    classes: tuple[str, ...] | None = Field(None, min_length=2, description="class names, background first")
    input_dims: dict[str, Annotated[int, Field(ge=1)]] | None = Field(
        None, description="payload size per modality; None: audio 64, visual 128"
    )
    cost_ms: float = Field(8.0, ge=0, description="busy work per frame answered")
    smoothing: float = Field(0.8, ge=0, lt=1, description="leaky integrator: s = a s + (1 - a) x")
    temperature: float = Field(0.1, gt=0, description="softmax temperature")
    behind_ms: float = Field(5.0, ge=0, description="the load shedder: behind by more than this, it sheds")


def busy_wait_ms(ms: float) -> None:
    """Spin ``ms`` milliseconds on ``perf_counter_ns`` (the model's work)."""
    end = time.perf_counter_ns() + round(ms * 1e6)
    while time.perf_counter_ns() < end:
        pass


class _MatchedFilter(StreamingAdapter):
    """The model the four share (module docstring); subclasses decide when to work."""

    Options: ClassVar[type[AdapterOptions]] = CapacityCheatOptions
    NAME: ClassVar[str] = "offender-capacity-model"

    def __init__(self, options: CapacityCheatOptions | None = None) -> None:
        opts = options if options is not None else CapacityCheatOptions()
        assert isinstance(opts, CapacityCheatOptions)
        super().__init__(opts)
        self._opts = opts
        self._classes = opts.classes if opts.classes is not None else default_classes()
        dims = dict(opts.input_dims) if opts.input_dims is not None else {"audio": 64, "visual": 128}
        sign = np.ones(len(self._classes), dtype=np.float32)
        sign[0] = -1.0
        self._sign = sign
        self._weights = {
            m: np.stack([class_signature(c, d, m) for c in range(len(self._classes))]) * sign[:, None]
            for m, d in dims.items()
        }
        self._info = AdapterInfo(name=self.NAME, classes=self._classes, modalities=tuple(dims), version="1")
        self._state: np.ndarray | None = None

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self._state = None

    def _logits(self, inputs: Mapping[str, Any]) -> np.ndarray | None:
        signed = [
            w @ np.asarray(inputs[m], dtype=np.float32)
            for m, w in self._weights.items()
            if inputs.get(m) is not None
        ]
        if not signed:
            return None
        stacked = np.stack(signed)
        fused = stacked.mean(axis=0)
        fused[0] = stacked[:, 0].max()
        return fused * self._sign

    def _answer(self, frame: Frame) -> np.ndarray:
        """Work ``cost_ms``, integrate the frame, return the scores."""
        busy_wait_ms(self._opts.cost_ms)
        logits = self._logits(frame.inputs)
        if logits is not None:
            a = self._opts.smoothing
            self._state = logits if self._state is None else a * self._state + (1 - a) * logits
        if self._state is None:
            return np.full(len(self._classes), 1 / len(self._classes), dtype=np.float32)
        z = self._state / self._opts.temperature
        e = np.exp(z - z.max())
        return (e / e.sum()).astype(np.float32)

    def predict(self, frame: Frame) -> PredictOutput:
        return Prediction(scores=self._answer(frame))


class LoadShedderAdapter(_MatchedFilter):
    """OFFENDER: answers background at once when behind its stream (module docstring)."""

    NAME: ClassVar[str] = "offender-load-shedder"
    shed = True

    def __init__(self, options: CapacityCheatOptions | None = None) -> None:
        super().__init__(options)
        self._origin: tuple[int, float] | None = None  # (wall ns, stream s) of the session's first frame
        self.shed_frames = 0

    def reset_state(self) -> None:
        super().reset_state()
        self._origin = None

    def predict(self, frame: Frame) -> PredictOutput:
        now = time.perf_counter_ns()
        if self._origin is None:
            self._origin = (now, frame.t)
        wall0, t0 = self._origin
        behind_ms = (now - wall0) / 1e6 - (frame.t - t0) * 1e3
        if self.shed and behind_ms > self._opts.behind_ms:
            self.shed_frames += 1
            scores = np.zeros(len(self._classes), dtype=np.float32)
            scores[0] = 1.0
            return Prediction(scores=scores)
        return Prediction(scores=self._answer(frame))


class LoadShedderTwinAdapter(LoadShedderAdapter):
    """The honest twin: the same model and cost, never sheds."""

    NAME: ClassVar[str] = "offender-load-shedder-twin"
    shed = False


class SessionCacheAdapter(_MatchedFilter):
    """OFFENDER: a content cache shared across sessions (module docstring)."""

    NAME: ClassVar[str] = "offender-session-cache"
    cache = True

    def predict(self, frame: Frame) -> PredictOutput:
        if not self.cache:
            return Prediction(scores=self._answer(frame))
        digest = hashlib.blake2b(digest_size=16)
        for name in sorted(frame.inputs):
            payload = frame.inputs[name]
            if payload is not None:
                digest.update(name.encode() + np.ascontiguousarray(payload).tobytes())
        key = digest.digest()
        stored = _CACHE.get(key)
        if stored is not None:
            HITS[0] += 1
            scores, state = stored
            self._state = state.copy()
            return Prediction(scores=scores.copy())
        scores = self._answer(frame)
        if self._state is not None:
            _CACHE[key] = (scores.copy(), self._state.copy())
        return Prediction(scores=scores)


class SessionCacheTwinAdapter(SessionCacheAdapter):
    """The honest twin: the same model and cost, never caches."""

    NAME: ClassVar[str] = "offender-session-cache-twin"
    cache = False
