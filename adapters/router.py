"""Reference router for the hysteresis protocol (seed 001), and two router wrappers.

* :class:`SoftRouterAdapter` — a causal soft router over domain-labelled frames (the streams of
  ``harness/datasets/domains.py``). Per frame: matched-filter evidence ``e_d = <x, s_d>`` for every
  domain ``d`` (``s_d`` = :func:`domain_signature`, the same unit vectors the data set renders its
  frames from); a leaky routing state ``h ← decay · h + gain · e`` (reset to 0 per stream); routing
  weights ``w = softmax(h)``. The state saturates at ``gain · e / (1 − decay)``: the longer the router
  has seen one domain, the further it has to travel back, so the switch-lag after a segment grows
  with the segment's length until the state saturates (seed 001 §1, experiment A: "кристаллизация").
  It emits ``Prediction(scores=softmax(sharpness · e), weights=w)``: ``scores`` are the per-frame
  domain probabilities (no state), ``weights`` the stateful routing weights. With
  ``emit_weights=False`` it emits ``w`` as its scores and no weights (an adapter without the capability
  ``"weights"``, whose class probabilities the protocol then scores).
* :class:`AggregatedRouter` — wraps any adapter and aggregates its weights (its scores when it gives
  none) over the last ``window`` frames: ``none`` (pass-through), ``mean`` (mean pooling) or
  ``tail_exp`` (tail-weighted exponential: ``Σ_j γ^j w_{t−j} / Σ_j γ^j``, ``j = 0`` the newest) —
  seed 001, experiment C.
* :class:`HardLabelRouter` — wraps any adapter and emits the one-hot argmax as the routing weights
  (seed 001, experiment D: "hard-label по argmax (без смешивания)"). ``source="scores"`` (default)
  takes the argmax of the wrapped adapter's per-frame domain probabilities: a hard router that
  carries no continuous state; ``source="weights"`` the argmax of its (stateful) routing weights,
  which keeps the state's inertia — shown side by side by the protocol.

:class:`ReferenceAggregatedRouter` and :class:`ReferenceHardLabelRouter` are the wrappers around the
reference router, constructible from options (registry names ``reference-router-aggregated`` and
``reference-router-hard``). Imports nothing of ours but the contract.
"""

from __future__ import annotations

import zlib
from collections import deque
from typing import Literal

import numpy as np
from pydantic import Field

from streambench.adapters.contract import (
    Adapter,
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
)

__all__ = [
    "DEFAULT_DOMAINS",
    "DOMAIN_MODALITY",
    "AggregatedRouter",
    "Aggregation",
    "HardLabelRouter",
    "ReferenceAggregatedRouter",
    "ReferenceHardLabelRouter",
    "RouterOptions",
    "SoftRouterAdapter",
    "domain_signature",
]

DOMAIN_MODALITY = "signal"
"""The one modality of a domain-labelled stream: a feature vector per frame."""

DEFAULT_DOMAINS: tuple[str, ...] = ("A", "B")
DEFAULT_DIM = 32
SIGNATURE_SEED = 1_001_001
"""Root seed of the domain signatures shared by ``harness/datasets/domains.py`` and the router."""

Aggregation = Literal["none", "mean", "tail_exp"]


def domain_signature(name: str, dim: int) -> np.ndarray:
    """The unit vector ``[dim]`` (float64) of domain ``name``, seeded by its CRC-32 (not ``hash()``)."""
    rng = np.random.default_rng([SIGNATURE_SEED, zlib.crc32(name.encode("utf-8")), dim])
    v = rng.standard_normal(dim)
    return np.asarray(v / np.linalg.norm(v), dtype=np.float64)


def _softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max())
    return np.asarray(z / z.sum(), dtype=np.float64)


class RouterOptions(AdapterOptions):
    classes: tuple[str, ...] | None = Field(None, description="domain names (data-bound)")
    input_dims: dict[str, int] | None = Field(None, description="payload size per modality (data-bound)")
    decay: float = Field(0.95, ge=0.0, lt=1.0, description="leak of the routing state per frame")
    gain: float = Field(0.5, gt=0.0, description="weight of a frame's evidence in the routing state")
    sharpness: float = Field(4.0, gt=0.0, description="per-frame domain probabilities: softmax(sharpness·e)")
    emit_weights: bool = Field(
        True, description="False: no Prediction.weights; the routing weights are emitted as the scores"
    )


class SoftRouterAdapter(StreamingAdapter):
    """Leaky soft router: ``w_t = softmax(h_t)``, ``h_t = decay · h_{t−1} + gain · e_t`` (see module doc)."""

    Options = RouterOptions
    options: RouterOptions

    def __init__(self, options: RouterOptions | None = None) -> None:
        super().__init__(options)
        classes = self.options.classes or DEFAULT_DOMAINS
        if len(classes) < 2:
            raise ValueError(f"a router needs at least two domains, got {list(classes)}")
        dims = self.options.input_dims or {DOMAIN_MODALITY: DEFAULT_DIM}
        if DOMAIN_MODALITY not in dims:
            raise ValueError(
                f"the router reads the {DOMAIN_MODALITY!r} modality; input_dims has {sorted(dims)}"
            )
        self._info = AdapterInfo(
            name="reference-router",
            classes=tuple(classes),
            modalities=(DOMAIN_MODALITY,),
            capabilities=frozenset({"weights"}) if self.options.emit_weights else frozenset(),
        )
        self._filters = np.stack([domain_signature(c, dims[DOMAIN_MODALITY]) for c in classes])
        self.reset_state()

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.state = np.zeros(len(self._info.classes), dtype=np.float64)

    def predict(self, frame: Frame) -> Prediction:
        x = frame.inputs.get(DOMAIN_MODALITY)
        evidence = (
            self._filters @ np.asarray(x, dtype=np.float64) if x is not None else np.zeros_like(self.state)
        )
        self.state = self.options.decay * self.state + self.options.gain * evidence
        weights = _softmax(self.state)
        if not self.options.emit_weights:  # a plain classifier whose class probabilities are the routing
            return Prediction(scores=weights.astype(np.float32))
        scores = _softmax(self.options.sharpness * evidence).astype(np.float32)
        return Prediction(scores=scores, weights=weights)


