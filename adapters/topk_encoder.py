"""A TopK sparse encoder over the stream's features: the reference subject of the stability protocol.

Seed 000 compares a per-timestep TopK sparse code with a window TopK (w = 8) code: the window variant
keeps features alive longer (Jaccard of adjacent frames up, flips down) while detection holds up
("指标之间的关系", "关键洞察"). This adapter reproduces that comparison on any stream of vectors:

* **encoder**: a fixed, seeded random dictionary ``D`` ``[dictionary_size, Σ input_dims]`` (unit rows)
  over the concatenated modalities (a missing modality contributes zeros); codes
  ``c_t = ReLU(D x_t)``.
* **selection** (``variant``):

  - ``"timestep"``: the ``k`` units with the largest ``c_t`` (the seed's "Per-timestep TopK").
  - ``"window"``: the ``k`` units with the largest code summed over the last ``window`` frames,
    ``Σ_{τ=t-w+1..t} c_τ`` (the seed's "Window TopK (w=8)"; causal: only frames already fed, a
    shorter sum at the start of a stream).

  Ties are broken towards the lower unit index. The sparse code ``z_t`` is ``c_t`` on the selected
  units and 0 elsewhere.
* **readout** (causal, no training): the class-signature matched filters of the synthetic data set
  (the same seeded codebook as ``streambench.adapters.reference.class_signature``, rebuilt here because
  concrete adapters import nothing of ours but the contract; a test asserts they are identical) applied to the
  *reconstruction* ``x̂_t = Dᵀ z_t`` of each modality present, averaged over the modalities present,
  integrated by a leaky integrator and turned into class probabilities by a softmax. The scores
  therefore see only what the sparse code keeps, so the event metrics of the same run show whether
  the more stable selection cost accuracy. On data whose classes are not the synthetic set's
  signatures the scores mean nothing; the features still do.

``Prediction.features`` is the ``k`` selected unit indices (int64, ascending). Options are chosen on
the command line with ``--option variant=window`` (registry name ``topk-encoder``).
"""

from __future__ import annotations

import itertools
import zlib
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
)

__all__ = ["TopKEncoderAdapter", "TopKEncoderOptions", "signature"]

_CODEBOOK_SEED = 40_042_018
"""The synthetic data set's signature codebook seed (``streambench.adapters.reference.CODEBOOK_SEED``)."""
_MODALITY_CODES = {"audio": 1, "visual": 2}
_DEFAULT_DIMS = {"audio": 64, "visual": 128}


def signature(class_index: int, dim: int, modality: str) -> np.ndarray:
    """Unit ``float32[dim]`` signature of a class in a modality:
    ``streambench.adapters.reference.class_signature``."""
    code = _MODALITY_CODES.get(modality)
    if code is None:
        code = 1000 + zlib.crc32(modality.encode("utf-8"))
    vector = np.random.default_rng([_CODEBOOK_SEED, code, class_index]).standard_normal(dim)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class TopKEncoderOptions(AdapterOptions):
    """Options of :class:`TopKEncoderAdapter`. ``classes`` and ``input_dims`` are data-bound."""

    classes: tuple[str, ...] | None = Field(
        default=None, min_length=2, description="class names, background first; None: background + 28 events"
    )
    input_dims: dict[str, Annotated[int, Field(ge=1)]] | None = Field(
        default=None, min_length=1, description="payload size per modality; None: audio 64, visual 128"
    )
    dictionary_size: int = Field(default=256, ge=1, description="units of the random dictionary")
    k: int = Field(default=16, ge=1, description="active units per frame (TopK)")
    variant: Literal["timestep", "window"] = Field(
        default="timestep", description="TopK of the current codes, or of the codes summed over the window"
    )
    window: int = Field(default=8, ge=1, description="w: frames summed by the window variant (seed 000: 8)")
    seed: int = Field(default=0, ge=0, description="seed of the dictionary")
    smoothing: float = Field(default=0.8, ge=0.0, lt=1.0, description="leaky integrator of the readout")
    temperature: float = Field(default=0.1, gt=0.0, description="softmax temperature of the readout")

    @model_validator(mode="after")
    def _k_fits(self) -> TopKEncoderOptions:
        if self.k > self.dictionary_size:
            raise ValueError(f"k ({self.k}) must not exceed dictionary_size ({self.dictionary_size})")
        return self


