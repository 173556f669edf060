"""Planted offenders: adapters that break causality or the audits *on purpose*.

These are test fixtures, not models. Each one commits exactly one offence that streambench must catch
(``../shared/DESIGN.md``, "Causality" and "Audits"; seed 004 §6.2.3: code review, occlusion test,
gradient flow ``∂y_t/∂x_s = 0`` for ``s > t``), and otherwise behaves like an honest, deterministic,
causal model, so that the check meant for it is the only one it fails:

* :class:`PeekingAdapter` reads frame ``t + 1`` while predicting frame ``t`` through a back door
  (:meth:`PeekingAdapter.leak` hands it the stream's frames up front). Caught by **occlusion**: the
  prediction emitted at the cut frame already changes when the future is replaced.
* :class:`OffByOneMaskAdapter` has a correct streaming ``predict`` but a sequence mode whose causal mask
  is off by one (position ``t`` attends to ``t + 1``). Caught by **gradient flow** (``∂y_t/∂x_(t+1) != 0``)
  and by **stream/sequence equivalence**. ``mask_offset=0`` gives the correctly masked control.
* :class:`LeakyResetAdapter` forgets only part of its state in ``reset_state()`` (its running mean, not
  its frame counter). Caught by the **state-leak** check: a stream's predictions differ when it runs
  after another stream.
* :class:`CachingAdapter` memoises scores per payload (hash of the payload bytes) and pays a 2 ms
  busy-wait only on a miss, so a repeated stream runs much faster. Caught by the **caching** audit.

The models are tiny numpy/torch functions of a payload of any shape: the frame's *feature* is the mean
of all values of all modalities present (0 when none is), and the event probability is
``sigmoid(gain * feature)``. Output classes default to ``("background", "event")``; ``classes`` is
data-bound (DESIGN.md, "The data contract"): with ``C > 2`` classes the event probability is split
evenly over classes ``1 .. C-1`` and class 0 (background) takes the rest.

:func:`sequence_gradient_support` is the gradient-flow probe (it runs a model, so it lives here and
not in ``protocols/``; the harness will call it): it returns which inputs ``x_s`` each sampled output
``y_t`` depends on, for ``streambench.protocols.causality.judge_gradient`` to judge.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import Field

from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
)

__all__ = [
    "CachingAdapter",
    "CachingOptions",
    "LeakyResetAdapter",
    "LeakyResetOptions",
    "OffByOneMaskAdapter",
    "OffByOneMaskOptions",
    "OffenderOptions",
    "PeekingAdapter",
    "frame_feature",
    "frame_vector",
    "sequence_gradient_support",
]


class OffenderOptions(AdapterOptions):
    """Options shared by the offenders. ``classes`` is data-bound."""

    classes: tuple[str, ...] | None = Field(
        default=None, min_length=2, description="class names, background first; None: (background, event)"
    )
    gain: float = Field(default=1.0, gt=0.0, description="event logit = gain * feature")


def frame_feature(inputs: Mapping[str, Any]) -> float:
    """Mean of every value of every modality present (``None`` payloads skipped); 0.0 if none is."""
    parts = [np.asarray(v, dtype=np.float64).ravel() for v in inputs.values() if v is not None]
    values = np.concatenate(parts) if parts else np.zeros(0)
    return float(values.mean()) if values.size else 0.0


def frame_vector(inputs: Mapping[str, Any]) -> np.ndarray:
    """All payload values of a frame, modalities in sorted name order, flattened to ``float32[D]``.

    A missing modality contributes nothing, so every frame of a sequence must carry the same
    modalities for the vectors to stack.
    """
    parts = [np.asarray(inputs[k], dtype=np.float32).ravel() for k in sorted(inputs) if inputs[k] is not None]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def _two_class_scores(logit: float, num_classes: int) -> np.ndarray:
    p = 1.0 / (1.0 + np.exp(-logit))
    scores = np.full(num_classes, p / (num_classes - 1), dtype=np.float32)
    scores[0] = 1.0 - p
    return scores


class _OffenderBase(StreamingAdapter):
    Options: ClassVar[type[AdapterOptions]] = OffenderOptions
    NAME: ClassVar[str] = "offender"
    CAPABILITIES: ClassVar[frozenset[Any]] = frozenset()

    def __init__(self, options: OffenderOptions | None = None) -> None:
        opts = options if options is not None else self.Options()
        assert isinstance(opts, OffenderOptions)
        super().__init__(opts)
        self._classes = opts.classes if opts.classes is not None else ("background", "event")
        self._gain = float(opts.gain)
        self._info = AdapterInfo(
            name=self.NAME,
            classes=self._classes,
            modalities=("any",),
            version="1",
            capabilities=self.CAPABILITIES,
        )

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def _scores(self, feature: float) -> np.ndarray:
        return _two_class_scores(self._gain * feature, len(self._classes))


class PeekingAdapter(_OffenderBase):
    """OFFENDER (occlusion): the prediction for frame ``t`` reads frame ``t + 1`` through a back door.

    :meth:`leak` stores a stream's frames in a class-level registry (by frame index) before the stream
    runs; ``predict(frame t)`` then scores ``(feature_t + feature_(t+1)) / 2``, the look-ahead frame
    coming from the registry. Without a leaked frame ``t + 1`` (last frame, or nothing leaked) it
    scores ``feature_t`` alone, i.e. it is an honest per-frame model. Call :meth:`unleak` after use.
    Occlusion with a cut at ``c`` sees the first change at the emission of frame ``c`` itself.
    """

    NAME: ClassVar[str] = "offender-peeking"
    _leaked: ClassVar[dict[int, Mapping[str, Any]]] = {}

    @classmethod
    def leak(cls, frames: Iterable[Frame]) -> None:
        """Hand the adapter the whole stream up front (the back door it should not have)."""
        cls._leaked = {f.index: f.inputs for f in frames}

    @classmethod
    def unleak(cls) -> None:
        cls._leaked = {}

    def reset_state(self) -> None:
        pass  # stateless apart from the back door

    def predict(self, frame: Frame) -> PredictOutput:
        feature = frame_feature(frame.inputs)
        ahead = type(self)._leaked.get(frame.index + 1)
        if ahead is not None:
            feature = 0.5 * (feature + frame_feature(ahead))
        return Prediction(scores=self._scores(feature))


class OffByOneMaskOptions(OffenderOptions):
    """Options of :class:`OffByOneMaskAdapter`."""

    mask_offset: int = Field(
        default=1, ge=0, description="sequence mode: position t attends to s <= t + offset (0 is correct)"
    )
    seed: int = Field(default=0, ge=0, description="seed of the fixed projection weights")
    temperature: float = Field(default=1.0, gt=0.0, description="softmax temperature")


class OffByOneMaskAdapter(_OffenderBase):
    """OFFENDER (gradient flow, stream/sequence equivalence): an off-by-one causal mask in sequence mode.

    Model: each frame's vector ``x_t`` (:func:`frame_vector`, ``D`` values) is projected to class logits
    ``h_t = W x_t`` (``W`` fixed, ``[C, D]``, seeded, created on the first frame for its ``D``); the
    output at ``t`` is ``softmax(mean of h_s over the attended s / temperature)``.

    * ``predict`` (streaming) attends to ``s <= t``: a running mean, correct.
    * ``predict_sequence`` / :meth:`sequence_outputs` attend to ``s <= t + mask_offset``; the default
      offset 1 is the planted bug (``∂y_t/∂x_(t+1) != 0``); ``mask_offset=0`` is the correct control
      and then matches streaming mode.
    """

    Options: ClassVar[type[AdapterOptions]] = OffByOneMaskOptions
    NAME: ClassVar[str] = "offender-offbyone-mask"
    CAPABILITIES: ClassVar[frozenset[Any]] = frozenset({"sequence"})

    def __init__(self, options: OffByOneMaskOptions | None = None) -> None:
        opts = options if options is not None else OffByOneMaskOptions()
        super().__init__(opts)
        self._offset = int(opts.mask_offset)
        self._seed = int(opts.seed)
        self._temperature = float(opts.temperature)
        self._weights: dict[int, torch.Tensor] = {}
        self._sum: torch.Tensor | None = None
        self._count = 0

    def weight(self, dim: int) -> torch.Tensor:
        """The fixed projection ``[C, dim]`` (deterministic in ``seed`` and ``dim``)."""
        w = self._weights.get(dim)
        if w is None:
            gen = torch.Generator().manual_seed(self._seed * 1_000_003 + dim)
            w = torch.randn(len(self._classes), dim, generator=gen) / max(dim, 1) ** 0.5
            self._weights[dim] = w
        return w

    def reset_state(self) -> None:
        self._sum = None
        self._count = 0

    def predict(self, frame: Frame) -> PredictOutput:
        with torch.no_grad():
            x = torch.from_numpy(frame_vector(frame.inputs))
            h = self.weight(x.numel()) @ x
            self._sum = h if self._sum is None else self._sum + h
            self._count += 1
            logits = self._sum / self._count
            scores = torch.softmax(logits / self._temperature, dim=0)
        return Prediction(scores=scores.numpy().astype(np.float32))

    def sequence_outputs(self, inputs: torch.Tensor) -> torch.Tensor:
        """Differentiable sequence mode: stacked frame vectors ``[T, D]`` -> scores ``[T, C]``."""
        if inputs.ndim != 2:
            raise ValueError(f"inputs must be [T, D], got shape {tuple(inputs.shape)}")
        num = inputs.shape[0]
        h = inputs @ self.weight(inputs.shape[1]).T  # [T, C]
        t = torch.arange(num).unsqueeze(1)
        s = torch.arange(num).unsqueeze(0)
        mask = (s <= t + self._offset).to(h.dtype)  # [T, T]: row t attends to columns s
        attention = mask / mask.sum(dim=1, keepdim=True)
        return torch.softmax((attention @ h) / self._temperature, dim=1)

    @staticmethod
    def stack(frames: Sequence[Frame]) -> torch.Tensor:
        """The frames' vectors stacked into ``[T, D]`` (the input of :meth:`sequence_outputs`)."""
        return torch.from_numpy(np.stack([frame_vector(f.inputs) for f in frames]))

    def predict_sequence(self, frames: Sequence[Frame]) -> list[Prediction]:
        with torch.no_grad():
            scores = self.sequence_outputs(self.stack(frames)).numpy().astype(np.float32)
        return [Prediction(scores=scores[i], refers_to=f.index) for i, f in enumerate(frames)]


