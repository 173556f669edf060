"""The serving workers as the load generator (harness/execution/load_generator.py) talks to them: a sealed
serving worker in its own process and sandbox (:class:`SealedLane`, harness/execution/serving_worker.py), or
the same served in this process (:class:`InProcessLane`: tests, and the dispatcher's own cost). A sealed
lane that finds its worker gone says which worker and how it ended (:class:`WorkerEnded`: its pid, the exit
code or the signal), never only a broken pipe.

A sealed lane reads its worker as untrusted input (DESIGN.md "Causality": the trust boundary is the
adapter's process), through the isolated worker's reader
(:class:`~streambench.harness.execution.worker_replies.ReplyReader`: a size limit, a deadline once a
message has begun; its sends time out too): bytes a model writes to its worker's connection, framed or not,
are a :class:`BadServingReply` naming the worker, never a wait forever or a traceback; a control message
answered with anything but its answer is one too."""

from __future__ import annotations

import contextlib
import json
import signal
from collections.abc import Sequence
from typing import Any

from streambench.adapters.contract import AdapterInfo
from streambench.harness.execution.process_tree import LeftoverProcess, WorkerTree
from streambench.harness.execution.serving_worker import (
    SERVING_MARK,
    ServingCore,
    ServingError,
    ServingSpec,
    join_frames,
)
from streambench.harness.execution.worker_errors import exit_meaning
from streambench.harness.execution.worker_process import ChildProcess, SharedSlot, start_sealed_worker
from streambench.harness.execution.worker_replies import BadReply, ReplyReader, reply_header

__all__ = ["BadServingReply", "InProcessLane", "SealedLane", "ServingTimeout", "WorkerEnded"]

_ANSWERS = {b"P": 4, b"W": 4, b"Z": 1}
"""The length of each control message's answer (``P``, ``W``: a u32 count; ``Z``: ``b"Z"``)."""


class ServingTimeout(RuntimeError):
    """A worker did not answer a control message within its timeout."""


class WorkerEnded(ServingError):
    """A sealed serving worker is gone (its pipe closed): the message names its pid and how it ended."""


class BadServingReply(ServingError):
    """A sealed serving worker sent bytes that are no reply (:class:`BadReply`): the message names its pid
    and what was wrong. Its connection can no longer be read in step: the worker is ended."""


class InProcessLane:
    """A worker in this process: the batch is served when sent (tests; the dispatcher's own cost)."""

    def __init__(self, core: ServingCore) -> None:
        self.core = core
        self._reply = b""

    def send(self, message: bytes) -> None:
        self._reply = self.core.serve(message)

    def receive(self) -> bytes:
        return self._reply

    def fileno(self) -> int | None:
        return None

    def request(self, message: bytes, timeout_s: float | None = None) -> bytes:
        """A control message (``P``, ``W``, ``Z``) or a batch, answered at once (no timeout in process)."""
        kind = message[:1]
        if kind == b"B":
            return self.core.serve(message)
        if kind == b"P":
            return int(self.core.prepare(int.from_bytes(message[1:5], "little"))).to_bytes(4, "little")
        if kind == b"Z":
            self.core.reset()
            return b"Z"
        raise ValueError(f"an in-process lane takes no {kind!r} message")


