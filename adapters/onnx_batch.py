"""Batch mode of the ONNX Runtime wrapper (adapters/onnx_runtime.py; issue 28, "batched" serving).

The wrapper's ``predict_batch(items)`` (the contract's, adapters/contract.py) answers one frame of each of
several live streams with one ``session.run``, as a server batches them (Triton's dynamic batcher and
sequence batcher: one frame per stream, each stream's state carried apart). The frames are stacked along
the frame input's leading (batch) axis, each state input is the streams' states joined along
``state_batch_axis`` (a GRU's ``h [L, B, H]``: axis 1), and after the run each stream's slice of every
state output is kept under its key; a key not seen since the last ``reset_state()`` starts from zeros.
The scores output is read as ``[B, C]`` (its leading axis the batch).

A model allows it only where its declared shapes do (:func:`batch_layout`, at load): the batch axis of the
frame input, of every state input and output and of the scores output must be symbolic (dynamic) or a
fixed size that holds ``max_batch_size`` streams, in which case every batch is padded to that size with
zero frames and zero states whose outputs are dropped. Otherwise the error names the input or output and
its declared shape. One stream's state has 1 along the batch axis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streambench.adapters.contract import StreamKey

__all__ = ["BatchLayout", "OnnxBatchError", "OnnxBatchRunner", "batch_layout"]

Shape = tuple[int | str | None, ...]


class OnnxBatchError(ValueError):
    """The model's declared shapes do not allow the batch mode asked for (raised at load time)."""


