"""What the parent says when a worker fails (harness/execution/isolation.py): a hang past a timeout, a
crash (with the exit status or the signal's name and where in the stream it happened), or an error the
worker reported, re-raised as the parent's own exception types with the worker's traceback as cause."""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any, Literal

from streambench.harness.execution.adapter_errors import (
    AdapterCallError,
    AdapterCrashError,
    AdapterError,
    AdapterOutputError,
    AdapterTimeoutError,
)
from streambench.harness.execution.isolation_worker import IDLE, RESETTING

__all__ = ["RemoteTraceback", "WorkerError", "crash_error", "reply_error", "timeout_error"]


class WorkerError(RuntimeError):
    """The worker failed outside the adapter's frames (bad configuration, unknown stream, a harness bug);
    carries the worker's exception type and traceback text."""

    def __init__(self, message: str, kind: str = "", remote_traceback: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.remote_traceback = remote_traceback


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
    where = {IDLE: "before the stream's first frame", RESETTING: "in reset_state() before frame 0"}.get(
        slot, f"during frame {slot}"
    )
    problem = f"the worker process died ({how}) {where}"
    return AdapterCrashError(adapter, stream_id, max(slot, 0), problem, exitcode=code, signal=name)


def reply_error(header: dict[str, Any], stream_id_of: Callable[[str], str]) -> Exception:
    """The exception of an error the worker reported (``adapter_error`` or ``failed``), with the
    worker's traceback as its cause; ``stream_id_of`` maps the worker's token back to a stream id."""
    cause = RemoteTraceback(header.get("traceback", ""))
    if header.get("kind") == "adapter_error":
        cls = {"AdapterCallError": AdapterCallError, "AdapterOutputError": AdapterOutputError}.get(
            header["type"], AdapterError
        )
        stream_id = stream_id_of(header["stream_id"])
        problem = str(header["problem"]).replace(header["stream_id"], stream_id)
        error: Exception = cls(header["adapter"], stream_id, int(header["frame"]), problem)
    else:
        error = WorkerError(
            f"isolated worker failed: {header.get('type')}: {header.get('message')}",
            kind=str(header.get("type", "")),
            remote_traceback=str(header.get("traceback", "")),
        )
    error.__cause__ = cause
    return error
