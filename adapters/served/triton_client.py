"""A model served by NVIDIA Triton Inference Server with the sequence batcher (``--adapter triton``;
``pip install 'streambench[triton]'``), through ``tritonclient``'s gRPC streaming API
(KServe v2 ``GRPCInferenceService/ModelStreamInfer``).

One stream is one Triton *sequence*: ``reset_state()`` draws a fresh sequence id (the correlation id of
Triton's sequence batcher), the stream's first frame goes with ``sequence_start``, and the sequence is
ended by a request flagged ``sequence_end`` when the next stream starts or the adapter closes (the data
contract does not tell an adapter where a stream ends; that request's inputs are zeros and its reply is
discarded, outside every timed window). Every frame is one request on the adapter's one gRPC stream, its
``request_id`` naming the sequence and the frame, so a reply is matched to its frame (docs/serving.md,
"Triton").

Inputs: one FP32 tensor ``[1, D]`` per modality, named as the modality unless ``input_names`` says
otherwise; a missing payload is sent as zeros of its size (``input_dims``), as the built-in wrappers feed a
model. Output: ``output_name`` (FP32, ``C`` values: the scores, used as given). The server's model-only
figure is read from the response parameter ``model_ns_parameter`` where the model sets one (a Python
backend can); Triton's own compute times are kept only as cumulative statistics, not per request.
"""

from __future__ import annotations

import contextlib
import queue
import secrets
import time
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import Frame, Prediction, PredictOutput
from streambench.adapters.served.common import (
    ServedAdapter,
    ServedError,
    ServedOptions,
    model_ns_of,
    no_reply,
)

__all__ = ["TritonAdapter", "TritonOptions", "TritonSequence"]


class TritonOptions(ServedOptions):
    """Options of :class:`TritonAdapter` (``url``: Triton's gRPC ``host:port``, 8001 by default there)."""

    model_name: str = Field(description="the model in Triton's repository")
    model_version: str = Field("", description="its version ('': Triton's policy)")
    input_names: dict[str, str] = Field(
        default_factory=dict,
        description="modality -> the model input it goes to (default: the modality's name)",
    )
    output_name: str = Field("scores", description="the model output holding the C scores")
    model_ns_parameter: str = Field(
        "model_ns", description="the response parameter carrying the server's model-only time (ns), if any"
    )


def _status(error: Any) -> str | None:
    """The gRPC status of a tritonclient error (None: Triton's own error message for a request)."""
    status = getattr(error, "status", None)
    return status() if callable(status) else None


class _Stream:
    """The adapter's one gRPC stream to Triton: requests out, replies in, matched by ``request_id``."""

    def __init__(self, client: Any, url: str) -> None:
        self.client = client
        self.url = url
        self.replies: queue.SimpleQueue[tuple[str | None, Any, Any]] = queue.SimpleQueue()
        self.early: dict[str, tuple[Any, Any]] = {}
        self.broken: Exception | None = None
        client.start_stream(callback=self._arrived)

    def _arrived(self, result: Any, error: Any) -> None:
        request_id = None
        if result is not None:
            request_id = result.get_response().id
        self.replies.put((request_id, result, error))

    def wait(self, request_id: str, deadline: float, what: str) -> Any:
        """The reply to ``request_id``, by ``deadline`` (``time.monotonic``); replies to other requests are
        kept for their own wait (a batch's sessions share this stream)."""
        if request_id in self.early:
            result, error = self.early.pop(request_id)
            return self._checked(result, error, what)
        while True:
            if self.broken is not None:
                raise ServedError(
                    f"{self.url}: the stream to Triton was lost awaiting {what} ({self.broken})"
                )
            try:
                got, result, error = self.replies.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise no_reply(self.url, what, None) from None
            if got == request_id:
                return self._checked(result, error, what)
            if got is None:  # an error tritonclient ties to no request: the stream's, or a request's
                if _status(error) is not None:  # gRPC's: the stream broke (it is started again)
                    self.broken = error
                    continue
                raise ServedError(
                    f"{self.url}: Triton failed on {what} (or a request in flight with it): {error}"
                )
            self.early[got] = (result, error)

    def _checked(self, result: Any, error: Any, what: str) -> Any:
        if error is not None:
            raise ServedError(f"{self.url}: Triton failed on {what}: {error}")
        return result

    def close(self) -> None:
        self.client.stop_stream(cancel_requests=True)


