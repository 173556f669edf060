"""An example gRPC server for ``--adapter grpc`` (docs/serving.md, "gRPC"): the ``StreamingModel`` service of
streambench_serving.proto, with grpcio's asyncio server; copy it and put your model in served_model.py.

    pip install 'streambench[grpc]'
    python examples/serving/grpc_server.py --port 50051 &
    streambench run --adapter grpc --option url=127.0.0.1:50051

One ``Stream`` call is one session: a fresh model state, then one reply per frame. The model runs in the
event loop, so sessions take turns (a single-threaded server).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from streambench.adapters.served import streambench_serving_pb2 as pb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from served_model import SessionModel

SERVICE = "streambench.serving.v1.StreamingModel"


def reply_message(reply: dict[str, Any]) -> Any:
    """served_model's reply as a FrameReply."""
    if "error" in reply:
        return pb.FrameReply(index=reply["index"], error=reply["error"])
    predictions = [pb.Prediction(scores=p["scores"], refers_to=p["refers_to"]) for p in reply["predictions"]]
    return pb.FrameReply(index=reply["index"], predictions=predictions, model_ns=reply["model_ns"])


def handlers(adapter: str = "reference") -> grpc.GenericRpcHandler:
    """The service's two methods around ``adapter``: Describe, and Stream (one session per call)."""

    async def describe(request: Any, context: Any) -> Any:
        return pb.ModelDescription(**SessionModel(adapter).describe())

    async def stream(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        model = SessionModel(adapter)
        async for request in requests:
            inputs = {m: np.asarray(p.values, dtype=np.float32) for m, p in request.inputs.items()}
            yield reply_message(model.answer(request.index, request.t, inputs))

    return grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Describe": grpc.unary_unary_rpc_method_handler(
                describe, pb.DescribeRequest.FromString, pb.ModelDescription.SerializeToString
            ),
            "Stream": grpc.stream_stream_rpc_method_handler(
                stream, pb.FrameRequest.FromString, pb.FrameReply.SerializeToString
            ),
        },
    )


async def main(host: str, port: int, adapter: str) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handlers(adapter),))
    bound = server.add_insecure_port(f"{host}:{port}")  # port 0: a free one
    await server.start()
    print(f"serving {adapter} on {host}:{bound}", flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=50051)
    parser.add_argument("--adapter", default="reference", help="the streambench adapter served (a model)")
    args = parser.parse_args()
    asyncio.run(main(args.host, args.port, args.adapter))
