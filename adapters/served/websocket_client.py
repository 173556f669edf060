"""A model served behind a WebSocket endpoint (``--adapter websocket``; ``pip install
'streambench[websocket]'``), through the ``websockets`` library's synchronous client.

The message format is docs/serving.md's ("WebSocket"): one connection is one session (one stream, a fresh
model state on the server); every message is a JSON text message. The client opens with
``{"start": {"classes": [...], "input_dims": {...}}}`` and the server answers
``{"ready": {"model": NAME, "classes": [...]}}``; then per frame the client sends
``{"index": i, "t": seconds, "inputs": {modality: [floats] | null}}`` and the server answers
``{"index": i, "scores": [C floats], "model_ns": ns}`` (``refers_to``, a ``predictions`` list, or
``{"index": i, "error": "..."}`` as the page says). Load (``__init__``) opens one connection to read
the ``ready`` message, so a server that cannot be reached or serves other classes fails at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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

__all__ = ["WebSocketAdapter", "WebSocketSession"]


def _connect(url: str, timeout_s: float) -> Any:
    try:
        from websockets.sync.client import connect
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise ServedError(
            "the websocket adapter needs the websockets package: pip install 'streambench[websocket]'"
        ) from exc
    try:
        connection = connect(
            url, open_timeout=timeout_s, close_timeout=min(timeout_s, 1.0), compression=None, max_size=None
        )
        return connection.__enter__()  # the connection itself (websockets 17 warns when it is not entered)
    except (OSError, TimeoutError) as exc:
        raise ServedError(
            f"{url}: cannot connect within {timeout_s:g} s (connect_timeout_s): {exc}"
        ) from None
    except Exception as exc:  # the handshake was refused (an HTTP status, a bad URL)
        raise ServedError(f"{url}: cannot open a session: {type(exc).__name__}: {exc}") from None


class WebSocketSession:
    """One connection: one stream's session on the server."""

    def __init__(
        self, url: str, start: dict[str, Any], modalities: Sequence[str], num_classes: int, timeout_s: float
    ) -> None:
        self.url = url
        self.modalities = tuple(modalities)
        self.num_classes = num_classes
        self.ws = _connect(url, timeout_s)
        try:
            self.ws.send(json.dumps({"start": start}))
            self.ready = self._json(self._recv(timeout_s, "the session's start"), "the session's start")
        except BaseException:
            self.close()
            raise
        if not isinstance(self.ready.get("ready"), dict):
            got = str(self.ready)[:200]
            raise ServedError(
                f"{url}: the server answered the session's start with {got!r}, expected 'ready'"
            )

    def _recv(self, timeout_s: float, what: str) -> Any:
        from websockets.exceptions import ConnectionClosed

        try:
            return self.ws.recv(timeout=timeout_s)
        except TimeoutError:
            raise no_reply(self.url, what, timeout_s) from None
        except ConnectionClosed as exc:
            raise ServedError(
                f"{self.url}: the connection was lost awaiting the reply to {what} ({exc})"
            ) from None

    def _json(self, message: Any, what: str) -> dict[str, Any]:
        if not isinstance(message, str):
            raise ServedError(f"{self.url}: malformed reply to {what}: a binary message, expected JSON text")
        try:
            reply = json.loads(message)
        except ValueError as exc:
            raise ServedError(
                f"{self.url}: malformed reply to {what}: not JSON ({exc}): {message[:120]!r}"
            ) from None
        if not isinstance(reply, dict):
            raise ServedError(
                f"{self.url}: malformed reply to {what}: {message[:120]!r} is not a JSON object"
            )
        return reply

    def send(self, frame: Frame) -> None:
        from websockets.exceptions import ConnectionClosed

        inputs = {
            m: None if p is None else p.tolist() for m, p in sent_payloads(frame, self.modalities).items()
        }
        try:
            self.ws.send(json.dumps({"index": frame.index, "t": frame.t, "inputs": inputs}))
        except ConnectionClosed as exc:
            raise ServedError(
                f"{self.url}: the connection was lost sending frame {frame.index} ({exc})"
            ) from None

    def receive(self, index: int, timeout_s: float) -> tuple[PredictOutput, int | None]:
        what = f"frame {index}"
        reply = self._json(self._recv(timeout_s, what), what)
        where = f"{self.url}: malformed reply to {what}"
        if "error" in reply:
            raise ServedError(f"{self.url}: the server failed on {what}: {str(reply['error'])[:500]}")
        check_index(reply.get("index"), index, where)
        return predictions_of(reply, self.num_classes, where), model_ns_of(reply.get("model_ns"), where)

    def close(self) -> None:
        self.ws.close()


class WebSocketAdapter(ServedAdapter):
    """A model behind a WebSocket endpoint (module docstring; docs/serving.md)."""

    Options: ClassVar[type[ServedOptions]] = ServedOptions
    kind: ClassVar[str] = "websocket"

    def _start(self) -> dict[str, Any]:
        opts = self.opts
        return {
            "classes": None if opts.classes is None else list(opts.classes),
            "input_dims": opts.input_dims,
        }

    def _describe(self) -> tuple[str, Sequence[str]]:
        session = WebSocketSession(self.url, self._start(), (), 1, self.opts.connect_timeout_s)
        session.close()
        ready = session.ready["ready"]
        classes = ready.get("classes")
        if not isinstance(classes, list) or not classes or not all(isinstance(c, str) for c in classes):
            raise ServedError(f"{self.url}: the 'ready' message lists no classes: {str(ready)[:200]!r}")
        return str(ready.get("model", "model")), classes

    def _open(self) -> WebSocketSession:
        return WebSocketSession(
            self.url, self._start(), self.modalities, self.num_classes, self.opts.connect_timeout_s
        )