def _fmt(shape: Sequence[int | str | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


@dataclass(frozen=True)
class BatchLayout:
    """How a batch is laid out: the shape of one frame (batch axis 0, size 1), the state batch axis, and
    the fixed batch size every batch is padded to (None: the model takes any batch size)."""

    frame_shape: tuple[int, ...]
    state_axis: int
    padded_rows: int | None
    max_batch_size: int


def _batch_size(declared: Shape, axis: int, max_batch_size: int, what: str) -> int | None:
    """The declared size of ``what``'s batch axis (None: symbolic); an error if it cannot hold
    ``max_batch_size`` streams."""
    if not -len(declared) <= axis < len(declared):
        raise OnnxBatchError(
            f"batch mode: {what} is declared {_fmt(declared)}, with no axis {axis} to batch streams along"
        )
    size = declared[axis]
    if not isinstance(size, int):
        return None
    if size < max_batch_size:
        raise OnnxBatchError(
            f"batch mode (max_batch_size = {max_batch_size}): {what} is declared {_fmt(declared)}, its batch "
            f"axis {axis} fixed at {size}; export the model with that axis dynamic (dynamic_axes) or lower "
            "max_batch_size"
        )
    return size


def batch_layout(
    max_batch_size: int,
    state_batch_axis: int,
    frame: tuple[str, Shape, tuple[int, ...]],
    states: Mapping[str, tuple[Shape, str, Shape, tuple[int, ...]]],
    scores: tuple[str, Shape],
) -> BatchLayout:
    """Check that the declared shapes allow batches of up to ``max_batch_size`` streams (module docstring).
    ``frame``: (input name, declared shape, shape one frame is fed as); ``states``: state input -> (its
    declared shape, its output's name, the output's declared shape, one stream's state shape); ``scores``:
    (output name, declared shape). Raises :class:`OnnxBatchError` naming the input or output and its shape."""
    name, declared, shape = frame
    if len(declared) < 2 or len(shape) < 2:
        raise OnnxBatchError(
            f"batch mode: frame input {name!r} is declared {_fmt(declared)}; it needs a leading batch axis "
            "(rank >= 2) to take frames of several streams"
        )
    if shape[0] != 1:
        raise OnnxBatchError(
            f"batch mode: frame input {name!r} is fed as {_fmt(shape)}; one frame must be 1 along the batch "
            "axis 0 (input_shape)"
        )
    sizes = [_batch_size(declared, 0, max_batch_size, f"frame input {name!r}")]
    axis = state_batch_axis
    for state_in, (in_declared, state_out, out_declared, one) in states.items():
        sizes.append(_batch_size(in_declared, axis, max_batch_size, f"state input {state_in!r}"))
        sizes.append(_batch_size(out_declared, axis, max_batch_size, f"state output {state_out!r}"))
        if one[state_batch_axis] != 1:
            raise OnnxBatchError(
                f"batch mode: one stream's state {state_in!r} has shape {_fmt(one)}, {one[state_batch_axis]} "
                f"along state_batch_axis {state_batch_axis}; it must be 1 (state_shapes, state_batch_axis)"
            )
    sizes.append(_batch_size(scores[1], 0, max_batch_size, f"output {scores[0]!r}"))
    fixed = sorted({s for s in sizes if s is not None})
    if len(fixed) > 1:
        raise OnnxBatchError(
            f"batch mode: the model's batch axes are fixed at different sizes {fixed}: no batch fits them all"
        )
    return BatchLayout(
        frame_shape=shape,
        state_axis=state_batch_axis,
        padded_rows=fixed[0] if fixed else None,
        max_batch_size=max_batch_size,
    )


class OnnxBatchRunner:
    """The per-stream states of a batch-mode ONNX wrapper and one ``session.run`` per batch."""

    def __init__(
        self,
        session: Any,
        declared: tuple[Mapping[str, tuple[Shape, str]], Mapping[str, tuple[Shape, str]]],
        batch: tuple[int, int],
        frame_input: tuple[str, tuple[int, ...], type[np.generic]],
        scores_output: str,
        state: Mapping[str, str],
        zero_state: Mapping[str, np.ndarray],
        constants: Mapping[str, np.ndarray],
    ) -> None:
        """``declared``: the model's (inputs, outputs), name -> (declared shape, type); ``batch``:
        (max_batch_size, state_batch_axis); ``frame_input``: its name, the shape one frame is fed as, its
        dtype; ``state``: state input -> state output; ``zero_state``: one stream's zeros of each state.
        Raises :class:`OnnxBatchError` where the declared shapes do not allow the batches."""
        inputs, outputs = declared
        self.input_name, frame_shape, self.input_dtype = frame_input
        self.layout = batch_layout(
            batch[0],
            batch[1],
            (self.input_name, inputs[self.input_name][0], frame_shape),
            {s: (inputs[s][0], o, outputs[o][0], zero_state[s].shape) for s, o in state.items()},
            (scores_output, outputs[scores_output][0]),
        )
        self.session = session
        self.state = dict(state)
        self.zero_state = dict(zero_state)
        self.constants = dict(constants)
        self.fetch = [scores_output, *self.state.values()]
        self.states: dict[StreamKey, dict[str, np.ndarray]] = {}

    def forget(self) -> None:
        """Every stream starts afresh (``reset_state()``)."""
        self.states = {}

    def run(self, keys: Sequence[StreamKey], vectors: Sequence[np.ndarray]) -> np.ndarray:
        """The raw scores ``[B, C']`` of one frame of each stream ``keys[b]`` (``vectors[b]``, flat), in one
        run; each stream's new state kept under its key."""
        layout, count = self.layout, len(keys)
        if count > layout.max_batch_size:
            raise ValueError(f"a batch of {count} exceeds max_batch_size = {layout.max_batch_size}")
        if count != len(set(keys)):
            raise ValueError("a batch holds at most one frame per stream")
        if not count:
            return np.zeros((0, 0), dtype=np.float32)
        rows = layout.padded_rows or count
        frames = [v.astype(self.input_dtype, copy=False).reshape(layout.frame_shape[1:]) for v in vectors]
        frames += [np.zeros_like(frames[0])] * (rows - count)  # a fixed batch size: padded, outputs dropped
        feed: dict[str, np.ndarray] = dict(self.constants)
        feed[self.input_name] = np.stack(frames)
        axis = layout.state_axis
        for state_in, zero in self.zero_state.items():
            parts = [self.states[k][state_in] if k in self.states else zero for k in keys]
            parts += [zero] * (rows - count)
            feed[state_in] = np.concatenate(parts, axis=axis)
        result = self.session.run(self.fetch, feed)
        for (state_in, state_out), value in zip(self.state.items(), result[1:], strict=True):
            expected = feed[state_in].shape
            if value.shape != expected:
                raise ValueError(
                    f"state output {state_out!r} came back with shape {_fmt(value.shape)} for a batch of "
                    f"{rows}, state input {state_in!r} was fed {_fmt(expected)}: the state mapping or "
                    "state_batch_axis is wrong"
                )
        for b, key in enumerate(keys):
            kept = self.states.setdefault(key, {})
            for state_in, value in zip(self.state, result[1:], strict=True):
                index: list[slice] = [slice(None)] * value.ndim
                index[axis] = slice(b, b + 1)
                kept[state_in] = value[tuple(index)]
        scores = np.asarray(result[0], dtype=np.float32)
        if scores.ndim == 0 or scores.shape[0] != rows:
            raise ValueError(
                f"output {self.fetch[0]!r} came back with shape {_fmt(np.shape(result[0]))} for a batch of "
                f"{rows}: its leading axis must be the batch"
            )
        return scores.reshape(rows, -1)[:count]
