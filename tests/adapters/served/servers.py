"""Real servers for the served adapters' tests, on 127.0.0.1 at free ports, each in a thread of the test's
process and stopped on the way out of its ``with`` block, even when the test fails.

- :func:`websocket_server`: examples/serving/websocket_server.py's session handler (the reference model),
  or a faulty one (:func:`faulty_session`);
- :func:`grpc_server`: examples/serving/grpc_server.py's service, or a faulty one;
- :func:`triton_server`: a stand-in for Triton (tritonclient's own ``GRPCInferenceService`` stubs, the
  sequence batcher's start / end flags and correlation ids) around the same model;
- :func:`delay_proxy`: a TCP proxy that holds every chunk ``delay_s`` before passing it on, both ways.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from streambench.adapters.contract import Prediction
from streambench.adapters.registry import create_adapter
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution.engine import Engine, EngineConfig

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "serving"
sys.path.insert(0, str(EXAMPLES))

import grpc_server as grpc_example  # noqa: E402
import websocket_server as websocket_example  # noqa: E402
from served_model import SessionModel  # noqa: E402

__all__ = [
    "BOUND",
    "STREAMS",
    "SessionCount",
    "SessionModel",
    "answers_as_in_process",
    "batched_equals_alone",
    "delay_proxy",
    "faulty_grpc",
    "faulty_session",
    "grpc_server",
    "in_process_engine",
    "served_engine",
    "single",
    "triton_server",
    "websocket_server",
]


STREAMS = make_streams(SyntheticConfig(seed=3, num_streams=3, duration_s=2.0))
"""Three synthetic streams of 50 frames (the reference model's data: 29 classes, audio 64, visual 128)."""
BOUND = {"classes": STREAMS[0].classes, "input_dims": {"audio": 64, "visual": 128}}
"""The data-bound options a run would give the adapters."""


def served_engine(kind: str, url: str, **options: object) -> Engine:
    """The engine driving a served adapter of ``kind`` at ``url`` (no warm-up)."""
    adapter = create_adapter(kind, {"url": url, **options}, data_bound=BOUND)
    return Engine(adapter, EngineConfig(warmup_frames=0))


def in_process_engine() -> Engine:
    """The reference model in this process, as the servers serve it."""
    return Engine(create_adapter("reference", data_bound=BOUND), EngineConfig(warmup_frames=0))


def answers_as_in_process(served: Engine) -> None:
    """Every stream of :data:`STREAMS` through ``served`` and through the reference model in this process:
    the same predictions, to the bit (float32 values travel unchanged), and a model-only figure on every
    frame within the frame's end-to-end time (both on this machine's clock)."""
    local = in_process_engine()
    for stream in STREAMS:
        remote, here = served.run_stream(stream), local.run_stream(stream)
        np.testing.assert_array_equal(remote.scores, here.scores)
        np.testing.assert_array_equal(remote.refers_to, here.refers_to)
        assert remote.server_ns is not None and (remote.server_ns > 0).all()
        assert (remote.latency_ns >= remote.server_ns).all()
    assert here.server_ns is None


def single(out: object) -> Prediction:
    """The one prediction of an output (a served reply may list it)."""
    if isinstance(out, list):
        assert len(out) == 1
        out = out[0]
    assert isinstance(out, Prediction)
    return out


def batched_equals_alone(adapter: Any, frames: int = 5) -> int:
    """Serve the first ``frames`` frames of :data:`STREAMS` in batches (one frame of every stream per call)
    and check each stream's answers equal the in-process model's alone; returns the sessions it opened."""
    streams = [list(s.frames()) for s in STREAMS]
    batched = [adapter.predict_batch([(k, f[t]) for k, f in enumerate(streams)]) for t in range(frames)]
    local = create_adapter("reference", data_bound=BOUND)
    for k, f in enumerate(streams):
        local.reset_state()
        for t in range(frames):
            np.testing.assert_array_equal(single(batched[t][k]).scores, single(local.predict(f[t])).scores)
    return len(adapter._sessions)


@contextlib.contextmanager
def _loop_thread(start: Callable[[], Awaitable[tuple[int, Callable[[], Awaitable[None]]]]]) -> Iterator[int]:
    """Run ``start()`` (returns the bound port and an async stop) in a fresh event loop on a daemon thread;
    yield the port; stop and join on the way out."""
    loop = asyncio.new_event_loop()
    ready: list[Any] = []
    started = threading.Event()

    async def begin() -> None:
        try:
            ready.append(await start())
        except BaseException as exc:  # told to the test, not lost in the thread
            ready.append(exc)
        started.set()

    thread = threading.Thread(target=loop.run_forever, name="test-server", daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(begin(), loop)
    if not started.wait(30):
        raise RuntimeError("the test server did not start within 30 s")
    if isinstance(ready[0], BaseException):
        raise ready[0]
    port, stop = ready[0]
    try:
        yield port
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


async def _cancel_the_rest() -> None:
    """Cancel every other task of this loop and let them end."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


Handler = Callable[[Any], Awaitable[None]]


@contextlib.contextmanager
def websocket_server(handler: Handler | None = None) -> Iterator[str]:
    """A WebSocket server of ``handler`` (default: the example's session handler); yields its URL."""
    from websockets.asyncio.server import serve

    async def start() -> tuple[int, Callable[[], Awaitable[None]]]:
        server = await serve(handler or websocket_example.session, "127.0.0.1", 0, compression=None)

        async def stop() -> None:
            server.close()
            try:
                await asyncio.wait_for(server.wait_closed(), 5)
            except asyncio.TimeoutError:  # a handler that never returns (a silent session): cancelled
                await _cancel_the_rest()

        return server.sockets[0].getsockname()[1], stop

    with _loop_thread(start) as port:
        yield f"ws://127.0.0.1:{port}"


def faulty_session(fault: str, at: int, delay_s: float = 0.0, times: int | None = None) -> Handler:
    """The example's session with one fault at frame ``at`` of every session (of the first ``times``
    sessions to reach it): ``drop`` (the connection aborted, no close handshake), ``silent`` (no reply,
    the connection kept open), ``slow`` (the reply ``delay_s`` late), ``garbage`` (a reply that is not
    JSON), ``wrong_index`` (the reply names another frame), ``short_scores`` (three scores), ``error`` (the
    server says its model failed)."""
    left = [times]

    async def session(ws: Any) -> None:
        json.loads(await ws.recv())
        model = SessionModel()
        await ws.send(json.dumps({"ready": model.describe()}))
        async for message in ws:
            request = json.loads(message)
            index = request["index"]
            inputs = {
                m: None if v is None else np.asarray(v, dtype=np.float32)
                for m, v in request["inputs"].items()
            }
            reply = model.answer(index, request["t"], inputs)
            if index == at and _fires(left):
                if fault == "drop":
                    ws.transport.abort()
                    return
                if fault == "silent":
                    await asyncio.sleep(3600)
                if fault == "slow":
                    await asyncio.sleep(delay_s)
                reply = _spoilt(reply, fault)
            await ws.send(reply if isinstance(reply, str) else json.dumps(reply))

    return session


def _fires(left: list[int | None]) -> bool:
    """Whether a fault fires this time (``left[0]``: how many more times; None: always)."""
    if left[0] is None:
        return True
    left[0] -= 1
    return left[0] >= 0


class SessionCount:
    """Wraps a session handler: how many sessions are open now, and the most at once."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler = handler or websocket_example.session
        self.open = 0
        self.most = 0

    async def __call__(self, ws: Any) -> None:
        self.open += 1
        self.most = max(self.most, self.open)
        try:
            await self.handler(ws)
        finally:
            self.open -= 1


def _spoilt(reply: dict[str, Any], fault: str) -> dict[str, Any] | str:
    if fault == "garbage":
        return "{not json"
    if fault == "wrong_index":
        return {**reply, "index": reply["index"] + 1}
    if fault == "short_scores":
        return {"index": reply["index"], "scores": [0.1, 0.2, 0.3]}
    if fault == "error":
        return {"index": reply["index"], "error": "CUDA out of memory (planted)"}
    return reply


@contextlib.contextmanager
def grpc_server(handlers: Any = None) -> Iterator[str]:
    """An asyncio gRPC server of ``handlers`` (default: the example's service); yields ``host:port``."""
    import grpc

    async def start() -> tuple[int, Callable[[], Awaitable[None]]]:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((handlers or grpc_example.handlers(),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()

        async def stop() -> None:
            await server.stop(grace=None)

        return port, stop

    with _loop_thread(start) as port:
        yield f"127.0.0.1:{port}"


def faulty_grpc(fault: str, at: int) -> Any:
    """The example's service with one fault at frame ``at`` of every session: ``drop`` (the call aborted
    with UNAVAILABLE), ``silent``, ``wrong_index``, ``short_scores``, ``error`` (:func:`faulty_session`)."""
    import grpc

    from streambench.adapters.served import streambench_serving_pb2 as pb

    async def describe(request: Any, context: Any) -> Any:
        return pb.ModelDescription(**SessionModel().describe())

    async def stream(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        model = SessionModel()
        async for request in requests:
            inputs = {m: np.asarray(p.values, dtype=np.float32) for m, p in request.inputs.items()}
            reply = model.answer(request.index, request.t, inputs)
            if request.index == at:
                if fault == "drop":
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "planted: the connection went away")
                if fault == "silent":
                    await asyncio.sleep(3600)
                spoilt = _spoilt(reply, fault)
                if isinstance(spoilt, dict) and "scores" in spoilt:
                    yield pb.FrameReply(
                        index=spoilt["index"], predictions=[pb.Prediction(scores=spoilt["scores"])]
                    )
                    continue
                reply = spoilt if isinstance(spoilt, dict) else reply
            yield grpc_example.reply_message(reply)

    return grpc.method_handlers_generic_handler(
        grpc_example.SERVICE,
        {
            "Describe": grpc.unary_unary_rpc_method_handler(
                describe, pb.DescribeRequest.FromString, pb.ModelDescription.SerializeToString
            ),
            "Stream": grpc.stream_stream_rpc_method_handler(
                stream, pb.FrameRequest.FromString, pb.FrameReply.SerializeToString
            ),
        },
    )


class TritonStandIn:
    """Triton's ``GRPCInferenceService`` as far as the triton adapter uses it: model metadata, and
    ``ModelStreamInfer`` with the sequence batcher's semantics (a model state per correlation id, made at
    ``sequence_start``, dropped after ``sequence_end``; a request of a sequence never started is an error,
    as Triton's). The response parameter ``model_ns`` carries the model's own time. ``ends``: the sequence
    ids ended, for the tests."""

    def __init__(
        self,
        dims: dict[str, int],
        model_name: str = "reference",
        fault: str | None = None,
        at: int = -1,
        model_ns: bool = True,
    ) -> None:
        self.dims = dims
        self.model_name = model_name
        self.fault, self.at, self.model_ns = fault, at, model_ns
        self.sequences: dict[int, tuple[SessionModel, int]] = {}
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.num_classes = len(SessionModel().describe()["classes"])

    def servicer(self) -> Any:
        import grpc
        from tritonclient.grpc import service_pb2 as pb
        from tritonclient.grpc import service_pb2_grpc

        stand_in = self

        class Servicer(service_pb2_grpc.GRPCInferenceServiceServicer):
            def ServerLive(self, request: Any, context: Any) -> Any:
                return pb.ServerLiveResponse(live=True)

            def ModelMetadata(self, request: Any, context: Any) -> Any:
                if request.name != stand_in.model_name:  # Triton's answer
                    context.abort(
                        grpc.StatusCode.NOT_FOUND, f"Request for unknown model: '{request.name}' is not found"
                    )
                tensor = pb.ModelMetadataResponse.TensorMetadata
                return pb.ModelMetadataResponse(
                    name=stand_in.model_name,
                    versions=["1"],
                    platform="python",
                    inputs=[tensor(name=m, datatype="FP32", shape=[1, d]) for m, d in stand_in.dims.items()],
                    outputs=[tensor(name="scores", datatype="FP32", shape=[1, stand_in.num_classes])],
                )

            def ModelStreamInfer(self, requests: Any, context: Any) -> Any:
                for request in requests:
                    yield stand_in.infer(request, pb)

        return Servicer()

    def infer(self, request: Any, pb: Any) -> Any:
        params = request.parameters
        sequence = params["sequence_id"].int64_param
        if params["sequence_start"].bool_param:
            self.sequences[sequence] = (SessionModel(), 0)
            self.starts.append(sequence)
        if sequence not in self.sequences:
            return pb.ModelStreamInferResponse(error_message=f"sequence {sequence} was not started")
        model, index = self.sequences[sequence]
        inputs = {
            tensor.name: np.frombuffer(raw, dtype=np.float32).copy()
            for tensor, raw in zip(request.inputs, request.raw_input_contents, strict=True)
        }
        reply = model.answer(index, 0.04 * (index + 1), inputs)
        if index == self.at and self.fault == "silent":
            time.sleep(3)  # longer than the tests' reply timeout; the sequence's next request then waits too
        if index == self.at and self.fault == "error":
            return pb.ModelStreamInferResponse(error_message="CUDA out of memory (planted)")
        self.sequences[sequence] = (model, index + 1)
        if params["sequence_end"].bool_param:
            del self.sequences[sequence]
            self.ends.append(sequence)
        scores = np.asarray(reply["predictions"][0]["scores"], dtype=np.float32)
        response = pb.ModelInferResponse(
            model_name=self.model_name,
            id=request.id,
            outputs=[
                pb.ModelInferResponse.InferOutputTensor(
                    name="scores", datatype="FP32", shape=[1, scores.size]
                )
            ],
            raw_output_contents=[scores.tobytes()],
        )
        if self.model_ns:
            response.parameters["model_ns"].int64_param = reply["model_ns"]
        return pb.ModelStreamInferResponse(infer_response=response)


@contextlib.contextmanager
def triton_server(stand_in: TritonStandIn) -> Iterator[str]:
    """:class:`TritonStandIn` served by a threaded gRPC server; yields ``host:port``."""
    import grpc
    from tritonclient.grpc import service_pb2_grpc

    server = grpc.server(ThreadPoolExecutor(max_workers=8))
    service_pb2_grpc.add_GRPCInferenceServiceServicer_to_server(stand_in.servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None).wait(30)


@contextlib.contextmanager
def delay_proxy(target: str, delay_s: float) -> Iterator[int]:
    """A TCP proxy to ``target`` (``host:port``) holding every chunk ``delay_s`` before passing it on, in
    both directions (in order: a chunk waits for the one before it); yields the proxy's port."""
    host, _, port = target.rpartition(":")

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                await asyncio.sleep(delay_s)
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def connection(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(pipe(client_reader, server_writer), pipe(server_reader, client_writer))

    async def start() -> tuple[int, Callable[[], Awaitable[None]]]:
        server = await asyncio.start_server(connection, "127.0.0.1", 0)

        async def stop() -> None:
            server.close()
            await _cancel_the_rest()

        return server.sockets[0].getsockname()[1], stop

    with _loop_thread(start) as proxy_port:
        yield proxy_port