class SealedLane:
    """A sealed serving worker (harness/execution/serving_worker.py) in its own process and sandbox."""

    builds = True
    """Replicas: a ``P`` may build instances; batched serving builds none after its start."""
    prepared = 0
    """The instances the worker holds (its answer to the last ``P``)."""

    def __init__(
        self, spec: ServingSpec, sandbox_json: str, start_timeout_s: float = 120.0, stall_s: float = 30.0
    ) -> None:
        """``stall_s``: the longest wait for the rest of a message once it has begun, and for a send to be
        taken (the run's frame timeout)."""
        self._slot = SharedSlot()
        self.process: ChildProcess
        self.process, self.conn = start_sealed_worker(
            SERVING_MARK + spec.model_dump_json(), self._slot, sandbox_json
        )
        self.reader = ReplyReader(self.conn, stall_s)
        self.tree = WorkerTree(self.process.pid)
        self.timeout_s, self.stall_s = start_timeout_s, stall_s
        self.builds = spec.serving == "replicas"
        self.sandbox: dict[str, Any] | None = None
        header = self._header(start_timeout_s)
        if header.get("kind") == "sandbox":
            self.sandbox = {k: v for k, v in header.items() if k != "kind"}
            header = self._header(start_timeout_s)
        if header.get("kind") != "ready":
            self.close()
            raise ValueError(f"{header.get('type', 'error')}: {header.get('message', header)}")
        try:
            self.info = AdapterInfo.model_validate(header["info"])
            self.max_batch_size = int(header["max_batch_size"])
        except (KeyError, TypeError, ValueError) as exc:  # ValidationError is a ValueError
            self.close(at_once=True)
            raise self._bad(BadReply(f"a ready reply without its fields ({type(exc).__name__})")) from None

    def _header(self, timeout_s: float) -> dict[str, Any]:
        if not self.conn.poll(timeout_s):
            self.close()
            raise ServingTimeout(f"the serving worker did not start within {timeout_s:g} s")
        try:
            return reply_header(self.reader.read(), ("sandbox", "ready", "failed"))
        except BadReply as exc:
            self.close(at_once=True)
            raise self._bad(exc) from None
        except (EOFError, OSError):
            self.close()
            raise ServingError(
                f"the serving worker exited while starting (code {self.process.exitcode})"
            ) from None

    def _bad(self, exc: BadReply) -> BadServingReply:
        return BadServingReply(f"the serving worker (pid {self.process.pid}) sent what is no reply: {exc}")

    def send(self, message: bytes) -> None:
        try:
            self.conn.send_bytes(message)
        except BlockingIOError:  # the send timed out (the reader sets SO_SNDTIMEO): it stopped reading
            raise ServingTimeout(
                f"the serving worker (pid {self.process.pid}) did not take a message in {self.stall_s:g} s"
            ) from None
        except OSError:  # a broken pipe: the worker is gone
            raise WorkerEnded(self.ended()) from None

    def receive(self) -> bytes:
        """One message of the worker, read as untrusted input (module docstring)."""
        try:
            return self.reader.read()
        except BadReply as exc:
            raise self._bad(exc) from None
        except (EOFError, OSError):
            raise WorkerEnded(self.ended()) from None

    def fileno(self) -> int | None:
        return self.conn.fileno()

    def ended(self) -> str:
        """How the worker ended, naming its pid: ``the serving worker (pid 123) was killed by SIGKILL``."""
        self.process.join(1.0)
        code = self.process.exitcode
        who = f"the serving worker (pid {self.process.pid})"
        if code is None:
            return f"{who} closed its pipe and is still running"
        if code < 0:
            with contextlib.suppress(ValueError):
                return f"{who} was killed by {signal.Signals(-code).name}"
            return f"{who} was killed by signal {-code}"
        meaning = exit_meaning(code)
        return f"{who} exited with code {code}" + (f": {meaning}" if meaning else "")

    def request(self, message: bytes, timeout_s: float | None = None) -> bytes:
        """A control message (``P``, ``W``, ``Z``, or a batch outside a point) and its answer (not timed),
        within ``timeout_s`` (default: :meth:`limit`)."""
        limit = self.limit(message) if timeout_s is None else timeout_s
        self.send(message)
        try:
            answered = self.conn.poll(limit)
        except (EOFError, OSError):
            raise WorkerEnded(self.ended()) from None
        if not answered:
            raise ServingTimeout(
                f"the serving worker (pid {self.process.pid}) did not answer {message[:1]!r} in {limit:g} s"
            )
        answer = self.receive()
        kind = message[:1]
        if kind == b"B":  # a batch's reply: read by the caller (load_generator.raise_reply, decode_outputs)
            return answer
        if answer[:1] == b"E":  # a control message the adapter failed on
            try:
                error = json.loads(answer[1:])
                failed = f"{error['type']}: {error['message']}"
            except (ValueError, KeyError, TypeError, RecursionError):
                raise self._bad(BadReply(f"an error reply to {kind!r} that is not readable")) from None
            raise ServingError(failed)
        if len(answer) != _ANSWERS.get(kind, -1) or (kind == b"Z" and answer != b"Z"):
            raise self._bad(BadReply(f"{answer[:40]!r} in answer to {kind!r}"))
        if kind == b"P":
            self.prepared = int.from_bytes(answer, "little")
        return answer

    def limit(self, message: bytes) -> float:
        """How long a control message may take: the start timeout where the adapter is built or warmed up
        (``W``; a ``P`` asking for more instances than the worker holds), the frame timeout (``stall_s``)
        for the rest (``Z`` resets, a ``P`` that builds nothing, a batch): a worker stopped between points
        is ended as one stopped in a point is."""
        kind = message[:1]
        wanted = int.from_bytes(message[1:5], "little") if kind == b"P" else 0
        if kind == b"W" or (kind == b"P" and self.builds and wanted > self.prepared):
            return self.timeout_s
        return self.stall_s

    def warm(self, frames: Sequence[bytes]) -> None:
        self.request(b"W" + join_frames(frames))

    def close(self, at_once: bool = False) -> list[LeftoverProcess]:
        """Ask the worker to stop, end it if it does not within 5 s, and end what it left behind (its
        descendants noted first, as IsolatedEngine.close does). ``at_once``: end it without asking (an
        exception is ending the search, and a worker inside a batch reads no request before its end)."""
        if self.process.is_alive():
            self.tree.note()
        if not at_once:
            with contextlib.suppress(OSError):
                self.conn.send_bytes(b"C")
            self.process.join(5.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5.0)  # reaped before the lane is called closed (a kill is not yet an exit)
        left = self.tree.end()
        self.reader.close()
        self.conn.close()
        return left
