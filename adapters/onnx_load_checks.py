"""Load-time checks of the ONNX Runtime wrapper (adapters/onnx_runtime.py): the model's declared inputs
and outputs against the wrapper's options, before any frame runs.

Each check reads the names, shapes and ONNX Runtime types the session declares (``{name: (shape, type)}``
for the inputs and for the outputs) and raises :class:`OnnxLoadError`, a ``ValueError`` that names the
name, where they do not fit (the wrapper's module docstring lists the checks as its user sees them;
docs/adapters.md, "Built-in wrappers"):

- :func:`execution_providers`: ONNX Runtime's providers for ``device`` (``cpu``, ``cuda[:N]``);
- :func:`check_names`: every mapped name exists on the right side (state inputs and constants among the
  inputs, state outputs and ``output_name`` among the outputs), every model input gets a value, and the
  frame input and the scores output when the options leave them to be found;
- :func:`check_state`: a state output's declared type and shape match its input's; the zero state of each
  (its shape from ``state_shapes`` where the declaration is symbolic);
- :func:`check_constants`: each constant fits its input's declared shape, in the input's dtype;
- :func:`frame_shape`: the shape a frame is reshaped to (symbolic dimensions: 1 for the leading batch
  one of a tensor of rank >= 2, the payload size for the other, at most one; or ``input_shape``).

The checks that need the data or a run (a frame of the data's size fits a fixed input; the dry run) stay
with the wrapper.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = [
    "ORT_DTYPES",
    "OnnxLoadError",
    "Shape",
    "check_constants",
    "check_names",
    "check_state",
    "execution_providers",
    "fits_declared",
    "format_shape",
    "frame_shape",
    "ort_dtype",
]

ORT_DTYPES: dict[str, type[np.generic]] = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}
"""ONNX Runtime type strings and the numpy dtypes fed for them."""

Shape = tuple[int | str | None, ...]
"""A declared shape: a number, a symbolic name or ``None`` per dimension."""

Declared = Mapping[str, tuple[Shape, str]]
"""The session's inputs (or outputs): name -> (declared shape, ONNX Runtime type)."""


class OnnxLoadError(ValueError):
    """The ONNX model does not fit the declared names, shapes or device (raised at load time)."""


def format_shape(shape: Shape | list[int]) -> str:
    """``[1, ?, 8]``: a shape as the messages show it (``?``: a dimension declared without name or size)."""
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


def fits_declared(declared: Shape, actual: tuple[int, ...]) -> bool:
    """A concrete shape fits a declared one: same rank, equal wherever the declaration is a number."""
    return len(declared) == len(actual) and all(
        not isinstance(d, int) or d == a for d, a in zip(declared, actual, strict=True)
    )


def ort_dtype(ort_type: str, what: str) -> type[np.generic]:
    """The numpy dtype fed for an ONNX Runtime type, or :class:`OnnxLoadError` naming ``what``."""
    if ort_type not in ORT_DTYPES:
        raise OnnxLoadError(f"{what} has type {ort_type}, which this adapter cannot feed")
    return ORT_DTYPES[ort_type]


def execution_providers(device: str, available: list[str]) -> list[Any]:
    """ONNX Runtime's providers for ``device``: the CPU's, or CUDA's (device ``N``) before the CPU's."""
    if device == "cpu":
        return ["CPUExecutionProvider"]
    if device == "cuda" or device.startswith("cuda:"):
        if "CUDAExecutionProvider" not in available:
            raise OnnxLoadError(
                f"device {device!r} needs ONNX Runtime's CUDAExecutionProvider; this build has {available}"
            )
        index = int(device.partition(":")[2] or 0)
        return [("CUDAExecutionProvider", {"device_id": index}), "CPUExecutionProvider"]
    raise OnnxLoadError(f"device {device!r}: expected 'cpu' or 'cuda[:N]'")