class LeakyResetOptions(OffenderOptions):
    """Options of :class:`LeakyResetAdapter`."""

    ramp_frames: int = Field(
        default=100_000, ge=1, description="confidence ramps up over this many frames seen since construction"
    )


class LeakyResetAdapter(_OffenderBase):
    """OFFENDER (state leak): ``reset_state()`` clears the running mean but not the frame counter.

    Score at frame ``t``: ``sigmoid(gain * confidence * running mean of the features)`` with
    ``confidence = min(1, frames_seen / ramp_frames)``. ``frames_seen`` should restart with every stream
    but survives ``reset_state()``, so a stream's predictions depend on every frame the instance has seen
    (warm-up and earlier streams): a stream that runs after another differs from a run of it after the
    warm-up alone, from frame 0 on (unless its running mean is exactly 0). The ramp is long by default
    (100,000 frames), so the leak outlasts any warm-up and shows in every scored run.
    """

    Options: ClassVar[type[AdapterOptions]] = LeakyResetOptions
    NAME: ClassVar[str] = "offender-leaky-reset"

    def __init__(self, options: LeakyResetOptions | None = None) -> None:
        opts = options if options is not None else LeakyResetOptions()
        super().__init__(opts)
        self._ramp = int(opts.ramp_frames)
        self._mean = 0.0
        self._count = 0
        self._frames_seen = 0  # the leak: never reset

    def reset_state(self) -> None:
        self._mean = 0.0
        self._count = 0
        # BUG (planted): self._frames_seen is not reset

    def predict(self, frame: Frame) -> PredictOutput:
        self._count += 1
        self._frames_seen += 1
        self._mean += (frame_feature(frame.inputs) - self._mean) / self._count
        confidence = min(1.0, self._frames_seen / self._ramp)
        return Prediction(scores=self._scores(confidence * self._mean))


