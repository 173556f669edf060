"""Reference streaming models for audio-visual event parsing on the synthetic AVE/LLP-shaped data.

Implements the two reference models of streambench (``../shared/DESIGN.md``, "Layout": "reference
models"), scored on the synthetic stream of ``harness/datasets/synthetic.py``, which mimics AVE (seed
004 §6.1.1: 28 event classes plus background, 10 s videos labelled in 1 s segments) with LLP's
modality-specific events (seed 004 §6.1.2: audio-visual, audio-only and visual-only spans).

*Matched filters, no training.* :func:`class_signature` defines one fixed unit vector per (class,
modality). The synthetic data set renders each payload as ``amplitude * signature + noise``; the
reference models use the same signatures as the fixed weights of a per-modality linear matched filter,
so they need no training at run time and are deterministic. Their accuracy on any other data is
meaningless: they exist to give the harness a known, honest, causal model to measure.

* :class:`CausalReferenceAdapter`: matched filter per modality, late fusion (an event class scores the
  mean of the modalities' evidence, so every modality present counts and their noise averages out;
  background only as high as the modality that is least sure of it, so an audio-only or visual-only
  event still wins), causal leaky integration of the
  fused logits across frames, softmax over classes. Labels the frame just fed.
* :class:`LookaheadReferenceAdapter`: the same logits, averaged over a window centred on frame
  ``i - L`` (frames ``i - 2L .. i``); at frame ``i`` it labels frame ``i - L`` (algorithmic delay
  ``L`` frames), optionally with a provisional causal label for frame ``i``.

Class index 0 is background by convention (the fusion rule treats it specially).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Annotated, ClassVar

import numpy as np
import torch
from pydantic import Field
from torch import nn

from streambench.adapters.codebook import (
    AVE_EVENT_CLASSES,
    CODEBOOK_SEED,
    DEFAULT_INPUT_DIMS,
    MODALITY_CODES,
    class_signature,
    default_classes,
    modality_code,
)
from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StageTimer,
    StreamingAdapter,
    StreamKey,
)

__all__ = [
    "AVE_EVENT_CLASSES",
    "CODEBOOK_SEED",
    "DEFAULT_INPUT_DIMS",
    "MODALITY_CODES",
    "CausalReferenceAdapter",
    "LookaheadOptions",
    "LookaheadReferenceAdapter",
    "MatchedFilterFusion",
    "ReferenceOptions",
    "class_signature",
    "default_classes",
    "modality_code",
]


class ReferenceOptions(AdapterOptions):
    """Options of :class:`CausalReferenceAdapter`. ``classes`` and ``input_dims`` are data-bound."""

    classes: tuple[str, ...] | None = Field(
        default=None, min_length=2, description="class names, background first; None: default_classes()"
    )
    input_dims: dict[str, Annotated[int, Field(ge=1)]] | None = Field(
        default=None, min_length=1, description="payload size per modality; None: audio 64, visual 128"
    )
    smoothing: float = Field(
        default=0.8, ge=0.0, lt=1.0, description="leaky-integrator coefficient a: s_t = a s_(t-1) + (1-a) x_t"
    )
    temperature: float = Field(default=0.1, gt=0.0, description="softmax temperature on the fused logits")


class LookaheadOptions(ReferenceOptions):
    """Options of :class:`LookaheadReferenceAdapter`."""

    lookahead_frames: int = Field(default=5, ge=1, description="L: frame i emits the label of frame i - L")
    emit_provisional: bool = Field(
        default=False, description="also emit a provisional causal label for the current frame"
    )


class MatchedFilterFusion(nn.Module):
    """Per-modality linear matched filters with fixed signature weights, fused late.

    ``forward`` takes ``(modality position, payload)`` pairs for the modalities present and returns the
    fused logits ``[C]`` (a new tensor), or ``None`` when no modality is present. Fusion: event classes
    take the mean over the modalities present, background (class 0) the minimum (the background filter is
    stored negated, so that minimum is a maximum; the sign is restored on the way out). A missing
    modality therefore costs the events its evidence and its share of noise averaging.
    """

    sign: torch.Tensor

    def __init__(self, num_classes: int, input_dims: Mapping[str, int]) -> None:
        super().__init__()
        self.modalities = tuple(input_dims)
        self._buffer_names = tuple(f"weight_{k}" for k in range(len(self.modalities)))
        sign = np.ones(num_classes, dtype=np.float32)
        sign[0] = -1.0
        for name, (modality, dim) in zip(self._buffer_names, input_dims.items(), strict=True):
            weight = np.stack([class_signature(c, dim, modality) for c in range(num_classes)])
            self.register_buffer(name, torch.from_numpy(weight * sign[:, None]))
        self.register_buffer("sign", torch.from_numpy(sign))

    def forward(self, inputs: Sequence[tuple[int, torch.Tensor]]) -> torch.Tensor | None:
        if not inputs:
            return None
        buffers = self._buffers
        # a [C, D] x [D, 1] product (not torch.mv) so that torch's flop counter sees it
        signed = [
            torch.mm(buffers[self._buffer_names[k]], x.unsqueeze(1)).squeeze(1)  # type: ignore[arg-type]
            for k, x in inputs
        ]
        if len(signed) == 1:
            return signed[0] * self.sign
        stacked = torch.stack(signed)
        fused = stacked.mean(dim=0)  # events: the modalities' evidence averaged (noise averages out)
        fused[0] = stacked[:, 0].amax()  # background: only as high as the least sure modality
        return fused * self.sign

    def forward_batch(self, inputs: Sequence[torch.Tensor], present: torch.Tensor) -> torch.Tensor:
        """:meth:`forward` for a batch: ``inputs[k]`` the payloads ``[B, D_k]`` of modality
        ``k`` (zeros where missing), ``present`` ``[K, B]`` bool. Returns the fused logits ``[B, C]``, each
        row as :meth:`forward` fuses the modalities present in it (rows with none: zeros)."""
        buffers = self._buffers
        signed = torch.stack(
            [torch.mm(x, buffers[self._buffer_names[k]].t()) for k, x in enumerate(inputs)]  # type: ignore[union-attr]
        )  # [K, B, C]
        mask = present.unsqueeze(2)
        count = present.sum(dim=0).clamp(min=1).unsqueeze(1)
        fused = (signed * mask).sum(dim=0) / count
        background = signed[:, :, 0].masked_fill(~present, float("-inf")).amax(dim=0)
        fused[:, 0] = torch.where(present.any(dim=0), background, torch.zeros_like(background))
        return fused * self.sign


class CausalReferenceAdapter(StreamingAdapter):
    """Causal reference model: matched filters, late fusion, leaky integration, softmax.

    The recurrent state (the integrated logits) lives here and is cleared by :meth:`reset_state`.
    A frame whose modalities are all missing leaves the state unchanged and still gets scores.
    """

    Options = ReferenceOptions
    NAME: ClassVar[str] = "reference-causal"

    def __init__(self, options: ReferenceOptions | None = None) -> None:
        opts = options if options is not None else ReferenceOptions()
        super().__init__(opts)
        self._opts = opts
        self._classes = opts.classes if opts.classes is not None else default_classes()
        dims = dict(opts.input_dims) if opts.input_dims is not None else dict(DEFAULT_INPUT_DIMS)
        self._modalities = tuple(dims)
        self._dims = tuple(dims.values())
        self.model = MatchedFilterFusion(len(self._classes), dims).eval()
        self._gain = 1.0 - float(opts.smoothing)
        self._scale = torch.full((len(self._classes),), 1.0 / float(opts.temperature))
        self._uniform = np.full(len(self._classes), 1.0 / len(self._classes), dtype=np.float32)
        self._state: torch.Tensor | None = None
        CausalReferenceAdapter.reset_state(self)
        self.stages = StageTimer()
        self._info = AdapterInfo(
            name=self.NAME,
            classes=self._classes,
            modalities=self._modalities,
            device="cpu",
            version="1",
            capabilities=frozenset({"stages"}),
        )

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self._state = None
        self._rows: dict[StreamKey, int] = {}  # batch mode: every stream forgotten
        self._table = torch.zeros(16, len(self._classes))
        self._started = torch.zeros(16, dtype=torch.bool)

    def _fused_logits(self, frame: Frame) -> torch.Tensor | None:
        """Fused logits of one frame from the modalities present (``None`` if all are missing)."""
        inputs = frame.inputs
        present: list[tuple[int, torch.Tensor]] = []
        for k, modality in enumerate(self._modalities):
            payload = inputs.get(modality)
            if payload is None:
                continue
            array = np.asarray(payload, dtype=np.float32)
            if array.shape != (self._dims[k],):
                raise ValueError(
                    f"frame {frame.index}: {modality!r} payload has shape {array.shape}, "
                    f"expected ({self._dims[k]},)"
                )
            present.append((k, torch.from_numpy(array)))
        return self.model(present)

    def _integrate(self, logits: torch.Tensor | None) -> None:
        """Leaky integration ``s_t = a s_(t-1) + (1 - a) x_t``; the first frame initialises the state."""
        if logits is None:
            return
        if self._state is None:
            self._state = logits.clone()
        else:
            self._state.lerp_(logits, self._gain)

    def _scores(self, logits: torch.Tensor | None) -> np.ndarray:
        if logits is None:
            return self._uniform.copy()
        return torch.softmax(logits * self._scale, dim=0).numpy()

    def predict(self, frame: Frame) -> PredictOutput:
        stage = self.stages
        with torch.inference_mode():
            with stage("matched filters + fusion"):
                logits = self._fused_logits(frame)
            with stage("temporal integration"):
                self._integrate(logits)
            with stage("softmax head"):
                scores = self._scores(self._state)
            return Prediction(scores=scores)

    # batch mode: one frame of each of several streams, their states stacked along the batch axis

    max_batch_size = 4096

    def _batch_rows(self, keys: Sequence[StreamKey]) -> torch.Tensor:
        """The state row of each key (a new key gets a fresh row; the table doubles when full)."""
        rows = self._rows
        for key in keys:
            if key not in rows:
                if len(rows) == self._table.shape[0]:
                    self._table = torch.cat([self._table, torch.zeros_like(self._table)])
                    self._started = torch.cat([self._started, torch.zeros_like(self._started)])
                rows[key] = len(rows)
        return torch.tensor([rows[key] for key in keys], dtype=torch.long)

    def predict_batch(self, items: Sequence[tuple[StreamKey, Frame]]) -> list[PredictOutput]:
        """:meth:`predict` of each item's stream, in one pass: the matched filters as one ``[B, D] x [D, C]``
        product per modality, the leaky integration and the softmax on the stacked states ``[B, C]``."""
        if len(items) != len({key for key, _ in items}):
            raise ValueError("a batch holds at most one frame per stream")
        with torch.inference_mode():
            payloads = []
            present = torch.zeros(len(self._modalities), len(items), dtype=torch.bool)
            for k, (modality, dim) in enumerate(zip(self._modalities, self._dims, strict=True)):
                block = np.zeros((len(items), dim), dtype=np.float32)
                for b, (_, frame) in enumerate(items):
                    payload = frame.inputs.get(modality)
                    if payload is None:
                        continue
                    array = np.asarray(payload, dtype=np.float32)
                    if array.shape != (dim,):
                        raise ValueError(
                            f"frame {frame.index}: {modality!r} payload has shape {array.shape}, "
                            f"expected ({dim},)"
                        )
                    block[b] = array
                    present[k, b] = True
                payloads.append(torch.from_numpy(block))
            logits = self.model.forward_batch(payloads, present)
            rows = self._batch_rows([key for key, _ in items])
            fed = present.any(dim=0)
            state = self._table.index_select(0, rows)
            started = self._started.index_select(0, rows)
            new = torch.where(started.unsqueeze(1), torch.lerp(state, logits, self._gain), logits)
            new = torch.where(fed.unsqueeze(1), new, state)
            self._table.index_copy_(0, rows, new)
            self._started.index_copy_(0, rows, started | fed)
            scores = torch.softmax(new * self._scale, dim=1).numpy()
            uniform = ~(started | fed).numpy()
            scores[uniform] = self._uniform
        return [Prediction(scores=row) for row in scores]


class LookaheadReferenceAdapter(CausalReferenceAdapter):
    """Reference model with a fixed look-ahead of ``L`` frames (algorithmic delay ``L / fps``).

    At the ``i``-th frame fed it labels the frame fed ``L`` steps earlier (``refers_to = i - L`` when
    no frame was dropped) with the softmax of the fused logits averaged over the frames ``i - 2L .. i``
    (a window centred on ``i - L``, truncated at the stream start; missing frames are left out). It
    returns ``None`` while fewer than ``L + 1`` frames have been fed. With ``emit_provisional`` it also
    returns the causal model's label for the current frame (after the refined one).
    """

    Options = LookaheadOptions
    NAME: ClassVar[str] = "reference-lookahead"
    max_batch_size = 0  # its look-ahead window is kept for one stream only: no batch mode

    def __init__(self, options: LookaheadOptions | None = None) -> None:
        opts = options if options is not None else LookaheadOptions()
        super().__init__(opts)
        self._lookahead = int(opts.lookahead_frames)
        self._provisional = bool(opts.emit_provisional)
        self._width = 2 * self._lookahead + 1
        num_classes = len(self._classes)
        self._window = torch.zeros(self._width, num_classes)
        self._present = [False] * self._width
        self._position = 0
        self._pending: deque[int] = deque(maxlen=self._lookahead + 1)

    def predict_batch(self, items: Sequence[tuple[StreamKey, Frame]]) -> list[PredictOutput]:
        raise NotImplementedError(f"{self.NAME} has no batch mode (its look-ahead window is one stream's)")

    def reset_state(self) -> None:
        super().reset_state()
        self._window.zero_()
        self._present = [False] * self._width
        self._position = 0
        self._pending.clear()

    def predict(self, frame: Frame) -> PredictOutput:
        stage = self.stages
        with torch.inference_mode():
            with stage("matched filters + fusion"):
                logits = self._fused_logits(frame)
            with stage("temporal integration"):
                self._integrate(logits)
            return self._emit(frame, logits)

    def _emit(self, frame: Frame, logits: torch.Tensor | None) -> PredictOutput:
        with self.stages("look-ahead window + head"):
            slot = self._position
            if logits is None:
                self._window[slot].zero_()
            else:
                self._window[slot].copy_(logits)
            self._present[slot] = logits is not None
            self._position = (slot + 1) % self._width
            self._pending.append(frame.index)

            refined: Prediction | None = None
            if len(self._pending) == self._lookahead + 1:
                count = sum(self._present)
                averaged = self._window.sum(dim=0) / count if count > 0 else self._state
                refined = Prediction(scores=self._scores(averaged), refers_to=self._pending[0])
            if not self._provisional:
                return refined
            provisional = Prediction(scores=self._scores(self._state))
            return provisional if refined is None else [refined, provisional]
