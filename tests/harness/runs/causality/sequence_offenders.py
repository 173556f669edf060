"""Sequence-mode offenders for tests/harness/runs/causality/test_sequence.py and test_replay.py (issue 15
item 4), built by module path (``tests.harness.runs.causality.sequence_offenders:<Class>``). Each streams
honestly (a running mean of the frame vectors, projected and squashed, as
:class:`streambench.adapters.offenders.OffByOneMaskAdapter` does) and breaks only its sequence mode:

* :class:`SymmetricPadding`: the sequence mode smooths with a centred window (position t averages
  t - 1, t, t + 1, as a convolution with symmetric padding does): a future dependency gradients see too.
* :class:`DetachedTap`: the sequence mode adds ``0.5 * x_(t+1).detach()``: gradients cannot see it; the
  perturbation probe must.
* :class:`DeclaredOnly`: declares the capability ``sequence`` but implements no ``predict_sequence``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch

from streambench.adapters.contract import AdapterOptions, Frame, Prediction
from streambench.adapters.offenders import OffByOneMaskAdapter, OffByOneMaskOptions


class _Honest(OffByOneMaskAdapter):
    """The off-by-one offender with the correct mask (``mask_offset=0``): an honest sequence mode."""

    Options: ClassVar[type[AdapterOptions]] = OffByOneMaskOptions

    def __init__(self, options: OffByOneMaskOptions | None = None) -> None:
        opts = (options or OffByOneMaskOptions()).model_copy(update={"mask_offset": 0})
        super().__init__(opts)


class SymmetricPadding(_Honest):
    NAME: ClassVar[str] = "symmetric-padding"
    CAPABILITIES: ClassVar[frozenset[Any]] = frozenset({"sequence"})

    def sequence_outputs(self, inputs: torch.Tensor) -> torch.Tensor:
        padded = torch.cat([inputs[:1], inputs, inputs[-1:]])  # symmetric padding, centred window
        smoothed = (padded[:-2] + padded[1:-1] + padded[2:]) / 3
        return super().sequence_outputs(smoothed)


class DetachedTap(_Honest):
    NAME: ClassVar[str] = "detached-tap"
    CAPABILITIES: ClassVar[frozenset[Any]] = frozenset({"sequence"})

    def sequence_outputs(self, inputs: torch.Tensor) -> torch.Tensor:
        ahead = torch.cat([inputs[1:], inputs[-1:]]).detach()  # the future, hidden from autograd
        return super().sequence_outputs(inputs + 0.5 * ahead)


class DeclaredOnly(_Honest):
    """Declares a sequence mode it does not have: no predict_sequence, no sequence function."""

    NAME: ClassVar[str] = "declared-only"
    CAPABILITIES: ClassVar[frozenset[Any]] = frozenset({"sequence"})
    sequence_outputs = None  # type: ignore[assignment]
    stack = None  # type: ignore[assignment]
    predict_sequence = None  # type: ignore[assignment]


class NoDifferentiable(_Honest):
    """A correct predict_sequence without a differentiable sequence function: perturbation still runs."""

    NAME: ClassVar[str] = "no-differentiable"
    CAPABILITIES: ClassVar[frozenset[Any]] = frozenset({"sequence"})

    def predict_sequence(self, frames: Sequence[Frame]) -> list[Prediction]:
        with torch.no_grad():
            scores = OffByOneMaskAdapter.sequence_outputs(self, OffByOneMaskAdapter.stack(frames))
        array = scores.numpy().astype(np.float32)
        return [Prediction(scores=array[i], refers_to=f.index) for i, f in enumerate(frames)]

    sequence_outputs = None  # type: ignore[assignment]
