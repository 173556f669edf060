"""Generic adapter for a user's ``torch.nn.Module``.

The user names a factory, ``"package.module:callable"`` (imported as ``python -m`` finds it:
adapters/importing.py), that returns an ``nn.Module``, called with ``factory_kwargs`` and the data's
``classes`` / ``input_dims`` where its signature names them (:data:`DATA_BOUND_KWARGS`); the adapter
drives it one frame at a time at batch 1 (``../shared/DESIGN.md``, "The engine") in one of two modes:

- ``mode="state"``: the module is pure, its recurrent state passed in and out,
  ``forward(x [1, D], state) -> (logits [1, C], new_state)``. The state at the start of every stream
  is ``module.initial_state()`` when the module has that method, else zeros of ``state_shape`` when
  that option is given, else ``None``; the adapter keeps it between frames and ``reset_state()``
  restores it.
- ``mode="stateful"``: the module keeps its own state, ``forward(x [1, D]) -> logits [1, C]``, and
  has a ``reset_state()``, ``reset()`` or ``reset_states()`` method that ``reset_state()`` calls.

``x`` is the frame's payloads, one per modality in ``modalities`` order, flattened and concatenated
into ``float32 [1, D]``. ``output`` says what the module returns: logits turned into scores by a
softmax (single-label) or a sigmoid (multi-label), or probabilities used as they are. Inference runs
under ``torch.inference_mode()``.

Load-time checks (errors are :class:`TorchModuleLoadError`, a ``ValueError`` naming what is wrong):
the factory resolves and returns an ``nn.Module``; a stateful module has a reset method; ``classes``
is known; and, when ``input_dims`` is known (data-bound), one dry run on a zero frame checks that the
module accepts ``[1, D]`` and returns ``C`` scores (and, in state mode, a ``(logits, state)`` pair).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal

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
    StreamKey,
)
from streambench.adapters.importing import offered_arguments, resolve_callable

__all__ = [
    "DATA_BOUND_KWARGS",
    "RESET_METHODS",
    "DrivenOptions",
    "TorchDriven",
    "TorchModuleAdapter",
    "TorchModuleLoadError",
    "TorchModuleOptions",
    "bind_mode",
    "frame_vector",
    "resolve_modalities",
    "scores_from_output",
]

DATA_BOUND_KWARGS = ("classes", "input_dims")
"""Keyword arguments a factory is offered from the data when its signature names them and
``factory_kwargs`` does not give them: the data-bound options of the same names (``classes`` a tuple of
names, ``input_dims`` ``{modality: payload size}`` of every modality of the data)."""

RESET_METHODS = ("reset_state", "reset", "reset_states")
"""Names of the reset method a stateful module may have, in the order they are looked for."""

OutputKind = Literal["logits_softmax", "logits_sigmoid", "probabilities"]


class TorchModuleLoadError(ValueError):
    """The module, its options or its shapes do not fit the adapter (raised at load time)."""


class DrivenOptions(AdapterOptions):
    """What every torch-driven adapter (a module built here, a TorchScript file) is told.
    ``classes`` and ``input_dims`` are data-bound."""

    mode: Literal["state", "stateful"] = Field(
        "state", description="state: forward(x, state) -> (logits, state); stateful: forward(x) + reset()"
    )
    output: OutputKind = Field("logits_softmax", description="what forward returns, and how it is scored")
    modalities: tuple[str, ...] | None = Field(
        None,
        min_length=1,
        description="inputs, concatenated in order (default: every modality of the data, in its order)",
    )
    classes: tuple[str, ...] | None = Field(None, min_length=1, description="class names (data-bound)")
    input_dims: dict[str, int] | None = Field(None, description="payload size per modality (data-bound)")
    state_shape: list[int] | None = Field(
        None, description="state mode, no initial_state(): every stream starts from zeros of this shape"
    )
    device: str = Field("cpu", description="torch device the module runs on")
    sequence_method: str | None = Field(
        None,
        description="the module's method that runs a whole stream at once under its causal mask, inputs "
        "[T, D] -> outputs [T, C] (as forward's, per frame); declares the capability 'sequence', which "
        "the causality protocol checks (stream/sequence equivalence, perturbation, gradient flow)",
    )
    name: str | None = Field(None, description="name recorded in results; default: the factory or file")
    max_batch_size: int = Field(
        0,
        ge=0,
        description="batch mode (state mode only): the largest batch forward(x [B, D], state) "
        "takes, the state batched along state_batch_axis; 0: no batch mode",
    )
    state_batch_axis: int = Field(0, description="the batch axis of the state (a GRU's h [L, B, H]: 1)")


class TorchModuleOptions(DrivenOptions):
    """Options of :class:`TorchModuleAdapter`. ``classes`` and ``input_dims`` are data-bound."""

    factory: str = Field(description="'package.module:callable' returning an nn.Module")
    factory_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="keyword arguments of factory; a factory whose signature names classes or input_dims "
        "also gets them from the data (unless given here)",
    )


def resolve_modalities(
    modalities: tuple[str, ...] | None, input_dims: Mapping[str, int] | None
) -> tuple[str, ...]:
    """The modalities a wrapped model is fed: those given, else every modality of the data (the
    data-bound ``input_dims``, in the data's order), else audio alone (no data known: a model built by
    hand in Python). A given modality the data lacks is refused, naming the data's."""
    if modalities is None:
        return tuple(input_dims) if input_dims else ("audio",)
    if input_dims is not None:
        unknown = [m for m in modalities if m not in input_dims]
        if unknown:
            sizes = ", ".join(f"{m} {n}" for m, n in input_dims.items())
            raise ValueError(f"modalities {list(unknown)} are not in the data (its payloads: {sizes})")
    return modalities


