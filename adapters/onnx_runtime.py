"""Generic adapter for an ONNX model run by ONNX Runtime.

A recurrent ONNX model streams by carrying its state from one frame to the next: ``state`` maps each
state *input* of the model to the *output* that holds its next value (``{"h": "h_out"}``). At every
frame the adapter feeds the frame as ``input_name``, each state input its last value and each
``constants`` input its fixed value (e.g. Silero's ``sr``), reads the scores from ``output_name`` and
keeps the state outputs for the next frame; ``reset_state()`` sets every state to zeros
(``../shared/DESIGN.md``, "The engine": state reset before every stream).

Shapes and dtypes come from the model's own input declarations. A state input with a symbolic
dimension needs its shape in ``state_shapes``; the frame input's symbolic dimensions are 1 for the
leading (batch) one of a tensor of rank >= 2 and the payload size for the other (at most one), unless
``input_shape`` gives the shape. The frame is the payloads of ``modalities`` flattened and
concatenated, reshaped to that shape.

Load-time checks (errors are :class:`OnnxLoadError`, a ``ValueError`` that names the name): the file
exists and ONNX Runtime opens it with the provider of ``device``; every mapped name exists on the
right side (state inputs and constants among the inputs, state outputs and ``output_name`` among the
outputs); every model input gets a value; a state output's declared shape and dtype match its input;
constants fit their input (these checks of the model's declarations against the options live in
adapters/onnx_load_checks.py); a frame of the data's size fits a fixed frame input; and, when the frame
shape is fully known, one dry run on a zero frame checks that each state output comes back with its
input's shape and that ``C`` scores come out.

Batch mode (``max_batch_size > 0``): ``predict_batch`` runs one frame of each of several streams
in one ``session.run``, each state batched along ``state_batch_axis`` and kept per stream, where the
model's declared shapes allow it (every batch axis dynamic, the scores ``[B, C]``: adapters/onnx_batch.py;
otherwise a load-time error naming the input or output). The dry run then also serves two streams of
different non-zero frames in batches and one at a time, and refuses the model unless they agree.

``onnxruntime`` is an optional dependency (``pip install 'streambench[onnx]'``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
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
from streambench.adapters.onnx_batch import OnnxBatchError, OnnxBatchRunner
from streambench.adapters.onnx_load_checks import (
    OnnxLoadError,
    check_constants,
    check_names,
    check_state,
    execution_providers,
    format_shape,
    frame_shape,
    ort_dtype,
)
from streambench.adapters.torch_module import frame_vector, resolve_modalities

# OnnxLoadError, defined with the checks that raise it (onnx_load_checks.py), is the error this adapter's
# load raises: the adapter's API, importable from here
__all__ = ["OnnxAdapter", "OnnxLoadError", "OnnxOptions"]


class OnnxOptions(AdapterOptions):
    """Options of :class:`OnnxAdapter`. ``classes`` and ``input_dims`` are data-bound."""

    path: str = Field(description="the .onnx file")
    input_name: str | None = Field(None, description="model input the frame goes to; default: the free one")
    output_name: str | None = Field(None, description="output holding the scores; default: the non-state one")
    state: dict[str, str] = Field(default_factory=dict, description="state input name -> state output name")
    state_shapes: dict[str, list[int]] = Field(
        default_factory=dict, description="shape of a state input whose declared shape has symbolic dims"
    )
    constants: dict[str, Any] = Field(
        default_factory=dict, description="input name -> constant value (number or nested list), model dtype"
    )
    input_shape: list[int] | None = Field(None, description="shape of the frame input (default: the model's)")
    output: Literal["logits_softmax", "logits_sigmoid", "probabilities"] = Field(
        "logits_softmax", description="what output_name holds, and how it is scored"
    )
    modalities: tuple[str, ...] | None = Field(
        None,
        min_length=1,
        description="inputs, concatenated in order (default: every modality of the data, in its order)",
    )
    classes: tuple[str, ...] | None = Field(None, min_length=1, description="class names (data-bound)")
    input_dims: dict[str, int] | None = Field(None, description="payload size per modality (data-bound)")
    device: str = Field("cpu", description="'cpu' or 'cuda[:N]' (the CUDA execution provider)")
    intra_op_threads: int | None = Field(None, ge=1, description="ORT intra-op threads (None: its default)")
    inter_op_threads: int | None = Field(None, ge=1, description="ORT inter-op threads (None: its default)")
    name: str | None = Field(None, description="name recorded in results; default: the file name")
    max_batch_size: int = Field(
        0, ge=0, description="batch mode: most streams one session.run serves; 0: no batch mode"
    )
    state_batch_axis: int = Field(0, description="the batch axis of the states (a GRU's h [L, B, H]: 1)")


class OnnxAdapter(StreamingAdapter):
    """An ONNX model with its recurrent state carried between frames (see the module docstring)."""

    Options: ClassVar[type[OnnxOptions]] = OnnxOptions

    def __init__(self, options: OnnxOptions | None = None) -> None:
        if options is None:
            raise OnnxLoadError("OnnxAdapter needs options (at least path and classes)")
        super().__init__(options)
        self.opts = options
        try:
            import onnxruntime as ort
        except ImportError as exc:  # pragma: no cover - the extra is installed in dev
            raise OnnxLoadError("OnnxAdapter needs onnxruntime: pip install 'streambench[onnx]'") from exc
        path = Path(options.path)
        if not path.is_file():
            raise OnnxLoadError(f"ONNX file {str(path)!r} does not exist")
        sess_options = ort.SessionOptions()
        if options.intra_op_threads is not None:
            sess_options.intra_op_num_threads = options.intra_op_threads
        if options.inter_op_threads is not None:
            sess_options.inter_op_num_threads = options.inter_op_threads
        providers = execution_providers(options.device, list(ort.get_available_providers()))
        try:
            self.session = ort.InferenceSession(str(path), sess_options=sess_options, providers=providers)
        except Exception as exc:
            raise OnnxLoadError(f"ONNX Runtime cannot open {str(path)!r}: {exc}") from exc
        if options.classes is None:
            raise OnnxLoadError("classes are unknown: give classes (or run on a data set that names them)")
        try:
            self._modalities = resolve_modalities(options.modalities, options.input_dims)
        except ValueError as exc:
            raise OnnxLoadError(f"{options.name or path.name}: {exc}") from None
        self._info = AdapterInfo(
            name=options.name or path.name, classes=options.classes, modalities=self._modalities,
            device=options.device,
        )  # fmt: skip
        inputs = {i.name: (tuple(i.shape), i.type) for i in self.session.get_inputs()}
        outputs = {o.name: (tuple(o.shape), o.type) for o in self.session.get_outputs()}
        self.input_name, self.output_name = check_names(
            inputs, outputs, options.state, options.constants, options.input_name, options.output_name
        )
        self._zero_state = check_state(inputs, outputs, options.state, options.state_shapes)
        self._constants = check_constants(inputs, options.constants)
        self._input_dtype = ort_dtype(inputs[self.input_name][1], f"frame input {self.input_name!r}")
        self._input_shape = frame_shape(
            inputs[self.input_name][0], self.input_name, options.input_shape, options.input_dims,
            self._modalities,
        )  # fmt: skip
        self._feed: dict[str, np.ndarray] = {}
        self._state_outputs = list(options.state.values())
        self._fetch = [self.output_name, *self._state_outputs]
        self._batch: OnnxBatchRunner | None = None
        if options.max_batch_size:
            frame = (self.input_name, self._input_shape, self._input_dtype)
            batch = (options.max_batch_size, options.state_batch_axis)
            try:
                self._batch = OnnxBatchRunner(
                    self.session, (inputs, outputs), batch, frame, (self.output_name, self._info.num_classes),
                    options.state, self._zero_state, self._constants,
                )  # fmt: skip
            except OnnxBatchError as exc:
                raise OnnxLoadError(f"{self._info.name}: {exc}") from None
        self.max_batch_size = options.max_batch_size
        self.reset_state()
        self._check_frame_size()
        if all(d >= 0 for d in self._input_shape):
            self._dry_run()

    # ---- load-time checks that need the data or a run (the others: adapters/onnx_load_checks.py) ----

    def _data_frame_size(self) -> int | None:
        """Values in one frame of the data (the payloads of the fed modalities), when the data is known."""
        dims = self.opts.input_dims
        return None if dims is None else sum(dims[m] for m in self._modalities)

    def _check_frame_size(self) -> None:
        """A fixed frame input must hold exactly one frame of the data: checked at load, naming both sizes
        and the fix, not at the first warm-up frame."""
        size = self._data_frame_size()
        if size is None or any(d < 0 for d in self._input_shape):
            return
        expected = math.prod(self._input_shape)
        if size != expected:
            sizes = ", ".join(f"{m} {n}" for m, n in (self.opts.input_dims or {}).items())
            shape = format_shape(list(self._input_shape))
            raise OnnxLoadError(
                f"{self._info.name}: frame input {self.input_name!r} takes {shape} "
                f"= {expected} values, but a frame of modalities {','.join(self._modalities)} has {size} "
                f"(the data's payloads: {sizes}); --option modalities=a,b picks and orders them"
            )

    def _dry_run(self) -> None:
        size = self._data_frame_size()  # the data's real frame, reshaped as predict() will
        vector = np.zeros(math.prod(self._input_shape) if size is None else size, dtype=np.float32)
        try:
            self._scores(self._step(vector))
            if self._batch is not None:  # the state outputs come back batched along state_batch_axis
                self._batch.run(range(min(2, self.max_batch_size)), [vector] * min(2, self.max_batch_size))
                self._batch.check_streams_apart(self._alone, vector.size)  # rows are the streams
        except OnnxBatchError as exc:
            raise OnnxLoadError(f"{self._info.name}: {exc}") from None
        except Exception as exc:
            raise OnnxLoadError(
                f"{self._info.name}: a zero frame of shape {format_shape(list(self._input_shape))} fails: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        finally:
            self.reset_state()  # the single-stream state and every batched stream start afresh

    def _alone(self, vectors: Sequence[np.ndarray]) -> list[np.ndarray]:
        """One stream's raw scores, one frame at a time from a reset state (the batch dry run's reference)."""
        self.reset_state()
        return [np.asarray(self._step(v), dtype=np.float32).reshape(-1) for v in vectors]

    # ---- streaming ----------------------------------------------------------------------------------

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self._feed = dict(self._constants)
        self._feed.update(self._zero_state)  # read-only zeros: ONNX Runtime never writes its inputs
        if self._batch is not None:
            self._batch.forget()

    def _step(self, vector: np.ndarray) -> np.ndarray:
        """The raw scores output of one frame, the states carried."""
        feed = self._feed
        feed[self.input_name] = vector.astype(self._input_dtype, copy=False).reshape(self._input_shape)
        result = self.session.run(self._fetch, feed)
        for (state_in, state_out), value in zip(self.opts.state.items(), result[1:], strict=True):
            expected = self._zero_state[state_in].shape
            if value.shape != expected:
                raise ValueError(
                    f"state output {state_out!r} came back with shape {format_shape(list(value.shape))}, "
                    f"state input {state_in!r} has {format_shape(list(expected))}: the state mapping is wrong"
                )
            feed[state_in] = value
        return np.asarray(result[0])

    def _scores(self, output: np.ndarray) -> np.ndarray:
        """One frame's ``C`` scores from its part of the scores output, as ``output`` says."""
        flat: np.ndarray = np.asarray(output, dtype=np.float32).reshape(-1)
        if flat.size != self._info.num_classes:
            raise ValueError(
                f"output {self.output_name!r} has shape {format_shape(list(np.shape(output)))}, expected "
                f"{self._info.num_classes} values (one per class)"
            )
        if self.opts.output == "logits_softmax":
            shifted = np.exp(flat - flat.max())
            flat = shifted / shifted.sum()
        elif self.opts.output == "logits_sigmoid":
            flat = 1.0 / (1.0 + np.exp(-flat))
        return np.ascontiguousarray(flat, dtype=np.float32)

    def predict(self, frame: Frame) -> PredictOutput:
        vector = frame_vector(frame, self._modalities, self.opts.input_dims)
        return Prediction(scores=self._scores(self._step(vector)))

    def predict_batch(self, items: Sequence[tuple[StreamKey, Frame]]) -> list[PredictOutput]:
        """One frame of each item's stream in one ``session.run`` (module docstring, batch mode)."""
        if self._batch is None:
            raise NotImplementedError(f"{self._info.name}: batch mode is off (option max_batch_size)")
        dims = self.opts.input_dims
        vectors = [frame_vector(frame, self._modalities, dims) for _, frame in items]
        rows = self._batch.run([key for key, _ in items], vectors)
        return [Prediction(scores=self._scores(row)) for row in rows]
