"""What the parent says when a worker fails (harness/execution/isolation.py): a hang past a timeout, a
crash (with the exit status or the signal's name and where in the stream it happened), or an error the
worker reported, re-raised as the parent's own exception types with the worker's traceback as cause: an
adapter that cannot be built as :class:`WorkerLoadError` (a ``ValueError``, as in process), a failure
while it runs a stream as that stream's :class:`AdapterWorkerError`. A report that is no report (its
fields missing or of the wrong type) is a :class:`~streambench.harness.execution.worker_replies.BadReply`."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from streambench.adapters.registry import AdapterLoadError
from streambench.harness.execution.adapter_errors import (
    AdapterCallError,
    AdapterCrashError,
    AdapterError,
    AdapterOutputError,
    AdapterTimeoutError,
    AdapterWorkerError,
)
from streambench.harness.execution.isolation_worker import FINISHED, IDLE, ORPHANED, PIPE_LOST, RESETTING
from streambench.harness.execution.worker_replies import BadReply

__all__ = [
    "RemoteTraceback",
    "WorkerError",
    "WorkerLoadError",
    "crash_error",
    "exit_meaning",
    "on_side",
    "reply_error",
    "timeout_error",
]


class WorkerError(RuntimeError):
    """The worker failed outside the adapter's frames (bad configuration, unknown stream, a harness bug);
    carries the worker's exception type and traceback text."""

    def __init__(self, message: str, kind: str = "", remote_traceback: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.remote_traceback = remote_traceback


class WorkerLoadError(WorkerError, AdapterLoadError):
    """The worker could not build the adapter (a module that does not import, an unknown option): the
    configuration cannot be run. An :class:`AdapterLoadError` (a ``ValueError``), as in process, with the
    worker's traceback."""


_EXITS = {
    PIPE_LOST: "its connection to the harness failed inside it (closed, e.g. by the model closing its "
    "process's file descriptors)",
    ORPHANED: "it found the harness gone",
}
"""What a worker's own exit statuses mean (harness/execution/isolation_worker.py, sealed_feed.py)."""


def exit_meaning(code: int | None) -> str | None:
    """What a worker's own exit status says of its end (its connection lost, the harness gone); None for
    any other status."""
    return _EXITS.get(code) if code is not None else None


class RemoteTraceback(Exception):
    """The worker's traceback, attached as the cause of an error re-raised in the parent."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def timeout_error(
    adapter: str, stream_id: str, scope: Literal["frame", "stream", "start"], limit_s: float, slot: int
) -> AdapterTimeoutError:
    """A worker ended for a hang: where it hung (the progress ``slot``) and which limit it passed."""
    frame = max(slot, 0)
    if scope == "frame":
        where = "reset_state()" if slot == RESETTING else f"predict() of frame {frame}"
        problem = f"{where} did not return within the per-frame timeout of {limit_s:g} s"
    elif scope == "stream":
        problem = f"the stream did not finish within the per-stream timeout of {limit_s:g} s"
    else:
        problem = f"the worker did not start and warm up within the start timeout of {limit_s:g} s"
    return AdapterTimeoutError(
        adapter, stream_id, frame, problem + "; the worker was ended", scope=scope, timeout_s=limit_s
    )


def crash_error(adapter: str, stream_id: str, code: int | None, slot: int) -> AdapterCrashError:
    """A worker that died: how (exit status or signal) and where (the progress ``slot``)."""
    name = None
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
    how = f"killed by {name}" if name else f"exited with status {code}"
    if code in _EXITS:
        how = f"{how}: {_EXITS[code]}"
    where = {
        IDLE: "before the stream's first frame",
        RESETTING: "in reset_state() before frame 0",
        FINISHED: "after the stream's last frame, sending its recording",
    }.get(slot, f"during frame {slot}")
    problem = f"the worker process died ({how}) {where}"
    return AdapterCrashError(adapter, stream_id, max(slot, 0), problem, exitcode=code, signal=name)


def reply_error(
    header: dict[str, Any],
    stream_id_of: Callable[[str], str],
    running: str | None = None,
    slot: int = 0,
    adapter: str = "",
) -> Exception:
    """The exception of an error the worker reported (``adapter_error`` or ``failed``), with the
    worker's traceback as its cause; ``stream_id_of`` maps the worker's token back to a stream id.
    ``running``: the stream the worker was running (its frame: ``slot``), whose failure a ``failed``
    reply then is (of ``adapter``); None: the worker's start failed. Raises :class:`BadReply` for a
    report without its fields."""
    fields = {"type": str, "message": str, "traceback": str, "adapter": str, "stream_id": str, "problem": str}
    for name, kind in fields.items():
        if name in header and not isinstance(header[name], kind):
            raise BadReply(f"a {header.get('kind')} reply whose {name} is no {kind.__name__}")
    remote = header.get("traceback", "")
    cause = RemoteTraceback(remote)
    type_name, message = header.get("type", ""), header.get("message", "")
    error: Exception
    if header.get("kind") == "adapter_error":
        frame = header.get("frame")
        if type(frame) is not int or frame < 0 or not {"adapter", "stream_id", "problem"} <= header.keys():
            raise BadReply("an adapter_error reply without its adapter, stream, frame and problem")
        cls = {"AdapterCallError": AdapterCallError, "AdapterOutputError": AdapterOutputError}.get(
            type_name, AdapterError
        )
        stream_id = stream_id_of(header["stream_id"])
        problem = header["problem"].replace(header["stream_id"], stream_id)
        error = cls(header["adapter"], stream_id, frame, problem)
    elif running is not None:  # the worker failed outside the adapter's calls while it ran the stream
        problem = f"the worker failed outside the adapter's calls ({type_name}: {message}); it has ended"
        error = AdapterWorkerError(adapter, running, slot, problem)
    elif type_name == "AdapterLoadError":
        error = WorkerLoadError(message, kind=type_name, remote_traceback=remote)
    else:
        failed = f"isolated worker failed: {type_name}: {message}"
        error = WorkerError(failed, kind=type_name, remote_traceback=remote)
    error.__cause__ = cause
    return error


T = TypeVar("T")


def on_side(label: str, call: Callable[[], T]) -> T:
    """``call()``; an adapter's or its worker's failure in it names the side it happened on first
    (``head: adapter 'faulty', stream ...``): both sides of ``streambench ab`` often run one adapter
    (``faulty`` against ``faulty``), whose name, stream and frame alone do not say which side failed."""
    try:
        return call()
    except (AdapterError, WorkerError) as exc:
        exc.args = (f"{label}: {exc}", *exc.args[1:])
        raise