def frame_vector(
    frame: Frame, modalities: tuple[str, ...], input_dims: Mapping[str, int] | None
) -> np.ndarray:
    """The frame's payloads flattened and concatenated in ``modalities`` order, as ``float32 [D]``.

    A missing payload (``None``) becomes zeros of its size from ``input_dims``; without it, an error.
    """
    parts = []
    for modality in modalities:
        payload = frame.inputs.get(modality)
        if payload is None:
            if input_dims is None or modality not in input_dims:
                raise ValueError(
                    f"frame {frame.index}: modality {modality!r} is missing and its size is unknown "
                    "(give input_dims to feed zeros in its place)"
                )
            parts.append(np.zeros(input_dims[modality], dtype=np.float32))
        else:
            parts.append(np.asarray(payload, dtype=np.float32).reshape(-1))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def scores_from_output(output: torch.Tensor, kind: OutputKind, num_classes: int) -> np.ndarray:
    """Per-class scores ``float32 [C]`` from a module output of ``C`` values (logits or probabilities)."""
    if not isinstance(output, torch.Tensor):
        raise TypeError(f"the module returned {type(output).__name__}, expected a tensor of {num_classes}")
    flat = output.detach().reshape(-1).float()
    if flat.numel() != num_classes:
        raise ValueError(
            f"the module returned shape {tuple(output.shape)} ({flat.numel()} values), "
            f"expected {num_classes} (one per class)"
        )
    if kind == "logits_softmax":
        flat = torch.softmax(flat, dim=0)
    elif kind == "logits_sigmoid":
        flat = torch.sigmoid(flat)
    return np.ascontiguousarray(flat.cpu().numpy(), dtype=np.float32)


