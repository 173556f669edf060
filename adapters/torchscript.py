"""Generic adapter for a TorchScript file (issue 8, part 1: "TorchScript files").

``path`` names a module saved with ``torch.jit.save`` (scripted or traced); it is loaded with
``torch.jit.load(path, map_location=device)`` and driven one frame at a time at batch 1, in the same
two modes as :mod:`adapters.torch_module`:

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

(The frame/score helpers repeat those of :mod:`adapters.torch_module` on purpose: a concrete adapter
imports nothing of ours but the contract, ``../shared/DESIGN.md`` "Layout".)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import Field

from adapters.contract import AdapterInfo, AdapterOptions, Frame, Prediction, PredictOutput, StreamingAdapter

__all__ = ["TorchScriptAdapter", "TorchScriptLoadError", "TorchScriptOptions"]

_RESET_METHODS = ("reset_state", "reset", "reset_states")


class TorchScriptLoadError(ValueError):
    """The TorchScript file, its options or its shapes do not fit the adapter (raised at load time)."""


class TorchScriptOptions(AdapterOptions):
    """Options of :class:`TorchScriptAdapter`. ``classes`` and ``input_dims`` are data-bound."""

    path: str = Field(description="a module saved by torch.jit.save")
    mode: Literal["state", "stateful"] = Field(
        "state", description="state: forward(x, state) -> (logits, state); stateful: forward(x) + reset()"
    )
    output: Literal["logits_softmax", "logits_sigmoid", "probabilities"] = Field(
        "logits_softmax", description="what forward returns, and how it is scored"
    )
    modalities: tuple[str, ...] = Field(("audio",), min_length=1, description="inputs, concatenated in order")
    classes: tuple[str, ...] | None = Field(None, min_length=1, description="class names (data-bound)")
    input_dims: dict[str, int] | None = Field(None, description="payload size per modality (data-bound)")
    state_shape: list[int] | None = Field(
        None, description="state mode, no initial_state(): every stream starts from zeros of this shape"
    )
    device: str = Field("cpu", description="map_location and the device frames are moved to")
    name: str | None = Field(None, description="name recorded in results; default: the file name")


class TorchScriptAdapter(StreamingAdapter):
    """A TorchScript module, fed one frame at a time (see the module docstring for the two modes)."""

    Options: ClassVar[type[TorchScriptOptions]] = TorchScriptOptions

    def __init__(self, options: TorchScriptOptions | None = None) -> None:
        if options is None:
            raise TorchScriptLoadError("TorchScriptAdapter needs options (at least path and classes)")
        super().__init__(options)
        self.opts = options
        path = Path(options.path)
        if not path.is_file():
            raise TorchScriptLoadError(f"TorchScript file {str(path)!r} does not exist")
        self.device = torch.device(options.device)
        try:
            self.module = torch.jit.load(str(path), map_location=self.device).eval()
        except Exception as exc:
            raise TorchScriptLoadError(
                f"{str(path)!r} is not a TorchScript file (torch.jit.load: {type(exc).__name__}: {exc})"
            ) from exc
        self._initial_state: Callable[[], Any] | None = None
        self._reset: Callable[[], Any] | None = None
        if options.mode == "state":
            initial = getattr(self.module, "initial_state", None)
            self._initial_state = initial if callable(initial) else None
            if self._initial_state is None and options.state_shape is not None:
                shape, device = tuple(options.state_shape), self.device
                self._initial_state = lambda: torch.zeros(shape, device=device)
        else:
            self._reset = next(
                (r for r in (getattr(self.module, n, None) for n in _RESET_METHODS) if callable(r)), None
            )
            if self._reset is None:
                raise TorchScriptLoadError(
                    f"mode 'stateful' needs a script with an exported reset method "
                    f"({', '.join(_RESET_METHODS)}); {str(path)!r} has none"
                )
        if options.classes is None:
            raise TorchScriptLoadError("classes are unknown: give classes (or a data set that names them)")
        self._info = AdapterInfo(
            name=options.name or path.name,
            classes=options.classes,
            modalities=options.modalities,
            device=str(self.device),
        )
        self._state: Any = None
        if options.input_dims is not None:
            self._dry_run(options.input_dims)
        self.reset_state()

    def _dry_run(self, input_dims: Mapping[str, int]) -> None:
        missing = [m for m in self.opts.modalities if m not in input_dims]
        if missing:
            raise TorchScriptLoadError(f"input_dims has no size for modalities {missing}")
        dims = sum(input_dims[m] for m in self.opts.modalities)
        self.reset_state()
        try:
            self._step(np.zeros(dims, dtype=np.float32))
        except Exception as exc:
            raise TorchScriptLoadError(
                f"{self._info.name}: a zero frame of shape [1, {dims}] (input_dims {dict(input_dims)}) "
                f"fails in mode {self.opts.mode!r}: {type(exc).__name__}: {exc}"
            ) from exc

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        if self._reset is not None:
            self._reset()
        self._state = self._initial_state() if self._initial_state is not None else None

    def _step(self, vector: np.ndarray) -> np.ndarray:
        x = torch.from_numpy(vector).reshape(1, -1).to(self.device)
        with torch.inference_mode():
            if self.opts.mode == "state":
                out = self.module(x, self._state)
                if not isinstance(out, tuple | list) or len(out) != 2:
                    raise TypeError(
                        f"forward(x, state) returned {type(out).__name__}, expected (logits, new_state)"
                    )
                logits, self._state = out
            else:
                logits = self.module(x)
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

    def predict(self, frame: Frame) -> PredictOutput:
        parts = []
        for modality in self.opts.modalities:
            payload = frame.inputs.get(modality)
            if payload is None:
                dims = self.opts.input_dims
                if dims is None or modality not in dims:
                    raise ValueError(
                        f"frame {frame.index}: modality {modality!r} is missing and its size is unknown "
                        "(give input_dims to feed zeros in its place)"
                    )
                parts.append(np.zeros(dims[modality], dtype=np.float32))
            else:
                parts.append(np.asarray(payload, dtype=np.float32).reshape(-1))
        vector = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return Prediction(scores=self._step(vector))