class TopKEncoderAdapter(StreamingAdapter):
    """TopK sparse code of each frame (per-timestep or window selection) and a matched-filter readout."""

    Options = TopKEncoderOptions
    NAME: ClassVar[str] = "topk-encoder"

    def __init__(self, options: TopKEncoderOptions | None = None) -> None:
        opts = options if options is not None else TopKEncoderOptions()
        super().__init__(opts)
        self._opts = opts
        classes = opts.classes if opts.classes is not None else _default_classes()
        dims = dict(opts.input_dims) if opts.input_dims is not None else dict(_DEFAULT_DIMS)
        self._modalities = tuple(dims)
        bounds = np.cumsum([0, *dims.values()])
        self._slices = [slice(int(a), int(b)) for a, b in itertools.pairwise(bounds)]
        rng = np.random.default_rng([opts.seed, opts.dictionary_size, int(bounds[-1])])
        dictionary = rng.standard_normal((opts.dictionary_size, int(bounds[-1])))
        self.dictionary = (dictionary / np.linalg.norm(dictionary, axis=1, keepdims=True)).astype(np.float32)
        # readout of modality m from the code: signatures_m · D_mᵀ, [C, dictionary_size]
        self._readout = [
            np.stack([signature(c, dim, m) for c in range(len(classes))]) @ self.dictionary[:, s].T
            for (m, dim), s in zip(dims.items(), self._slices, strict=True)
        ]
        self._k = opts.k
        self._window = opts.window if opts.variant == "window" else 1
        self._gain = 1.0 - opts.smoothing
        self._inv_temperature = 1.0 / opts.temperature
        self._x = np.zeros(int(bounds[-1]), dtype=np.float32)
        self._info = AdapterInfo(
            name=f"{self.NAME}-{opts.variant}",
            classes=classes,
            modalities=self._modalities,
            device="cpu",
            version="1",
            capabilities=frozenset({"features"}),
        )
        self.reset_state()

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self._history = np.zeros((self._window, self._opts.dictionary_size), dtype=np.float32)
        self._slot = 0
        self._state: np.ndarray | None = None

    def encode(self, frame: Frame) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Codes ``c_t`` ``[dictionary_size]``, the selected unit indices (ascending), the modalities present.

        Advances the window state: call once per frame.
        """
        x = self._x
        x[:] = 0.0
        present = []
        for m, (modality, s) in enumerate(zip(self._modalities, self._slices, strict=True)):
            payload = frame.inputs.get(modality)
            if payload is None:
                continue
            array = np.asarray(payload, dtype=np.float32).reshape(-1)
            if array.size != s.stop - s.start:
                raise ValueError(
                    f"frame {frame.index}: {modality!r} payload has {array.size} values, "
                    f"expected {s.stop - s.start}"
                )
            x[s] = array
            present.append(m)
        codes = np.maximum(self.dictionary @ x, 0.0)
        self._history[self._slot] = codes
        self._slot = (self._slot + 1) % self._window
        ranking = codes if self._window == 1 else self._history.sum(axis=0)
        selected = np.sort(np.argsort(-ranking, kind="stable")[: self._k]).astype(np.int64)
        return codes, selected, present

    def predict(self, frame: Frame) -> PredictOutput:
        codes, selected, present = self.encode(frame)
        if present:
            z = codes[selected]
            logits = sum(self._readout[m][:, selected] @ z for m in present) / len(present)
            if self._state is None:
                self._state = np.asarray(logits, dtype=np.float64)
            else:
                self._state += self._gain * (logits - self._state)
        if self._state is None:
            scores = np.full(len(self._info.classes), 1.0 / len(self._info.classes), dtype=np.float32)
        else:
            shifted = (self._state - self._state.max()) * self._inv_temperature
            e = np.exp(shifted)
            scores = (e / e.sum()).astype(np.float32)
        return Prediction(scores=scores, features=selected)


def _default_classes() -> tuple[str, ...]:
    return ("background", *(f"event_{i:02d}" for i in range(28)))
