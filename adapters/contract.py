"""The data contract every floor of streambench speaks (``../shared/DESIGN.md``, "The data contract").

A *stream* is a sequence of *frames* that arrive one at a time; an *adapter* wraps a causal model and
answers each frame with zero, one or several *predictions*. Nothing here imports the harness or the
protocols: concrete adapters import this module and nothing else of ours.

Time convention (DESIGN.md "Time and delay", seed 004 §6.2.2): ``Frame.t`` is the arrival time of the
frame on the stream clock, in seconds, i.e. the *end* of its capture interval. A stream captured from
``Stream.t0`` at 25 frames/s has ``t = t0 + 0.04, t0 + 0.08, ...``.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Adapter",
    "AdapterInfo",
    "AdapterOptions",
    "Capability",
    "Frame",
    "PredictOutput",
    "Prediction",
    "ServerTimes",
    "StageTimer",
    "Stream",
    "StreamKey",
    "StreamingAdapter",
]


@dataclass(slots=True)
class Frame:
    """One frame of a stream, as the model receives it.

    ``inputs`` holds one payload per modality (``{"audio": ..., "visual": ...}``); a payload of
    ``None`` means the modality is missing at this step. ``timestamps`` gives per-modality capture
    times where they differ from ``t`` (e.g. under clock jitter), otherwise it is ``None``.
    """

    index: int
    t: float
    inputs: Mapping[str, Any]
    timestamps: Mapping[str, float] | None = None


@dataclass(slots=True)
class Prediction:
    """What an adapter emits for a frame.

    ``scores``: one score per class, a 1-D ``numpy.ndarray`` of shape ``[C]`` (probabilities when the
    decision rule is a threshold). ``refers_to``: index of the frame this prediction labels; ``None``
    means the frame just fed. A model with a look-ahead of L frames labels frame ``t - L``; an
    anticipating model may label a later frame. ``features`` (sparse activations) and ``weights``
    (router / domain weights) are optional payloads for the stability and hysteresis protocols.
    """

    scores: np.ndarray
    refers_to: int | None = None
    features: np.ndarray | None = None
    weights: np.ndarray | None = None


PredictOutput = Prediction | list[Prediction] | None
"""``predict()`` returns one prediction, several (e.g. a provisional label for the current frame
and a refined one for an earlier frame), or ``None`` when it has nothing to say yet."""


@dataclass(slots=True)
class Stream:
    """A labelled stream: its frames are produced lazily by ``frame_source``.

    ``labels`` is multi-hot ``[T, C]`` (bool) over ``classes``; ``frame_times`` the arrival time of
    each frame (seconds, end of its capture interval, strictly increasing); ``t0`` the start of the
    first capture interval, so the stream lasts ``frame_times[-1] - t0`` seconds.
    ``segment_length_s`` is the unit of segment-level scoring (AVE: 1 s), ``None`` if not defined.

    ``capture`` (optional) is the data set's sensor model: ``capture(modality, i, s)`` is the payload
    frame slot ``i`` would carry had that modality's capture interval ended at time ``s`` instead of
    its own (same sensor noise, signal displaced). Data sets that can render it (the synthetic one) let
    the jitter injector displace a clock faithfully; without it, jitter interpolates neighbouring
    frames, which also averages their independent noise.
    """

    stream_id: str
    classes: tuple[str, ...]
    labels: np.ndarray
    frame_times: np.ndarray
    frame_source: Callable[[], Iterable[Frame]]
    modalities: tuple[str, ...]
    t0: float = 0.0
    segment_length_s: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    capture: Callable[[str, int, float], Any] | None = None

    def __post_init__(self) -> None:
        times = np.asarray(self.frame_times, dtype=np.float64)
        labels = np.asarray(self.labels, dtype=bool)
        if times.ndim != 1 or times.size == 0:
            raise ValueError(f"stream {self.stream_id!r}: frame_times must be a non-empty 1-D array")
        if labels.shape != (times.size, len(self.classes)):
            raise ValueError(
                f"stream {self.stream_id!r}: labels have shape {labels.shape}, expected "
                f"{(times.size, len(self.classes))} (frames, classes)"
            )
        if not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0) or times[0] <= self.t0:
            raise ValueError(
                f"stream {self.stream_id!r}: frame_times must be finite, strictly increasing and after t0"
            )
        self.frame_times = times
        self.labels = labels

    @property
    def num_frames(self) -> int:
        return int(self.frame_times.size)

    @property
    def duration_s(self) -> float:
        return float(self.frame_times[-1] - self.t0)

    def frames(self) -> Iterator[Frame]:
        return iter(self.frame_source())


Capability = Literal["sequence", "stages", "features", "weights"]

StreamKey = int
"""The opaque key of one stream in :meth:`StreamingAdapter.predict_batch`: the harness draws a fresh key per
stream and never reuses it, so a key the adapter has not seen is a new stream (its state starts afresh)."""


class _Stage:
    __slots__ = ("_start", "_timer", "name")

    def __init__(self, timer: StageTimer, name: str) -> None:
        self._timer = timer
        self.name = name
        self._start = 0

    def __enter__(self) -> None:
        self._start = time.perf_counter_ns()

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter_ns() - self._start
        totals = self._timer.totals_ns
        totals[self.name] = totals.get(self.name, 0) + elapsed


class StageTimer:
    """Named stages inside ``predict()`` for the latency breakdown (seed 004 §6.3.1 (3)).

    An adapter with the capability ``"stages"`` keeps one as ``self.stages`` and wraps parts of its
    work in ``with self.stages("visual"): ...``. Host wall time (``perf_counter_ns``) is summed per
    name; the engine drains the totals after each stream. Stage objects are created once per name,
    so a stage costs two clock reads and a dict update per use. A CUDA adapter must synchronise
    inside a stage for its time to mean anything.
    """

    __slots__ = ("_stages", "totals_ns")

    def __init__(self) -> None:
        self._stages: dict[str, _Stage] = {}
        self.totals_ns: dict[str, int] = {}

    def __call__(self, name: str) -> _Stage:
        stage = self._stages.get(name)
        if stage is None:
            stage = self._stages[name] = _Stage(self, name)
        return stage

    def drain(self) -> dict[str, int]:
        """Totals (ns) per stage since the last drain, in the order the stages were first used."""
        totals, self.totals_ns = self.totals_ns, {}
        return totals


class ServerTimes:
    """The server's own per-frame figure, for an adapter that sends each frame to a model served elsewhere
    (adapters/served/, docs/serving.md): how long the server says its model took on the frame (model-only),
    beside the engine's own time of ``predict()`` (send to reply on the client's clock: end to end).

    The adapter keeps one as ``self.server_times`` and calls :meth:`add` once per ``predict()`` with the
    figure its reply carried (ns; ``None``: the reply carried none); the engine drains it after each stream,
    outside every timed window, into ``StreamRecording.server_ns``. It is the server's word: the harness
    records and shows it, and never scores or times anything by it (docs/trust.md)."""

    __slots__ = ("_ns",)

    def __init__(self) -> None:
        self._ns: list[int] = []

    def add(self, ns: int | None) -> None:
        """The figure of the frame just answered (``None``: none in the reply)."""
        self._ns.append(-1 if ns is None else ns)

    def drain(self) -> list[int]:
        """The figures since the last drain, one per ``predict()``, -1 where a reply carried none."""
        figures, self._ns = self._ns, []
        return figures


class AdapterInfo(BaseModel):
    """What an adapter declares about itself; recorded in every result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    classes: tuple[str, ...] = Field(min_length=1)
    modalities: tuple[str, ...] = Field(min_length=1)
    device: str = "cpu"
    version: str | None = None
    capabilities: frozenset[Capability] = frozenset()
    sample_rate_hz: int | None = Field(
        None, gt=0, description="sample streams: the audio rate the model needs (the runner checks the data)"
    )
    frame_samples: int | None = Field(
        None, gt=0, description="sample streams: samples per frame the model needs (e.g. 512 at 16 kHz)"
    )

    @property
    def num_classes(self) -> int:
        return len(self.classes)