def check_names(
    inputs: Declared,
    outputs: Declared,
    state: Mapping[str, str],
    constants: Mapping[str, Any],
    input_name: str | None,
    output_name: str | None,
) -> tuple[str, str]:
    """The frame input and the scores output: the options' (``input_name``, ``output_name``), or the one
    input (output) no state or constant claims; every mapped name checked to exist on its side."""
    for state_in, state_out in state.items():
        if state_in not in inputs:
            raise OnnxLoadError(
                f"state input {state_in!r} is not an input of the model (inputs: {list(inputs)})"
            )
        if state_out not in outputs:
            raise OnnxLoadError(
                f"state output {state_out!r} (for state input {state_in!r}) is not an output of the "
                f"model (outputs: {list(outputs)})"
            )
    repeated = {o for o in state.values() if list(state.values()).count(o) > 1}
    if repeated:
        raise OnnxLoadError(f"state outputs {sorted(repeated)} are mapped from more than one state input")
    for name in constants:
        if name not in inputs:
            raise OnnxLoadError(f"constant {name!r} is not an input of the model (inputs: {list(inputs)})")
        if name in state:
            raise OnnxLoadError(f"input {name!r} is declared both a state and a constant")
    free = [n for n in inputs if n not in state and n not in constants]
    if input_name is None:
        if len(free) != 1:
            raise OnnxLoadError(
                f"model inputs {free} have no declared role: name the frame's (input_name) and map "
                "the others as states or constants"
            )
        input_name = free[0]
    elif input_name not in inputs:
        raise OnnxLoadError(
            f"input_name {input_name!r} is not an input of the model (inputs: {list(inputs)})"
        )
    elif input_name in state or input_name in constants:
        raise OnnxLoadError(f"input_name {input_name!r} is also declared a state or a constant")
    unfed = [n for n in free if n != input_name]
    if unfed:
        raise OnnxLoadError(
            f"model inputs {unfed} get no value: declare each as the frame input, a state or a constant"
        )
    candidates = [n for n in outputs if n not in state.values()]
    if output_name is None:
        if len(candidates) != 1:
            raise OnnxLoadError(f"give output_name: the model outputs that are not states are {candidates}")
        output_name = candidates[0]
    elif output_name not in outputs:
        raise OnnxLoadError(
            f"output_name {output_name!r} is not an output of the model (outputs: {list(outputs)})"
        )
    elif output_name in state.values():
        raise OnnxLoadError(f"output_name {output_name!r} is also declared a state output")
    return input_name, output_name


def check_state(
    inputs: Declared,
    outputs: Declared,
    state: Mapping[str, str],
    state_shapes: Mapping[str, list[int]],
) -> dict[str, np.ndarray]:
    """Each state input's zero state (read-only), its output checked to match it in type and shape."""
    zeros: dict[str, np.ndarray] = {}
    for name in state_shapes:
        if name not in state:
            raise OnnxLoadError(f"state_shapes names {name!r}, which is not a state input")
    for state_in, state_out in state.items():
        declared, in_type = inputs[state_in]
        out_declared, out_type = outputs[state_out]
        dtype = ort_dtype(in_type, f"state input {state_in!r}")
        if out_type != in_type:
            raise OnnxLoadError(
                f"state {state_in!r} -> {state_out!r}: the input is {in_type}, the output {out_type}"
            )
        if state_in in state_shapes:
            shape = tuple(state_shapes[state_in])
            if not fits_declared(declared, shape) or any(d < 1 for d in shape):
                raise OnnxLoadError(
                    f"state_shapes[{state_in!r}] = {format_shape(list(shape))} does not fit the model's "
                    f"declared shape {format_shape(declared)}"
                )
        elif all(isinstance(d, int) for d in declared):
            shape = tuple(int(d) for d in declared if isinstance(d, int))  # every one is, as just checked
        else:
            raise OnnxLoadError(
                f"state input {state_in!r} has symbolic dimensions {format_shape(declared)}: give its shape "
                f"in state_shapes (e.g. state_shapes.{state_in}=[...])"
            )
        if not fits_declared(out_declared, shape):
            raise OnnxLoadError(
                f"state {state_in!r} -> {state_out!r}: the output's declared shape "
                f"{format_shape(out_declared)} differs from the state's shape {format_shape(list(shape))}"
            )
        zeros[state_in] = np.zeros(shape, dtype=dtype)
        zeros[state_in].setflags(write=False)
    return zeros


def check_constants(inputs: Declared, constants: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Each constant as an array of its input's dtype, checked to fit the input's declared shape."""
    arrays = {}
    for name, value in constants.items():
        declared, ort_type = inputs[name]
        array = np.asarray(value, dtype=ort_dtype(ort_type, f"constant input {name!r}"))
        if not fits_declared(declared, array.shape):
            raise OnnxLoadError(
                f"constant {name!r} has shape {format_shape(list(array.shape))}, "
                f"the model declares {format_shape(declared)}"
            )
        arrays[name] = array
    return arrays


def frame_shape(
    declared: Shape,
    input_name: str,
    input_shape: list[int] | None,
    input_dims: Mapping[str, int] | None,
    modalities: Sequence[str],
) -> tuple[int, ...]:
    """Shape the frame vector is reshaped to (-1: the payload size, known only per frame)."""
    if input_shape is not None:
        given = tuple(input_shape)
        if not fits_declared(declared, given) or any(d < 1 for d in given):
            raise OnnxLoadError(
                f"input_shape {format_shape(list(given))} does not fit frame input {input_name!r}, "
                f"declared {format_shape(declared)}"
            )
        return given
    shape = [d if isinstance(d, int) else (1 if i == 0 and len(declared) >= 2 else -1) for i, d in
             enumerate(declared)]  # fmt: skip
    if shape.count(-1) > 1:
        raise OnnxLoadError(
            f"frame input {input_name!r} has several symbolic dimensions {format_shape(declared)}: "
            "give input_shape"
        )
    if -1 in shape and input_dims is not None:
        size = sum(input_dims.get(m, 0) for m in modalities)
        known = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = size // known if size % known == 0 else -1
    return tuple(shape)