class TritonSequence:
    """One stream's sequence on Triton."""

    def __init__(self, adapter: TritonAdapter) -> None:
        self.adapter = adapter
        self.sequence_id = secrets.randbits(62) + 1
        self.started = False
        self.last_index = -1
        self.failed = False

    def _request(self, frame: Frame, start: bool, end: bool) -> str:
        adapter = self.adapter
        request_id = f"{self.sequence_id}:{frame.index}{':end' if end else ''}"
        adapter.stream().client.async_stream_infer(
            adapter.opts.model_name,
            adapter.tensors(frame, zeros=end),
            model_version=adapter.opts.model_version,
            outputs=adapter.outputs,
            request_id=request_id,
            sequence_id=self.sequence_id,
            sequence_start=start,
            sequence_end=end,
        )
        return request_id

    def send(self, frame: Frame) -> None:
        self._pending = self._request(frame, start=not self.started, end=False)
        self.started = True
        self.last_index = frame.index

    def receive(self, index: int, timeout_s: float) -> tuple[PredictOutput, int | None]:
        adapter = self.adapter
        what = f"frame {index}"
        try:
            result = adapter.stream().wait(self._pending, time.monotonic() + timeout_s, what)
        except ServedError:
            self.failed = True
            raise
        where = f"{adapter.url}: malformed reply to {what}"
        scores = result.as_numpy(adapter.opts.output_name)
        if scores is None:
            raise ServedError(f"{where}: no output {adapter.opts.output_name!r}")
        scores = np.asarray(scores, dtype=np.float32).reshape(-1)
        if scores.shape != (adapter.num_classes,):
            raise ServedError(f"{where}: {scores.size} scores, expected {adapter.num_classes}, one per class")
        parameter = result.get_response().parameters.get(adapter.opts.model_ns_parameter)
        model_ns = None if parameter is None else model_ns_of(parameter.int64_param, where)
        return Prediction(scores=scores), model_ns

    def close(self) -> None:
        """End the sequence (a ``sequence_end`` request of zeros, its reply awaited and discarded)."""
        if not self.started or self.failed:
            return
        frame = Frame(index=self.last_index + 1, t=0.0, inputs={})
        request_id = self._request(frame, start=False, end=True)
        deadline = time.monotonic() + self.adapter.opts.reply_timeout_s
        self.adapter.stream().wait(request_id, deadline, f"the end of sequence {self.sequence_id}")


class TritonAdapter(ServedAdapter):
    """A model served by Triton's sequence batcher (module docstring; docs/serving.md)."""

    Options: ClassVar[type[ServedOptions]] = TritonOptions
    kind: ClassVar[str] = "triton"

    def __init__(self, options: TritonOptions | None = None) -> None:
        self._stream: _Stream | None = None
        self._client: Any = None
        super().__init__(options)
        self.opts: TritonOptions
        dims = self.opts.input_dims or {}
        missing = [m for m in self.modalities if m not in dims]
        if missing:
            raise ServedError(
                f"input_dims must give the payload size of {missing} (zeros for a missing payload)"
            )
        self._zeros = {m: np.zeros((1, dims[m]), dtype=np.float32) for m in self.modalities}
        from tritonclient.grpc import InferRequestedOutput

        self.outputs = [InferRequestedOutput(self.opts.output_name)]

    def _describe(self) -> tuple[str, Sequence[str]]:
        try:
            import tritonclient.grpc as triton
            from tritonclient.utils import InferenceServerException
        except ImportError as exc:  # pragma: no cover - the extra is missing
            raise ServedError(
                "the triton adapter needs tritonclient: pip install 'streambench[triton]'"
            ) from exc
        opts: TritonOptions = self.options  # type: ignore[assignment]
        if opts.classes is None:
            raise ServedError(
                "classes must be given (Triton's metadata names no classes): the data's, in order"
            )
        self._client = triton.InferenceServerClient(url=opts.url)
        timeout = opts.connect_timeout_s
        try:
            metadata = self._client.get_model_metadata(
                opts.model_name, opts.model_version, as_json=True, client_timeout=timeout
            )
        except InferenceServerException as exc:
            raise ServedError(
                f"{opts.url}: no model {opts.model_name!r} within {timeout:g} s: {exc}"
            ) from None
        outputs = {o["name"]: o for o in metadata.get("outputs", [])}
        if opts.output_name not in outputs:
            raise ServedError(
                f"{opts.url}: {opts.model_name} has no output {opts.output_name!r} ({sorted(outputs)})"
            )
        inputs = {i["name"] for i in metadata.get("inputs", [])}
        names = [opts.input_names.get(m, m) for m in (opts.modalities or tuple(opts.input_dims or ()))]
        absent = [n for n in names if n not in inputs]
        if absent:
            raise ServedError(
                f"{opts.url}: {opts.model_name} has no input {absent} (its inputs: {sorted(inputs)})"
            )
        return str(metadata.get("name", opts.model_name)), opts.classes

    def stream(self) -> _Stream:
        """The adapter's stream to Triton, started again when it broke."""
        if self._stream is None or self._stream.broken is not None:
            if self._stream is not None:
                self._stream.close()
            self._stream = _Stream(self._client, self.url)
        return self._stream

    def tensors(self, frame: Frame, zeros: bool = False) -> list[Any]:
        """One FP32 input ``[1, D]`` per modality (zeros where the payload is missing)."""
        from tritonclient.grpc import InferInput

        tensors = []
        for modality in self.modalities:
            payload = None if zeros else frame.inputs.get(modality)
            data = (
                self._zeros[modality]
                if payload is None
                else np.asarray(payload, dtype=np.float32).reshape(1, -1)
            )
            tensor = InferInput(self.opts.input_names.get(modality, modality), list(data.shape), "FP32")
            tensor.set_data_from_numpy(data)
            tensors.append(tensor)
        return tensors

    def _open(self) -> TritonSequence:
        return TritonSequence(self)

    def __del__(self) -> None:
        super().__del__()
        if self._stream is not None:
            with contextlib.suppress(Exception):  # interpreter shutdown
                self._stream.close()