class AdapterOptions(BaseModel):
    """Base of an adapter's options. An adapter class declares its own subclass as ``Options``.

    Two field names are *data-bound*: when an adapter's options declare ``classes`` or
    ``input_dims`` and the user leaves them unset, the runner fills them from the data set
    (its class names, and the payload size of each modality).
    """

    model_config = ConfigDict(extra="forbid")


@runtime_checkable
class Adapter(Protocol):
    """The narrow interface the engine drives. Any object with these members is an adapter."""

    @property
    def info(self) -> AdapterInfo: ...

    def reset_state(self) -> None: ...

    def predict(self, frame: Frame) -> PredictOutput: ...


class StreamingAdapter(abc.ABC):
    """Convenience base class for adapters.

    Subclasses set ``Options`` (an :class:`AdapterOptions` subclass) when they take options, build
    their ``info`` in ``__init__`` and implement ``reset_state`` and ``predict``. ``predict`` must
    only use the frames it has been given so far: the causality protocol checks that it does.
    """

    Options: ClassVar[type[AdapterOptions]] = AdapterOptions

    def __init__(self, options: AdapterOptions | None = None) -> None:
        self.options = options if options is not None else self.Options()

    @property
    @abc.abstractmethod
    def info(self) -> AdapterInfo: ...

    @abc.abstractmethod
    def reset_state(self) -> None: ...

    @abc.abstractmethod
    def predict(self, frame: Frame) -> PredictOutput: ...

    def predict_sequence(self, frames: Sequence[Frame]) -> list[Prediction]:  # pragma: no cover
        """Optional: run a whole sequence at once with a causal mask (capability ``sequence``)."""
        raise NotImplementedError(f"{type(self).__name__} has no sequence mode")

    max_batch_size: int = 0
    """The largest batch :meth:`predict_batch` takes; 0: the adapter has no batch mode."""

    def predict_batch(self, items: Sequence[tuple[StreamKey, Frame]]) -> list[PredictOutput]:
        """Optional (``max_batch_size > 0``): one frame of each of several live streams in one call, as a
        server batches them (Triton's dynamic batcher; the state of each stream batched along the batch
        axis). Returns one output per item, in order, each what :meth:`predict` would return for that
        stream's frame. The adapter keeps a state per key (a new key: a fresh state) and
        :meth:`reset_state` forgets every stream. A batch holds at most one frame per key, each only after
        it arrived; it must not depend on which other streams share the batch (causal across streams)."""
        raise NotImplementedError(f"{type(self).__name__} has no batch mode")