class TorchDriven(StreamingAdapter):
    """A torch module fed one frame at a time at batch 1, in ``state`` or ``stateful`` mode (see the
    module docstring); subclasses load the module and call :meth:`_drive`. ``load_error`` is the error
    type their load-time checks raise."""

    load_error: ClassVar[type[ValueError]] = ValueError
    device: torch.device  # set by the subclass before it calls _drive

    def _drive(
        self,
        module: Any,
        options: DrivenOptions,
        name: str,
        bound: tuple[Callable[[], Any] | None, Callable[[], Any] | None],
    ) -> None:
        """Take ``module`` (already on ``self.device``, in eval mode) with its ``(initial_state, reset)``
        callables; check the classes and, when ``input_dims`` is known, one dry run on a zero frame."""
        try:
            modalities = resolve_modalities(options.modalities, options.input_dims)
        except ValueError as exc:
            raise self.load_error(f"{name}: {exc}") from None
        self.opts = options
        self._modalities = modalities
        self.module = module
        self._initial_state, self._reset = bound
        if self._initial_state is None and options.state_shape is not None:
            shape, device = tuple(options.state_shape), self.device
            self._initial_state = lambda: torch.zeros(shape, device=device)
        if options.classes is None:
            raise self.load_error("classes are unknown: give classes (or a data set that names them)")
        self._sequence: Callable[[torch.Tensor], Any] | None = None
        if options.sequence_method is not None:
            method = getattr(module, options.sequence_method, None)
            if not callable(method):
                raise self.load_error(
                    f"sequence_method {options.sequence_method!r}: the module has no such method"
                )
            self._sequence = method
        self._info = AdapterInfo(
            name=name,
            classes=options.classes,
            modalities=modalities,
            device=str(self.device),
            capabilities=frozenset({"sequence"}) if self._sequence is not None else frozenset(),
        )
        self._state: Any = None
        self._states: dict[StreamKey, Any] = {}  # batch mode: the state of each stream, batch axis size 1
        if options.max_batch_size and options.mode != "state":
            raise self.load_error("max_batch_size needs mode 'state' (a stateful module keeps one state)")
        self.max_batch_size = options.max_batch_size
        if options.input_dims is not None:
            self._dry_run(options.input_dims)
        self.reset_state()

    def _dry_run(self, input_dims: Mapping[str, int]) -> None:
        modalities = self._modalities
        dims = sum(input_dims[m] for m in modalities)
        self.reset_state()
        try:
            self._step(np.zeros(dims, dtype=np.float32))
        except Exception as exc:
            sizes = ", ".join(f"{m} {n}" for m, n in input_dims.items())
            raise self.load_error(
                f"{self._info.name}: a zero frame of shape [1, {dims}] (modalities "
                f"{','.join(modalities)}) fails in mode {self.opts.mode!r}: {type(exc).__name__}: "
                f"{exc}. The data's payloads: {sizes}; --option modalities=a,b picks and orders them"
            ) from exc

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        if self._reset is not None:
            self._reset()
        self._state = self._initial_state() if self._initial_state is not None else None
        self._states = {}

    def _scores(self, logits: Any) -> np.ndarray:
        return scores_from_output(logits, self.opts.output, self._info.num_classes)

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
            return self._scores(logits)

    def predict(self, frame: Frame) -> PredictOutput:
        return Prediction(scores=self._step(frame_vector(frame, self._modalities, self.opts.input_dims)))

    # batch mode (option max_batch_size): one frame of each of several streams in one forward

    def predict_batch(self, items: Sequence[tuple[StreamKey, Frame]]) -> list[PredictOutput]:
        """``forward(x [B, D], state)`` once for the items whose streams have a state and once for those
        that start from ``None`` (a module without ``initial_state``); each state is cut out of the batch
        along ``state_batch_axis`` and kept under its key."""
        if not self.max_batch_size:
            raise NotImplementedError(f"{self._info.name}: batch mode is off (option max_batch_size)")
        if len(items) > self.max_batch_size:
            raise ValueError(f"a batch of {len(items)} exceeds max_batch_size = {self.max_batch_size}")
        if len(items) != len({key for key, _ in items}):
            raise ValueError("a batch holds at most one frame per stream")
        initial = self._initial_state
        states = [
            self._states[key] if key in self._states else (initial() if initial is not None else None)
            for key, _ in items
        ]
        scores: list[np.ndarray | None] = [None] * len(items)
        for fresh in (False, True):
            group = [b for b, state in enumerate(states) if (state is None) == fresh]
            if not group:
                continue
            vectors = [frame_vector(items[b][1], self._modalities, self.opts.input_dims) for b in group]
            x = torch.from_numpy(np.stack(vectors)).to(self.device)
            state = None if fresh else _cat_states([states[b] for b in group], self.opts.state_batch_axis)
            with torch.inference_mode():
                out = self.module(x, state)
            if not isinstance(out, tuple | list) or len(out) != 2:
                returned = type(out).__name__
                raise TypeError(f"forward(x, state) returned {returned}, expected (logits, new_state)")
            logits, new_state = out
            for position, (b, piece) in enumerate(
                zip(group, _split_state(new_state, len(group), self.opts.state_batch_axis), strict=True)
            ):
                self._states[items[b][0]] = piece
                scores[b] = self._scores(logits[position])
        return [Prediction(scores=row) for row in scores if row is not None]

    # sequence mode (option sequence_method): the module's own sequence method, forwarded

    def stack(self, frames: Sequence[Frame]) -> torch.Tensor:
        """The frames' vectors stacked into ``[T, D]`` on the module's device."""
        vectors = [frame_vector(f, self._modalities, self.opts.input_dims) for f in frames]
        return torch.from_numpy(np.stack(vectors)).to(self.device)

    def sequence_outputs(self, inputs: torch.Tensor) -> torch.Tensor:
        """Differentiable: the sequence method's outputs ``[T, C]`` turned into scores as ``output`` says."""
        if self._sequence is None:
            raise NotImplementedError(f"{self._info.name}: no sequence_method was given")
        out = self._sequence(inputs)
        if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != inputs.shape[0]:
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise ValueError(f"sequence_method returned {shape}, expected [T={inputs.shape[0]}, C]")
        if self.opts.output == "logits_softmax":
            return torch.softmax(out, dim=1)
        if self.opts.output == "logits_sigmoid":
            return torch.sigmoid(out)
        return out

    def predict_sequence(self, frames: Sequence[Frame]) -> list[Prediction]:
        with torch.no_grad():
            scores = self.sequence_outputs(self.stack(frames)).float().cpu().numpy()
        return [Prediction(scores=scores[i], refers_to=f.index) for i, f in enumerate(frames)]


