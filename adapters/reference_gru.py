"""The reference GRU: the causal reference model's matched filters and leaky integrator written as one
``torch.nn.GRU`` layer and a linear head, driven by the torch-module wrapper (the model on
which the capacity protocol compares batched serving with replicas on CPU).

The reference models of :mod:`streambench.adapters.reference` are hand-written loops; a serving system
meets recurrent networks. This one is a real ``nn.GRU`` (PyTorch's gate order ``r, z, n``,
``h' = (1 - z) * n + z * h``, ``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``) whose weights are set, not
trained, so it is deterministic and scores sensibly on the synthetic data set:

- the new-state gate ``n`` holds the matched filters, ``W_in = gain * signature / K`` (K modalities, the
  signatures of :func:`~streambench.adapters.codebook.class_signature`, concatenated in the data's
  modality order), so ``n`` is the modalities' mean evidence per class squashed by ``tanh``;
- the update gate is a constant, ``z = sigmoid(logit(smoothing)) = smoothing``: the reference model's leaky
  integrator ``s_t = a s_(t-1) + (1 - a) x_t``; ``W_hn = 0``, so the reset gate does not matter;
- the head scales by ``1 / (gain * temperature)``, then a softmax over classes.

Unlike the reference model's fusion (background only as high as the least sure modality), a linear layer
averages the background's evidence too, weighted ``background_weight`` so that an audio-only or visual-only
event still wins over the background the other modality shows. Its F1 is therefore a little below the
reference model's; it exists to be served, one stream or many, not to be the best model.

The state is ``h [1, 1, C]``, batched along axis 1: batch mode (``max_batch_size``, default 64) runs
``forward(x [B, D], h [1, B, C])`` for one frame of each of B streams (the torch-module wrapper's
``predict_batch``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

import numpy as np
import torch
from pydantic import Field
from torch import nn

from streambench.adapters.codebook import DEFAULT_INPUT_DIMS, class_signature, default_classes
from streambench.adapters.torch_module import (
    DrivenOptions,
    TorchDriven,
    TorchModuleLoadError,
    bind_mode,
    resolve_modalities,
)

__all__ = ["MatchedFilterGru", "ReferenceGruAdapter", "ReferenceGruOptions"]


class ReferenceGruOptions(DrivenOptions):
    """Options of :class:`ReferenceGruAdapter`. ``classes`` and ``input_dims`` are data-bound (default: the
    synthetic data set's 29 classes, audio 64 and visual 128)."""

    smoothing: float = Field(0.8, gt=0.0, lt=1.0, description="update gate z: s_t = z s_(t-1) + (1-z) x_t")
    temperature: float = Field(0.1, gt=0.0, description="softmax temperature on the integrated evidence")
    gain: float = Field(0.5, gt=0.0, description="scale of the evidence inside tanh (small: nearly linear)")
    background_weight: float = Field(
        0.8, gt=0.0, le=1.0, description="the background filter's weight relative to the events'"
    )
    max_batch_size: int = Field(64, ge=0, description="batch mode: the largest batch (0: off)")
    state_batch_axis: int = Field(1, description="h [layers, batch, hidden]: the batch axis is 1")


class MatchedFilterGru(nn.Module):
    """``forward(x [B, D], h [1, B, C] | None) -> (logits [B, C], h)``; ``initial_state()`` is zeros."""

    def __init__(self, num_classes: int, input_dims: Mapping[str, int], opts: ReferenceGruOptions) -> None:
        super().__init__()
        self.num_classes = num_classes
        dims = sum(input_dims.values())
        self.gru = nn.GRU(dims, num_classes, batch_first=True)
        self.head = nn.Linear(num_classes, num_classes, bias=False)
        signatures = [
            np.stack([class_signature(c, dim, m) for c in range(num_classes)])
            for m, dim in input_dims.items()
        ]
        filters = torch.from_numpy(np.concatenate(signatures, axis=1) / len(input_dims))
        filters[0] *= opts.background_weight
        c = num_classes
        with torch.no_grad():
            for parameter in self.gru.parameters():
                parameter.zero_()
            weight_ih, bias_ih = self.gru.get_parameter("weight_ih_l0"), self.gru.get_parameter("bias_ih_l0")
            weight_ih[2 * c :] = opts.gain * filters  # n: the matched filters
            bias_ih[c : 2 * c] = math.log(opts.smoothing / (1.0 - opts.smoothing))  # z = a
            self.head.weight.copy_(torch.eye(c) / (opts.gain * opts.temperature))

    def initial_state(self) -> torch.Tensor:
        return torch.zeros(1, 1, self.num_classes, device=self.head.weight.device)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.gru(x.unsqueeze(1), h)
        return self.head(out[:, 0]), h


class ReferenceGruAdapter(TorchDriven):
    """The reference GRU (``--adapter reference-gru``), one frame at a time or one frame of each of up to
    ``max_batch_size`` streams per call."""

    Options: ClassVar[type[ReferenceGruOptions]] = ReferenceGruOptions
    load_error = TorchModuleLoadError

    def __init__(self, options: ReferenceGruOptions | None = None) -> None:
        opts = options if options is not None else ReferenceGruOptions()
        if opts.mode != "state":
            raise TorchModuleLoadError("reference-gru: mode is 'state' (its state is passed in and out)")
        classes = opts.classes if opts.classes is not None else default_classes()
        dims = dict(opts.input_dims) if opts.input_dims is not None else dict(DEFAULT_INPUT_DIMS)
        if opts.modalities is not None:
            try:  # an unknown one refused by name, before the data's payloads are narrowed to those given
                resolve_modalities(opts.modalities, dims)
            except ValueError as exc:
                raise TorchModuleLoadError(f"{opts.name or 'reference-gru'}: {exc}") from None
            dims = {m: dims[m] for m in opts.modalities}
        opts = opts.model_copy(update={"classes": classes, "input_dims": dims})
        super().__init__(opts)
        self.device = torch.device(opts.device)
        module = MatchedFilterGru(len(classes), dims, opts).to(self.device).eval()
        bound = bind_mode(module, "state", TorchModuleLoadError, "", "MatchedFilterGru")
        self._drive(module, opts, opts.name or "reference-gru", bound)
