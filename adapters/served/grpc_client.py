"""A model served behind streambench's gRPC interface (``--adapter grpc``; ``pip install
'streambench[grpc]'``): ``adapters/served/streambench_serving.proto``, service
``streambench.serving.v1.StreamingModel``.

One bidirectional ``Stream`` call is one session (one stream, a fresh model state on the server): the
client sends a ``FrameRequest`` and waits for its ``FrameReply`` (docs/serving.md, "gRPC"). ``Describe``
is asked once at load (a server that cannot be reached, or serves other classes, fails at once). The
replies of a call are read by a thread of the session into a queue, so that every wait has a timeout
(gRPC's blocking iterator has none).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from streambench.adapters.contract import Frame, PredictOutput
from streambench.adapters.served.common import (
    ServedAdapter,
    ServedError,
    ServedOptions,
    check_index,
    model_ns_of,
    no_reply,
    predictions_of,
    sent_payloads,
)

try:
    import streambench.adapters.served.streambench_serving_pb2 as pb
except ImportError as exc:  # protobuf is missing: the extra names what to install
    raise ImportError(
        f"the grpc adapter needs grpcio and protobuf: pip install 'streambench[grpc]' ({exc})"
    ) from exc

__all__ = ["SERVICE", "GrpcAdapter", "GrpcSession"]

SERVICE = "streambench.serving.v1.StreamingModel"
"""The service's full name: its methods are ``/SERVICE/Describe`` and ``/SERVICE/Stream``."""


def _grpc() -> Any:
    try:
        import grpc
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise ServedError("the grpc adapter needs grpcio: pip install 'streambench[grpc]'") from exc
    return grpc


class _Ended:
    """The reply stream ended: closed by the server (``error`` None) or broken (an RpcError)."""

    def __init__(self, error: Exception | None) -> None:
        self.error = error


def _status(exc: Exception) -> str:
    code = getattr(exc, "code", None)
    details = getattr(exc, "details", None)
    if callable(code) and callable(details):
        return f"{code()}: {details()}"
    return f"{type(exc).__name__}: {exc}"


class GrpcSession:
    """One ``Stream`` call: one stream's session on the server."""

    def __init__(self, channel: Any, url: str, modalities: Sequence[str], num_classes: int) -> None:
        self.url = url
        self.modalities = tuple(modalities)
        self.num_classes = num_classes
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._replies: queue.SimpleQueue[Any] = queue.SimpleQueue()
        stream = channel.stream_stream(
            f"/{SERVICE}/Stream",
            request_serializer=pb.FrameRequest.SerializeToString,
            response_deserializer=pb.FrameReply.FromString,
        )
        self._call = stream(self._outgoing())
        self._reader = threading.Thread(target=self._read, name="grpc-session-reader", daemon=True)
        self._reader.start()

    def _outgoing(self) -> Iterator[Any]:
        while (request := self._requests.get()) is not None:
            yield request

    def _read(self) -> None:
        try:
            for reply in self._call:
                self._replies.put(reply)
            self._replies.put(_Ended(None))
        except Exception as exc:  # grpc.RpcError: the call broke (the server went away, it was cancelled)
            self._replies.put(_Ended(exc))

    def send(self, frame: Frame) -> None:
        request = pb.FrameRequest(index=frame.index, t=frame.t)
        for modality, payload in sent_payloads(frame, self.modalities).items():
            if payload is not None:
                request.inputs[modality].values.extend(payload.tolist())
        self._requests.put(request)

    def receive(self, index: int, timeout_s: float) -> tuple[PredictOutput, int | None]:
        what = f"frame {index}"
        try:
            reply = self._replies.get(timeout=timeout_s)
        except queue.Empty:
            raise no_reply(self.url, what, timeout_s) from None
        if isinstance(reply, _Ended):
            self._replies.put(reply)  # ended for every later wait too
            how = "the server ended the session" if reply.error is None else _status(reply.error)
            raise ServedError(f"{self.url}: the session was lost awaiting the reply to {what} ({how})")
        where = f"{self.url}: malformed reply to {what}"
        if reply.error:
            raise ServedError(f"{self.url}: the server failed on {what}: {reply.error[:500]}")
        check_index(reply.index, index, where)
        listed = [
            {"scores": list(p.scores), "refers_to": p.refers_to if p.HasField("refers_to") else None}
            for p in reply.predictions
        ]
        model_ns = reply.model_ns if reply.HasField("model_ns") else None
        return predictions_of({"predictions": listed}, self.num_classes, where), model_ns_of(model_ns, where)

    def close(self) -> None:
        self._requests.put(None)
        self._call.cancel()


class GrpcAdapter(ServedAdapter):
    """A model behind the ``StreamingModel`` gRPC service (module docstring; docs/serving.md)."""

    Options: ClassVar[type[ServedOptions]] = ServedOptions
    kind: ClassVar[str] = "grpc"

    def _describe(self) -> tuple[str, Sequence[str]]:
        grpc = _grpc()
        self._channel = grpc.insecure_channel(self.url)
        opts = self.opts
        try:
            grpc.channel_ready_future(self._channel).result(timeout=opts.connect_timeout_s)
        except grpc.FutureTimeoutError:
            self._channel.close()
            raise ServedError(
                f"{self.url}: cannot connect within {opts.connect_timeout_s:g} s (connect_timeout_s)"
            ) from None
        describe = self._channel.unary_unary(
            f"/{SERVICE}/Describe",
            request_serializer=pb.DescribeRequest.SerializeToString,
            response_deserializer=pb.ModelDescription.FromString,
        )
        request = pb.DescribeRequest(classes=list(opts.classes or ()), input_dims=dict(opts.input_dims or {}))
        try:
            described = describe(request, timeout=opts.connect_timeout_s)
        except grpc.RpcError as exc:
            self._channel.close()
            raise ServedError(f"{self.url}: Describe failed ({_status(exc)})") from None
        if not described.classes:
            raise ServedError(f"{self.url}: Describe lists no classes")
        return described.model or "model", list(described.classes)

    def _open(self) -> GrpcSession:
        return GrpcSession(self._channel, self.url, self.modalities, self.num_classes)
