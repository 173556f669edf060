"""What the adapters of a served model share (docs/serving.md): options, sessions, timeouts, and turning a
server's reply into :class:`~streambench.adapters.contract.Prediction` objects.

A *served* adapter sends each frame to a model running in another process, usually on another machine,
and returns what comes back. One stream is one *session* on the server (a WebSocket connection, a gRPC
bidirectional call, a Triton sequence): ``reset_state()`` ends the session and opens a new one, whose model
state starts afresh. The engine times ``predict()`` as it times any adapter, so a served model's latency
is the frame's round trip on the client's clock (end to end); the server's own figure of its model's time,
where a reply carries one (``model_ns``), goes to :class:`~streambench.adapters.contract.ServerTimes`.

Every wait is bounded (``connect_timeout_s``, ``reply_timeout_s``): a server that refuses, drops the
connection, goes silent, answers slowly, answers another frame or answers something unreadable makes
``predict()`` raise a :class:`ServedError` that says which and names the server and the frame; the engine
records it as the stream's failure at that frame, and the next stream opens a new session.

Batch mode (``max_batch_size``, the capacity protocol's ``batched`` serving): one frame of each of several
live streams, each stream its own session, all sent before any reply is awaited, so the server holds them
at once, as N concurrent clients would have it. A batch names streams by opaque keys and never says that
one ended, so a session no batch has used for ``idle_session_s`` is ended (a live stream sends a frame every
period; one silent for seconds has ended).
"""

from __future__ import annotations

import abc
import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Protocol

import numpy as np
from pydantic import Field

from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    ServerTimes,
    StreamingAdapter,
    StreamKey,
)

__all__ = [
    "ServedAdapter",
    "ServedError",
    "ServedOptions",
    "Session",
    "check_index",
    "no_reply",
    "predictions_of",
    "sent_payloads",
]


class ServedOptions(AdapterOptions):
    """Options every served adapter takes. ``classes`` and ``input_dims`` are data-bound."""

    url: str = Field(description="where the server listens (ws://host:port/path; gRPC and Triton: host:port)")
    classes: tuple[str, ...] | None = Field(
        None, min_length=1, description="class names, in the data's order; None: the server's"
    )
    input_dims: dict[str, Annotated[int, Field(ge=1)]] | None = Field(
        None, min_length=1, description="payload size per modality"
    )
    modalities: tuple[str, ...] | None = Field(
        None, min_length=1, description="the payloads sent (default: every modality of the data)"
    )
    connect_timeout_s: float = Field(5.0, gt=0, description="longest wait to connect or open a session")
    reply_timeout_s: float = Field(10.0, gt=0, description="longest wait for the reply to one frame")
    max_batch_size: int = Field(
        64, ge=0, description="batch mode (capacity's batched serving): sessions sent a frame at once; 0: off"
    )
    idle_session_s: float = Field(
        10.0, gt=0, description="batch mode: a session no batch has used for this long is ended"
    )
    name: str | None = Field(None, description="the model's name in results (default: the server's)")


class ServedError(RuntimeError):
    """A session failed: no connection, a lost connection, no reply in time, or a reply that is not one."""


def no_reply(url: str, what: str, timeout_s: float | None) -> ServedError:
    """The error of a reply that did not come in time."""
    within = f"within {timeout_s:g} s" if timeout_s is not None else "in time"
    return ServedError(f"{url}: no reply to {what} {within} (reply_timeout_s): the server is slow or silent")


class Session(Protocol):
    """One stream's session on the server."""

    def send(self, frame: Frame) -> None: ...

    def receive(self, index: int, timeout_s: float) -> tuple[PredictOutput, int | None]:
        """The reply to frame ``index``: its predictions and the server's model-only ns (None: none)."""
        ...

    def close(self) -> None: ...


def sent_payloads(frame: Frame, modalities: Sequence[str]) -> dict[str, np.ndarray | None]:
    """The payloads of ``modalities`` as flat float32 arrays (``None``: missing at this frame)."""
    out: dict[str, np.ndarray | None] = {}
    for modality in modalities:
        payload = frame.inputs.get(modality)
        out[modality] = None if payload is None else np.asarray(payload, dtype=np.float32).reshape(-1)
    return out


def check_index(got: object, index: int, where: str) -> None:
    """A reply must name the frame it answers: the one just sent (a session has one frame in flight)."""
    if type(got) is not int or got != index:
        raise ServedError(f"{where}: the reply names frame {got!r}, the frame sent was {index}")


def _scores(values: object, num_classes: int, where: str) -> np.ndarray:
    try:
        scores = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ServedError(f"{where}: scores are not numbers ({exc})") from None
    if scores.shape != (num_classes,):
        raise ServedError(
            f"{where}: scores of shape {scores.shape}, expected ({num_classes},), one per class"
        )
    return scores