class TorchModuleAdapter(TorchDriven):
    """A user's ``nn.Module``, fed one frame at a time (see the module docstring for the two modes)."""

    Options: ClassVar[type[TorchModuleOptions]] = TorchModuleOptions
    load_error = TorchModuleLoadError

    def __init__(self, options: TorchModuleOptions | None = None, module: torch.nn.Module | None = None):
        """``module`` (for tests and scripts): use this module instead of calling the factory."""
        if options is None:
            raise TorchModuleLoadError("TorchModuleAdapter needs options (at least factory and classes)")
        super().__init__(options)
        if module is None:
            try:
                factory = resolve_callable(options.factory, "factory")
                data = {name: getattr(options, name) for name in DATA_BOUND_KWARGS}
                kwargs = offered_arguments(factory, options.factory_kwargs, data, "factory_kwargs")
            except (ImportError, ValueError) as exc:
                raise TorchModuleLoadError(str(exc)) from exc
            built = factory(**kwargs)
            if not isinstance(built, torch.nn.Module):
                raise TorchModuleLoadError(
                    f"factory {options.factory!r} returned {type(built).__name__}, not a torch.nn.Module"
                )
            module = built
        self.device = torch.device(options.device)
        module = module.to(self.device).eval()
        bound = bind_mode(
            module, options.mode, TorchModuleLoadError, "a module with a reset method", type(module).__name__
        )
        self._drive(module, options, options.name or options.factory, bound)


def _cat_states(states: Sequence[Any], axis: int) -> Any:
    """Per-stream states (tensors, or tuples of tensors) joined along the batch axis."""
    if isinstance(states[0], tuple | list):
        return type(states[0])(torch.cat(parts, dim=axis) for parts in zip(*states, strict=True))
    return torch.cat(list(states), dim=axis)


def _split_state(state: Any, size: int, axis: int) -> list[Any]:
    """A batched state cut into ``size`` per-stream states along the batch axis."""
    if isinstance(state, tuple | list):
        pieces = [torch.split(part, 1, dim=axis) for part in state]
        if any(len(p) != size for p in pieces):
            raise ValueError(f"the new state's batch axis {axis} does not hold {size} streams")
        return [type(state)(parts) for parts in zip(*pieces, strict=True)]
    if not isinstance(state, torch.Tensor) or state.shape[axis] != size:
        raise ValueError(f"the new state's batch axis {axis} does not hold {size} streams")
    return list(torch.split(state, 1, dim=axis))


def bind_mode(
    module: Any, mode: str, error: type[ValueError], needs: str, subject: str
) -> tuple[Callable[[], Any] | None, Callable[[], Any] | None]:
    """``(initial_state, reset)`` callables of ``module`` for ``mode``; ``error`` if a stateful module
    has no reset method (it could not be made to start each stream afresh)."""
    if mode == "state":
        initial = getattr(module, "initial_state", None)
        return (initial if callable(initial) else None), None
    for name in RESET_METHODS:
        reset = getattr(module, name, None)
        if callable(reset):
            return None, reset
    raise error(f"mode 'stateful' needs {needs} ({', '.join(RESET_METHODS)}); {subject} has none")
