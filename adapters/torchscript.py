"""Generic adapter for a TorchScript file.

``path`` names a module saved with ``torch.jit.save`` (scripted or traced); it is loaded with
``torch.jit.load(path, map_location=device)`` and driven one frame at a time at batch 1, in the same
two modes as :mod:`streambench.adapters.torch_module`:

- ``mode="state"``: ``forward(x [1, D], state) -> (logits [1, C], new_state)``; the state at the
  start of every stream is ``initial_state()`` when the script exports that method
  (``@torch.jit.export``), else zeros of ``state_shape`` when that option is given (a traced module
  has only ``forward``), else ``None``.
- ``mode="stateful"``: ``forward(x [1, D]) -> logits [1, C]``, the module keeping its own state, and
  an exported ``reset_state()``, ``reset()`` or ``reset_states()`` that ``reset_state()`` calls.

``x`` is the frame's payloads flattened and concatenated in ``modalities`` order; ``output`` says how
the module's ``C`` values become scores (softmax, sigmoid, or as they are). Inference runs under
``torch.inference_mode()``.

Load-time checks (errors are :class:`TorchScriptLoadError`, a ``ValueError``): the file exists and is
a TorchScript archive; a stateful script has a reset method; ``classes`` is known; and, when
``input_dims`` is known (data-bound), one dry run on a zero frame checks the signature and that ``C``
scores come out.

The driving itself (modes, dry run, scoring) is :class:`streambench.adapters.torch_module.TorchDriven`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from pydantic import Field

from streambench.adapters.torch_module import DrivenOptions, TorchDriven, bind_mode

__all__ = ["TorchScriptAdapter", "TorchScriptLoadError", "TorchScriptOptions"]


class TorchScriptLoadError(ValueError):
    """The TorchScript file, its options or its shapes do not fit the adapter (raised at load time)."""


class TorchScriptOptions(DrivenOptions):
    """Options of :class:`TorchScriptAdapter`. ``classes`` and ``input_dims`` are data-bound."""

    path: str = Field(description="a module saved by torch.jit.save")


class TorchScriptAdapter(TorchDriven):
    """A TorchScript module, fed one frame at a time (see the module docstring for the two modes)."""

    Options: ClassVar[type[TorchScriptOptions]] = TorchScriptOptions
    load_error = TorchScriptLoadError

    def __init__(self, options: TorchScriptOptions | None = None) -> None:
        if options is None:
            raise TorchScriptLoadError("TorchScriptAdapter needs options (at least path and classes)")
        super().__init__(options)
        path = Path(options.path)
        if not path.is_file():
            raise TorchScriptLoadError(f"TorchScript file {str(path)!r} does not exist")
        self.device = torch.device(options.device)
        try:
            module = torch.jit.load(str(path), map_location=self.device).eval()
        except Exception as exc:
            raise TorchScriptLoadError(
                f"{str(path)!r} is not a TorchScript file (torch.jit.load: {type(exc).__name__}: {exc})"
            ) from exc
        needs = "a script with an exported reset method"
        bound = bind_mode(module, options.mode, TorchScriptLoadError, needs, repr(str(path)))
        self._drive(module, options, options.name or path.name, bound)

    def _scores(self, logits: Any) -> np.ndarray:
        if not isinstance(logits, torch.Tensor):
            raise TypeError(f"the module returned {type(logits).__name__}, expected a tensor")
        flat = logits.reshape(-1).float()
        if flat.numel() != self._info.num_classes:
            raise ValueError(
                f"the module returned shape {tuple(logits.shape)}, expected {self._info.num_classes} values "
                "(one per class)"
            )
        if self.opts.output == "logits_softmax":
            flat = torch.softmax(flat, dim=0)
        elif self.opts.output == "logits_sigmoid":
            flat = torch.sigmoid(flat)
        return np.ascontiguousarray(flat.cpu().numpy(), dtype=np.float32)