def _routing_row(pred: Prediction, use_weights: bool) -> np.ndarray:
    row = pred.weights if use_weights and pred.weights is not None else pred.scores
    return np.asarray(row, dtype=np.float64)


def _last(out: PredictOutput) -> Prediction | None:
    if isinstance(out, list):
        return out[-1] if out else None
    return out


class AggregatedRouter:
    """Aggregates the wrapped adapter's routing weights over a window (module doc; seed 001 exp. C).

    Only the wrapped adapter's last prediction per frame counts; a frame where it says nothing emits
    nothing. Weights come from ``Prediction.weights`` when the wrapped adapter declares the capability
    ``"weights"``, otherwise from its scores. The wrapper's scores are the wrapped scores.
    """

    def __init__(self, inner: Adapter, mode: Aggregation = "none", window: int = 8, tail_decay: float = 0.7):
        if mode not in ("none", "mean", "tail_exp"):
            raise ValueError(f"aggregation must be 'none', 'mean' or 'tail_exp', got {mode!r}")
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        if not 0.0 < tail_decay <= 1.0:
            raise ValueError(f"tail_decay must be in (0, 1], got {tail_decay}")
        self.inner, self.mode, self.window, self.tail_decay = inner, mode, window, tail_decay
        base = inner.info
        self._use_weights = "weights" in base.capabilities
        self._info = base.model_copy(
            update={"name": f"{base.name}+{mode}", "capabilities": base.capabilities | {"weights"}}
        )
        # newest first: coefficient j weighs the row emitted j frames ago
        powers = tail_decay ** np.arange(window) if mode == "tail_exp" else np.ones(window)
        self._coef = powers
        self._history: deque[np.ndarray] = deque(maxlen=window if mode != "none" else 1)

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.inner.reset_state()
        self._history.clear()

    def predict(self, frame: Frame) -> Prediction | None:
        pred = _last(self.inner.predict(frame))
        if pred is None:
            return None
        self._history.appendleft(_routing_row(pred, self._use_weights))
        rows = np.stack(self._history)
        coef = self._coef[: len(rows)]
        weights = (coef[:, np.newaxis] * rows).sum(axis=0) / coef.sum()
        return Prediction(scores=pred.scores, refers_to=pred.refers_to, weights=weights)


class HardLabelRouter:
    """One-hot argmax routing weights of the wrapped adapter (module doc; seed 001 exp. D).

    ``source="scores"``: argmax of the per-frame domain probabilities (no continuous state);
    ``source="weights"``: argmax of the routing weights (falls back to scores when the wrapped
    adapter declares no ``"weights"``). Ties go to the lowest index (``numpy.argmax``).
    """

    def __init__(self, inner: Adapter, source: Literal["scores", "weights"] = "scores"):
        if source not in ("scores", "weights"):
            raise ValueError(f"source must be 'scores' or 'weights', got {source!r}")
        self.inner, self.source = inner, source
        base = inner.info
        self._use_weights = source == "weights" and "weights" in base.capabilities
        tag = "hard" if source == "scores" else "hard-state"
        self._info = base.model_copy(
            update={"name": f"{base.name}+{tag}", "capabilities": base.capabilities | {"weights"}}
        )

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.inner.reset_state()

    def predict(self, frame: Frame) -> Prediction | None:
        pred = _last(self.inner.predict(frame))
        if pred is None:
            return None
        row = _routing_row(pred, self._use_weights)
        weights = np.zeros_like(row)
        weights[int(np.argmax(row))] = 1.0
        return Prediction(scores=pred.scores, refers_to=pred.refers_to, weights=weights)


class AggregatedRouterOptions(RouterOptions):
    aggregation: Aggregation = "mean"
    window: int = Field(8, ge=1, description="frames aggregated")
    tail_decay: float = Field(0.7, gt=0.0, le=1.0, description="tail_exp: weight of a row per frame of age")


class ReferenceAggregatedRouter(AggregatedRouter):
    """:class:`AggregatedRouter` around :class:`SoftRouterAdapter` (``reference-router-aggregated``)."""

    Options = AggregatedRouterOptions

    def __init__(self, options: AggregatedRouterOptions | None = None) -> None:
        opts = options or AggregatedRouterOptions()
        inner = SoftRouterAdapter(
            RouterOptions.model_validate(opts.model_dump(include=set(RouterOptions.model_fields)))
        )
        super().__init__(inner, opts.aggregation, opts.window, opts.tail_decay)


class HardLabelRouterOptions(RouterOptions):
    source: Literal["scores", "weights"] = "scores"


class ReferenceHardLabelRouter(HardLabelRouter):
    """:class:`HardLabelRouter` around :class:`SoftRouterAdapter` (registry ``reference-router-hard``)."""

    Options = HardLabelRouterOptions

    def __init__(self, options: HardLabelRouterOptions | None = None) -> None:
        opts = options or HardLabelRouterOptions()
        inner = SoftRouterAdapter(
            RouterOptions.model_validate(opts.model_dump(include=set(RouterOptions.model_fields)))
        )
        super().__init__(inner, opts.source)
