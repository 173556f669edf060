"""Batch mode of the ONNX Runtime wrapper (adapters/onnx_runtime.py; "batched" serving).

The wrapper's ``predict_batch(items)`` (the contract's, adapters/contract.py) answers one frame of each of
several live streams with one ``session.run``, as a server batches them (Triton's dynamic batcher and
sequence batcher: one frame per stream, each stream's state carried apart). The frames are stacked along
the frame input's leading (batch) axis, each state input is the streams' states joined along
``state_batch_axis`` (a GRU's ``h [L, B, H]``: axis 1), and after the run each stream's slice of every
state output is kept under its key; a key not seen since the last ``reset_state()`` starts from zeros.
The scores output is read as ``[B, C]`` (its leading axis the batch).

A model allows it only where its declared shapes do (:func:`batch_layout`, at load): the batch axis of the
frame input (0), of every state input and output (``state_batch_axis``) and of the scores output (0) must
be symbolic (dynamic); a fixed one, of any size, is refused (no batch is padded to it),
naming the input or output and its declared shape (a fixed axis 0 of the scores may well be the classes,
``[C, B]``). The scores' other axes, where declared, hold exactly ``C`` values. One stream's state has 1
along the batch axis. Shapes cannot tell a ``[C, B]`` output whose axes are all dynamic, or a wrong
``state_batch_axis`` that yields the right shapes, from a batch: :meth:`OnnxBatchRunner.check_streams_apart`
serves two streams of different frames in batches and one at a time, at load, and refuses the model unless
they agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streambench.adapters.contract import StreamKey

__all__ = [
    "DRY_RUN_STEPS",
    "DRY_RUN_STREAMS",
    "BatchLayout",
    "OnnxBatchError",
    "OnnxBatchRunner",
    "batch_layout",
]

Shape = tuple[int | str | None, ...]


class OnnxBatchError(ValueError):
    """The model's declared shapes do not allow the batch mode asked for (raised at load time)."""