class CachingOptions(OffenderOptions):
    """Options of :class:`CachingAdapter`."""

    miss_cost_ms: float = Field(default=2.0, ge=0.0, description="busy-wait paid on a cache miss")
    cache_share: float = Field(
        default=1.0,
        gt=0.0,
        le=1.0,
        description="share of the payloads it caches (by key): below 1, a partial cache that leaves the "
        "median frame a miss",
    )


class CachingAdapter(_OffenderBase):
    """OFFENDER (caching audit): memoises scores per payload, across streams and resets.

    Per frame: ``sigmoid(gain * feature)`` (causal, stateless, deterministic). The cache key is a hash
    of the payload bytes (modality names, dtypes, shapes and values); a miss busy-waits
    ``miss_cost_ms`` (the "model"), a hit returns at once. ``reset_state()`` keeps the cache, so
    running a stream a second time is much faster than the first.
    """

    Options: ClassVar[type[AdapterOptions]] = CachingOptions
    NAME: ClassVar[str] = "offender-caching"

    def __init__(self, options: CachingOptions | None = None) -> None:
        opts = options if options is not None else CachingOptions()
        super().__init__(opts)
        self._miss_ns = round(float(opts.miss_cost_ms) * 1e6)
        self._share = float(opts.cache_share)
        self._cache: dict[bytes, np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def reset_state(self) -> None:
        pass  # BUG (planted, by design): the cache survives resets

    @staticmethod
    def _key(inputs: Mapping[str, Any]) -> bytes:
        digest = hashlib.blake2b(digest_size=16)
        for name in sorted(inputs):
            payload = inputs[name]
            digest.update(name.encode("utf-8") + b"\0")
            if payload is None:
                digest.update(b"<none>")
                continue
            array = np.ascontiguousarray(payload)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(array.tobytes())
        return digest.digest()

    def predict(self, frame: Frame) -> PredictOutput:
        key = self._key(frame.inputs)
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            return Prediction(scores=cached.copy())
        self.misses += 1
        due = time.perf_counter_ns() + self._miss_ns
        while time.perf_counter_ns() < due:
            pass
        scores = self._scores(frame_feature(frame.inputs))
        if key[0] < 256 * self._share:  # the first key byte is uniform: this share of payloads is kept
            self._cache[key] = scores.copy()
        return Prediction(scores=scores)


def sequence_gradient_support(
    model_fn: Callable[[torch.Tensor], torch.Tensor],
    inputs: torch.Tensor,
    sampled_t: Sequence[int],
) -> np.ndarray:
    """Gradient-flow probe: which inputs each sampled output depends on.

    ``model_fn`` maps stacked inputs ``[T, ...]`` to outputs ``[T, C]`` (e.g.
    :meth:`OffByOneMaskAdapter.sequence_outputs`). Returns ``bool[len(sampled_t), T]`` whose entry
    ``[i, s]`` is True when some ``∂y_(t_i, c)/∂x_s`` (any class ``c``, any input feature) is non-zero.
    Each class is differentiated separately, since softmax outputs sum to a constant whose gradient is
    zero. Runs the model: call it from the harness (or a test), never from a protocol.
    """
    x = inputs.detach().clone().to(torch.float64 if inputs.dtype == torch.float64 else torch.float32)
    x.requires_grad_(True)
    outputs = model_fn(x)
    if outputs.ndim != 2 or outputs.shape[0] != x.shape[0]:
        raise ValueError(f"model_fn must return [T, C] for T={x.shape[0]}, got {tuple(outputs.shape)}")
    num = x.shape[0]
    support = np.zeros((len(sampled_t), num), dtype=bool)
    for i, t in enumerate(sampled_t):
        if not 0 <= t < num:
            raise ValueError(f"sampled t={t} is outside [0, {num})")
        for c in range(outputs.shape[1]):
            (grad,) = torch.autograd.grad(outputs[t, c], x, retain_graph=True, allow_unused=True)
            if grad is not None:
                support[i] |= (grad.reshape(num, -1) != 0).any(dim=1).numpy()
    return support
