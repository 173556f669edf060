"""What goes wrong in or with an adapter, named with the adapter, the stream and the frame.

Raised by the engine (harness/execution/engine.py) and, for an adapter run in a worker process, by the
isolated engine (harness/execution/isolation.py), which adds the two failures only isolation can survive: the
worker died (:class:`AdapterCrashError`) or stopped answering (:class:`AdapterTimeoutError`). The CLI reports
them without a traceback.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = [
    "MESSAGE_LIMIT",
    "TRACEBACK_LIMIT",
    "AdapterCallError",
    "AdapterCrashError",
    "AdapterError",
    "AdapterOutputError",
    "AdapterTimeoutError",
    "AdapterWorkerError",
    "HarnessInterrupt",
    "bounded",
]

MESSAGE_LIMIT = 4000
"""Characters of an adapter failure's message kept (its problem: the model's own words included)."""
TRACEBACK_LIMIT = 40000
"""Characters of a failure's traceback kept."""


def bounded(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to about ``limit`` characters: its start and its end (where a traceback names the
    exception) with the count of characters left out between them. A model's exception message is its
    own words, of any size; a failure record, the console summary and the event log hold it bounded."""
    if len(text) <= limit:
        return text
    keep = limit - 40  # room for the note, so that a bounded text is bounded again unchanged
    head, tail = keep * 3 // 4, keep - keep * 3 // 4
    return f"{text[:head]} [{len(text) - keep:,} characters left out] {text[-tail:]}"


class HarnessInterrupt(BaseException):
    """A signal the harness turned into an exception (SIGTERM's ``RunInterrupted``, a sweep's
    ``SweepInterrupted``): it may surface inside ``predict()``, and the engine passes it on, as it does
    ``KeyboardInterrupt`` in process, where every other exception out of the adapter is the adapter's
    failure (harness/execution/engine.py)."""


class AdapterError(Exception):
    """Something went wrong in or with an adapter; names the adapter, the stream and the frame."""

    def __init__(self, adapter: str, stream_id: str, frame: int, problem: str) -> None:
        problem = bounded(problem)
        super().__init__(f"adapter {adapter!r}, stream {stream_id!r}, frame {frame}: {problem}")
        self.adapter = adapter
        self.stream_id = stream_id
        self.frame = frame
        self.problem = problem

    def __reduce__(self) -> tuple[Any, ...]:
        """Rebuilt from its fields, not its message, when unpickled: a run in a sweep's worker process
        (harness/sweep/executors.py) raises it across a process pool, whose parent would otherwise fail
        to unpickle it and report the pool broken ("worker process lost")."""
        return (type(self), (self.adapter, self.stream_id, self.frame, self.problem), self.__dict__)


class AdapterOutputError(AdapterError, ValueError):
    """An adapter broke the data contract (its output failed validation)."""


class AdapterCallError(AdapterError, RuntimeError):
    """An adapter's ``predict()`` or ``reset_state()`` raised; the original exception is the cause."""


class AdapterCrashError(AdapterError, RuntimeError):
    """The worker process running the adapter died (``--isolate``): a segfault, ``os._exit``, the
    kernel's out-of-memory killer. ``frame`` is the last frame whose ``predict()`` had started (0 when
    the worker died before the stream's first frame); ``exitcode`` is the process's exit status
    (negative: killed by a signal) and ``signal`` that signal's name (``"SIGSEGV"``), else ``None``."""

    def __init__(
        self,
        adapter: str,
        stream_id: str,
        frame: int,
        problem: str,
        exitcode: int | None = None,
        signal: str | None = None,
    ) -> None:
        super().__init__(adapter, stream_id, frame, problem)
        self.exitcode = exitcode
        self.signal = signal


class AdapterTimeoutError(AdapterError, TimeoutError):
    """The adapter stopped answering and its worker was ended (``--isolate``).

    ``scope`` says which limit ran out: ``"frame"`` (one ``predict()`` or ``reset_state()`` took longer
    than the per-frame timeout; ``frame`` is the frame it hung at), ``"stream"`` (the whole stream took
    longer than the per-stream timeout; ``frame`` is the frame it was on) or ``"start"`` (starting the
    worker, building the adapter and warming it up took longer than the start timeout).
    """

    def __init__(
        self,
        adapter: str,
        stream_id: str,
        frame: int,
        problem: str,
        scope: Literal["frame", "stream", "start"] = "frame",
        timeout_s: float = 0.0,
    ) -> None:
        super().__init__(adapter, stream_id, frame, problem)
        self.scope = scope
        self.timeout_s = timeout_s


class AdapterWorkerError(AdapterError, RuntimeError):
    """The adapter's worker process broke the protocol with the harness (``--isolate``): a reply that is
    not one (bytes a model wrote to its connection, a malformed header or recording, a request for a
    frame past the stream's end) or a failure it reported from outside ``predict()``. The worker, whose
    state is then unknown, was ended; ``frame`` is the frame it was at (0 before the first)."""