def _fmt(shape: Sequence[int | str | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


DRY_RUN_STREAMS, DRY_RUN_STEPS = 2, 2
"""The load-time check of :meth:`OnnxBatchRunner.check_streams_apart`: streams, frames each."""


@dataclass(frozen=True)
class BatchLayout:
    """How a batch is laid out: the shape of one frame (batch axis 0, size 1) and the state batch axis."""

    frame_shape: tuple[int, ...]
    state_axis: int
    max_batch_size: int


def _dynamic(declared: Shape, axis: int, what: str) -> None:
    """``what``'s batch axis ``axis`` must be declared symbolic (dynamic)."""
    if not -len(declared) <= axis < len(declared):
        raise OnnxBatchError(
            f"batch mode: {what} is declared {_fmt(declared)}, with no axis {axis} to batch streams along"
        )
    size = declared[axis]
    if isinstance(size, int):
        raise OnnxBatchError(
            f"batch mode: {what} is declared {_fmt(declared)}, its batch axis {axis} fixed at {size}; export "
            "the model with that axis dynamic (dynamic_axes), or serve it without batch mode"
        )


def batch_layout(
    max_batch_size: int,
    state_batch_axis: int,
    frame: tuple[str, Shape, tuple[int, ...]],
    states: Mapping[str, tuple[Shape, str, Shape, tuple[int, ...]]],
    scores: tuple[str, Shape, int],
) -> BatchLayout:
    """Check that the declared shapes allow batches of streams (module docstring). ``frame``: (input name,
    declared shape, shape one frame is fed as); ``states``: state input -> (its declared shape, its
    output's name, the output's declared shape, one stream's state shape); ``scores``: (output name,
    declared shape, number of classes C). Raises :class:`OnnxBatchError` naming the input or output and
    its shape."""
    name, declared, shape = frame
    if len(declared) < 2 or len(shape) < 2:
        raise OnnxBatchError(
            f"batch mode: frame input {name!r} is declared {_fmt(declared)}; it needs a leading batch axis "
            "(rank >= 2) to take frames of several streams"
        )
    _dynamic(declared, 0, f"frame input {name!r}")
    if shape[0] != 1:
        raise OnnxBatchError(
            f"batch mode: frame input {name!r} is fed as {_fmt(shape)}; one frame must be 1 along the batch "
            "axis 0 (input_shape)"
        )
    for state_in, (in_declared, state_out, out_declared, one) in states.items():
        _dynamic(in_declared, state_batch_axis, f"state input {state_in!r}")
        _dynamic(out_declared, state_batch_axis, f"state output {state_out!r}")
        if one[state_batch_axis] != 1:
            raise OnnxBatchError(
                f"batch mode: one stream's state {state_in!r} has shape {_fmt(one)}, {one[state_batch_axis]} "
                f"along state_batch_axis {state_batch_axis}; it must be 1 (state_shapes, state_batch_axis)"
            )
    output, out_shape, classes = scores
    _dynamic(out_shape, 0, f"output {output!r}")
    fixed = [d for d in out_shape[1:] if isinstance(d, int)]
    held, complete = math.prod(fixed), len(fixed) == len(out_shape) - 1
    if held < 1 or (held != classes if complete else classes % held != 0):
        raise OnnxBatchError(
            f"batch mode: output {output!r} is declared {_fmt(out_shape)}: beside its batch axis 0 it must "
            f"hold one score per class, {classes} classes"
        )
    return BatchLayout(frame_shape=shape, state_axis=state_batch_axis, max_batch_size=max_batch_size)


class OnnxBatchRunner:
    """The per-stream states of a batch-mode ONNX wrapper and one ``session.run`` per batch."""

    def __init__(
        self,
        session: Any,
        declared: tuple[Mapping[str, tuple[Shape, str]], Mapping[str, tuple[Shape, str]]],
        batch: tuple[int, int],
        frame_input: tuple[str, tuple[int, ...], type[np.generic]],
        scores_output: tuple[str, int],
        state: Mapping[str, str],
        zero_state: Mapping[str, np.ndarray],
        constants: Mapping[str, np.ndarray],
    ) -> None:
        """``declared``: the model's (inputs, outputs), name -> (declared shape, type); ``batch``:
        (max_batch_size, state_batch_axis); ``frame_input``: its name, the shape one frame is fed as, its
        dtype; ``scores_output``: its name and the number of classes; ``state``: state input -> state
        output; ``zero_state``: one stream's zeros of each state. Raises :class:`OnnxBatchError` where the
        declared shapes do not allow the batches."""
        inputs, outputs = declared
        self.input_name, frame_shape, self.input_dtype = frame_input
        scores_name, classes = scores_output
        self.layout = batch_layout(
            batch[0],
            batch[1],
            (self.input_name, inputs[self.input_name][0], frame_shape),
            {s: (inputs[s][0], o, outputs[o][0], zero_state[s].shape) for s, o in state.items()},
            (scores_name, outputs[scores_name][0], classes),
        )
        self.session = session
        self.state = dict(state)
        self.zero_state = dict(zero_state)
        self.constants = dict(constants)
        self.fetch = [scores_name, *self.state.values()]
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
        frames = [v.astype(self.input_dtype, copy=False).reshape(layout.frame_shape[1:]) for v in vectors]
        feed: dict[str, np.ndarray] = dict(self.constants)
        feed[self.input_name] = np.stack(frames)
        axis = layout.state_axis
        for state_in, zero in self.zero_state.items():
            parts = [self.states[k][state_in] if k in self.states else zero for k in keys]
            feed[state_in] = np.concatenate(parts, axis=axis)
        result = self.session.run(self.fetch, feed)
        for (state_in, state_out), value in zip(self.state.items(), result[1:], strict=True):
            expected = feed[state_in].shape
            if value.shape != expected:
                raise ValueError(
                    f"state output {state_out!r} came back with shape {_fmt(value.shape)} for a batch of "
                    f"{count}, state input {state_in!r} was fed {_fmt(expected)}: the state mapping or "
                    "state_batch_axis is wrong"
                )
        for b, key in enumerate(keys):
            kept = self.states.setdefault(key, {})
            for state_in, value in zip(self.state, result[1:], strict=True):
                index: list[slice] = [slice(None)] * value.ndim
                index[axis] = slice(b, b + 1)
                kept[state_in] = value[tuple(index)]
        scores = np.asarray(result[0], dtype=np.float32)
        if scores.ndim == 0 or scores.shape[0] != count:
            raise ValueError(
                f"output {self.fetch[0]!r} came back with shape {_fmt(np.shape(result[0]))} for a batch of "
                f"{count}: its leading axis must be the batch"
            )
        return scores.reshape(count, -1)

    def check_streams_apart(
        self, alone: Callable[[Sequence[np.ndarray]], list[np.ndarray]], size: int
    ) -> None:
        """Serve :data:`DRY_RUN_STREAMS` streams of :data:`DRY_RUN_STEPS` different non-zero frames
        (``size`` values each, seeded) in batches of up to ``max_batch_size``, and compare each stream's
        raw scores with ``alone(frames)``, the same stream served one frame at a time from a reset state
        (the wrapper's single-stream path). Identical zero frames cannot tell the rows apart; these can: a
        scores output laid out ``[C, B]``, states batched along the wrong axis, rows that mix streams.
        Raises :class:`OnnxBatchError` naming the first disagreement; every stream is forgotten after."""
        rng = np.random.default_rng(20240528)
        frames: np.ndarray
        if np.issubdtype(self.input_dtype, np.floating):
            frames = rng.standard_normal((DRY_RUN_STREAMS, DRY_RUN_STEPS, size))
        else:  # integers and booleans: 0 and 1, valid for either
            frames = rng.integers(0, 2, (DRY_RUN_STREAMS, DRY_RUN_STEPS, size))
        expected = [np.asarray(alone(list(stream)), dtype=np.float32) for stream in frames]
        served: list[list[np.ndarray]] = [[] for _ in frames]
        width = self.layout.max_batch_size
        self.forget()
        try:
            for step in range(DRY_RUN_STEPS):
                for first in range(0, DRY_RUN_STREAMS, width):
                    keys = list(range(first, min(first + width, DRY_RUN_STREAMS)))
                    for key, row in zip(keys, self.run(keys, [frames[k, step] for k in keys]), strict=True):
                        served[key].append(row)
        finally:
            self.forget()
        for key, (got, want) in enumerate(zip(served, expected, strict=True)):
            batched = np.array(got)
            if batched.shape == want.shape:
                scale = max(1.0, float(np.abs(want).max()))
                if np.allclose(batched, want, rtol=1e-3, atol=1e-4 * scale):
                    continue
                step = int(np.argmax(np.abs(batched - want).max(axis=1)))
            else:
                step = 0
            got_row, want_row = (np.round(r[step].astype(float), 4).tolist() for r in (batched, want))
            raise OnnxBatchError(
                f"batch mode: on the load-time dry run ({DRY_RUN_STREAMS} streams of different frames, "
                f"served {min(width, DRY_RUN_STREAMS)} at a time), stream {key}'s scores at step {step} "
                f"{got_row} differ from the same stream served alone {want_row}: the batch's rows are not "
                f"its streams. Check state_batch_axis (now {self.layout.state_axis}) and that output "
                f"{self.fetch[0]!r} is laid out [B, C] (batch axis 0, not [C, B])"
            )