def predictions_of(reply: Mapping[str, Any], num_classes: int, where: str) -> PredictOutput:
    """A reply's predictions (docs/serving.md): ``scores`` (one prediction of the frame sent, or of
    ``refers_to``), or ``predictions``, a list of ``{"scores": [...], "refers_to": k}`` (none: nothing to
    say yet). Anything else is a :class:`ServedError` naming what is wrong."""
    if "scores" in reply:
        refers = reply.get("refers_to")
        if refers is not None and (type(refers) is not int or refers < 0):
            raise ServedError(f"{where}: refers_to {refers!r} is not a frame index")
        return Prediction(scores=_scores(reply["scores"], num_classes, where), refers_to=refers)
    listed = reply.get("predictions")
    if not isinstance(listed, list):
        raise ServedError(f"{where}: the reply has neither 'scores' nor a list of 'predictions'")
    out: list[Prediction] = []
    for k, item in enumerate(listed):
        if not isinstance(item, Mapping) or "scores" not in item:
            raise ServedError(f"{where}: predictions[{k}] has no 'scores'")
        one = predictions_of(item, num_classes, f"{where}, predictions[{k}]")
        assert isinstance(one, Prediction)
        out.append(one)
    if len(out) == 1:  # the engine's fast path takes one Prediction, not a list of one
        return out[0]
    return out or None


def model_ns_of(value: object, where: str) -> int | None:
    """The server's model-only figure (ns), ``None`` when the reply carried none."""
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise ServedError(f"{where}: model_ns {value!r} is not a non-negative integer (ns)")
    return value


class ServedAdapter(StreamingAdapter):
    """A model served elsewhere, one session per stream (module docstring). Subclasses say how to ask the
    server what it serves (:meth:`_describe`) and how to open a session (:meth:`_open`)."""

    Options: ClassVar[type[ServedOptions]] = ServedOptions
    kind: ClassVar[str] = "served"

    def __init__(self, options: ServedOptions | None = None) -> None:
        super().__init__(options)
        opts: ServedOptions = self.options  # type: ignore[assignment]
        self.opts = opts
        self.url = opts.url
        self.server_times = ServerTimes()
        self.max_batch_size = opts.max_batch_size
        model, served_classes = self._describe()
        if opts.classes is not None and tuple(served_classes) != tuple(opts.classes):
            raise ServedError(
                f"{self.url} serves {model!r} with classes {list(served_classes)}, the data's are "
                f"{list(opts.classes)} (they must agree in name and order)"
            )
        dims = opts.input_dims or {}
        self.modalities = opts.modalities or tuple(dims) or ("audio",)
        unknown = [m for m in self.modalities if dims and m not in dims]
        if unknown:
            raise ServedError(f"modalities {unknown} are not in the data (its payloads: {sorted(dims)})")
        self._info = AdapterInfo(
            name=opts.name or f"{self.kind}:{model}",
            classes=tuple(served_classes),
            modalities=self.modalities,
            device="remote",
        )
        self.num_classes = len(served_classes)
        self._session: Session | None = None
        self._sessions: dict[StreamKey, Session] = {}
        self._used: dict[StreamKey, float] = {}  # batch mode: when each session was last sent a frame
        self._next_sweep = 0.0

    @abc.abstractmethod
    def _describe(self) -> tuple[str, Sequence[str]]:
        """The server's model name and its classes (a probe at load: a server that cannot be reached fails
        the adapter's construction, not every stream)."""

    @abc.abstractmethod
    def _open(self) -> Session:
        """A new session (a fresh model state on the server), within ``connect_timeout_s``."""

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        """End every session and open the next stream's."""
        self.close()
        self._session = self._open()

    def predict(self, frame: Frame) -> PredictOutput:
        session = self._session
        if session is None:
            session = self._session = self._open()
        try:
            session.send(frame)
            out, model_ns = session.receive(frame.index, self.opts.reply_timeout_s)
        except BaseException:
            self._session = None  # a failed session is not reused: the next stream opens a new one
            _quietly_close(session)
            raise
        self.server_times.add(model_ns)
        return out

    def predict_batch(self, items: Sequence[tuple[StreamKey, Frame]]) -> list[PredictOutput]:
        """One frame of each of several streams, each on its own session (a new key: a new session), all
        sent before the first reply is awaited; every reply within ``reply_timeout_s`` of the sending."""
        if not self.max_batch_size:
            raise NotImplementedError(f"{self.info.name}: batch mode is off (max_batch_size = 0)")
        now = time.monotonic()
        if now >= self._next_sweep:
            self._end_idle(now)
        sessions = []
        used = self._used
        for key, frame in items:
            session = self._sessions.get(key)
            if session is None:
                session = self._sessions[key] = self._open()
            used[key] = now
            session.send(frame)
            sessions.append(session)
        deadline = time.monotonic() + self.opts.reply_timeout_s
        outputs = []
        for session, (_, frame) in zip(sessions, items, strict=True):
            out, _ = session.receive(frame.index, max(deadline - time.monotonic(), 0.0))
            outputs.append(out)
        return outputs

    def _end_idle(self, now: float) -> None:
        """End the sessions no batch has used for ``idle_session_s`` (their streams ended: a key is never
        used again), looked for at most once a second."""
        self._next_sweep = now + 1.0
        limit = now - self.opts.idle_session_s
        for key in [k for k, last in self._used.items() if last < limit]:
            del self._used[key]
            _quietly_close(self._sessions.pop(key))

    def close(self) -> None:
        """End every open session."""
        for session in [self._session, *self._sessions.values()]:
            if session is not None:
                _quietly_close(session)
        self._session = None
        self._sessions.clear()
        self._used.clear()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.close()


def _quietly_close(session: Session) -> None:
    with contextlib.suppress(Exception):  # a broken session's close may fail: it is gone either way
        session.close()
