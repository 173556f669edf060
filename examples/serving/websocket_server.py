"""An example WebSocket server for ``--adapter websocket`` (docs/serving.md, "WebSocket"): copy it and put
your model in served_model.py.

    pip install 'streambench[websocket]'
    python examples/serving/websocket_server.py --port 8765 &
    streambench run --adapter websocket --option url=ws://127.0.0.1:8765

One connection is one session: a fresh model state, then one JSON reply per JSON frame. The model runs
in the event loop, so sessions take turns (a single-threaded server).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from websockets.asyncio.server import ServerConnection, serve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from served_model import SessionModel


async def session(ws: ServerConnection, adapter: str = "reference") -> None:
    """One stream: ``start`` -> ``ready``, then a reply per frame until the client closes."""
    json.loads(await ws.recv())["start"]  # the client's classes and input_dims: this model is fixed
    model = SessionModel(adapter)
    await ws.send(json.dumps({"ready": model.describe()}))
    async for message in ws:
        request: dict[str, Any] = json.loads(message)
        inputs = {
            m: None if v is None else np.asarray(v, dtype=np.float32) for m, v in request["inputs"].items()
        }
        await ws.send(json.dumps(model.answer(request["index"], request["t"], inputs)))


async def main(host: str, port: int, adapter: str) -> None:
    async with serve(lambda ws: session(ws, adapter), host, port, compression=None, max_size=None) as server:
        bound = server.sockets[0].getsockname()[1]  # port 0: a free one
        print(f"serving {adapter} on ws://{host}:{bound}", flush=True)
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--adapter", default="reference", help="the streambench adapter served (a model)")
    args = parser.parse_args()
    asyncio.run(main(args.host, args.port, args.adapter))
