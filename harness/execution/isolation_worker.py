"""The worker side of ``--isolate`` (harness/execution/isolation.py): runs in the spawned process.

It rebuilds the streams and the adapter from the run's configuration, wraps the adapter in the progress
proxy, runs :class:`streambench.harness.engine.Engine` (so latencies are taken here, at the engine's
boundary), warms up, and answers requests on its pipe. Every message is bytes: a JSON header, and for a
recording the bytes of ``numpy.savez(to_arrays([recording]))`` — nothing is pickled.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import io
import json
import multiprocessing
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from streambench.adapters.contract import Adapter, Frame, PredictOutput, Stream
from streambench.harness.execution.adapter_errors import TRACEBACK_LIMIT, AdapterError, bounded
from streambench.harness.execution.code_identity import code_files
from streambench.harness.execution.output_commits import Outbox
from streambench.harness.execution.sealed_feed import PIPE_LOST, ParentFeed, pipe_lost
from streambench.protocols.recording import to_arrays

__all__ = [
    "FINISHED",
    "IDLE",
    "ORPHANED",
    "PIPE_LOST",
    "RESETTING",
    "RequestServer",
    "Start",
    "WorkerAdapter",
    "adapter_error",
    "bind_to_parent",
    "describe",
    "limit_memory",
    "peak_rss_bytes",
    "sealed_stream",
    "send",
    "serve",
    "worker_main",
]

IDLE = -2
"""Progress slot: the worker is not inside the adapter (the parent's mark before each request)."""
RESETTING = -1
"""Progress slot: inside ``reset_state()``."""
FINISHED = -3
"""Progress slot: the stream's frames are done; the worker serialises and sends its recording."""


class WorkerAdapter:
    """The worker's adapter as the engine sees it: ``predict`` stores the frame's index in the shared
    progress slot, then forwards to the adapter; ``reset_state`` stores -1, then forwards; ``info``,
    ``stages`` and ``server_times`` (a served model's per-frame figures) are the adapter's own.

    ``predict`` is a closure set per instance (its call costs one frame less than a method's: no
    ``self`` to look attributes up on). Only the engine calls it, inside its timed loop; this proxy
    merely passes the adapter's ``predict`` on, which is why it reaches it by name (the layering test,
    tests/test_layering.py, lets only harness/execution/engine.py name it as an attribute).
    """

    __slots__ = ("_outbox", "_reset", "_slot", "info", "predict", "server_times", "stages")

    predict: Callable[[Frame], PredictOutput]

    def __init__(self, adapter: Adapter, slot: Any, outbox: Outbox | None = None) -> None:
        forward: Callable[[Frame], PredictOutput] = getattr(adapter, "predict")  # noqa: B009

        if outbox is None:

            def predict(frame: Frame) -> PredictOutput:
                slot[0] = frame.index
                return forward(frame)

        else:  # sealed: the output is also kept for the feed to commit (harness/execution/output_commits.py)

            def predict(frame: Frame) -> PredictOutput:
                slot[0] = frame.index
                out = outbox.last = forward(frame)
                return out

        setattr(self, "predict", predict)  # noqa: B010
        self._outbox = outbox
        self._reset = adapter.reset_state
        self._slot = slot
        self.info = adapter.info
        self.stages = getattr(adapter, "stages", None)
        self.server_times = getattr(adapter, "server_times", None)

    def reset_state(self) -> None:
        self._slot[0] = RESETTING
        if self._outbox is not None:
            self._outbox.clear()
        self._reset()


def limit_memory(limit_mb: int) -> str | None:
    """Cap the address space at the current virtual size plus ``limit_mb``; a note if it cannot be."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux/macOS
        return "memory_limit_mb ignored: the resource module is unavailable on this platform"
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[0])
        current = pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):  # pragma: no cover - no /proc
        return "memory_limit_mb ignored: the current virtual size could not be read (/proc/self/statm)"
    limit = current + limit_mb * 2**20
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return None


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
ORPHANED = 75
"""Exit status of a worker that found its parent gone (the watchdog's, where no death signal came)."""


def bind_to_parent(poll_s: float = 1.0) -> None:
    """Make this worker die with the harness process that started it: a
    parent killed with SIGKILL must not leave a hung adapter running forever.

    On Linux the kernel sends SIGKILL to the worker when its parent dies (``prctl(PR_SET_PDEATHSIG)``);
    a parent already gone before that call is caught by comparing the parent pid. Everywhere, a daemon
    thread checks the parent pid every ``poll_s`` seconds and ends the worker's process group when it
    changes (a fallback that also covers a platform without ``prctl``; a worker blocked on its pipe sees
    EOF anyway). SIGINT is ignored: the parent, which records an interruption and ends this worker, is the
    one to report it (no traceback from here, should a Ctrl-C reach this process too).

    The worker leads a process group of its own, which whatever the model starts joins: the parent ends
    the group with the worker, and a guard ends it if the parent dies
    (harness/execution/process_tree.py). Its standard output is its standard error:
    what the model prints must not reach the command's own output; the pipe to the parent is a socket."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError):  # already the leader of its own group (or of a session)
        os.setpgid(0, 0)
    if hasattr(signal, "SIGTTOU"):  # a group in the terminal's background may still write to it
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
        os.dup2(2, 1)
    parent = multiprocessing.parent_process()
    parent_pid = parent.pid if parent is not None and parent.pid is not None else os.getppid()
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl: the watchdog alone
            pass
    if os.getppid() != parent_pid:  # the parent died before the death signal was set
        os._exit(ORPHANED)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(poll_s)
        if os.getpgrp() == os.getpid():  # what the model started goes with it
            with contextlib.suppress(OSError):
                os.killpg(0, signal.SIGKILL)
        os._exit(ORPHANED)

    threading.Thread(target=watch, name="streambench-parent-watchdog", daemon=True).start()


def peak_rss_bytes() -> int | None:
    """This process's peak resident set since it started (``getrusage``: KiB on Linux, bytes on macOS);
    None where ``resource`` is unavailable. Reported with every reply: the adapter's memory under
    ``--isolate`` is the worker's."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux/macOS
        return None
    peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return peak if sys.platform == "darwin" else peak * 1024


def send(conn: Connection, message: dict[str, Any]) -> None:
    """Send a reply header; a connection that is gone (the parent's end, or this end closed by the model)
    ends this worker quietly (:func:`~streambench.harness.execution.sealed_feed.pipe_lost`)."""
    try:
        conn.send_bytes(json.dumps(message).encode())
    except OSError:
        pipe_lost()


def describe(exc: BaseException) -> dict[str, Any]:
    """An exception as a reply names it (its message and traceback bounded: a model's words)."""
    return {
        "type": type(exc).__name__,
        "message": bounded(str(exc)),
        "traceback": bounded(
            "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)), TRACEBACK_LIMIT
        ),
    }


def adapter_error(exc: AdapterError) -> dict[str, Any]:
    memory = isinstance(exc.__cause__, MemoryError)
    return {
        "kind": "adapter_error",
        **describe(exc),
        "adapter": exc.adapter,
        "stream_id": exc.stream_id,
        "frame": exc.frame,
        "problem": exc.problem,
        "restart": memory,
    }


def sealed_stream(
    conn: Connection, header: dict[str, Any], classes: tuple[str, ...], outbox: Outbox
) -> Stream:
    """A stream whose frames come from the parent one at a time (sealed mode); its labels are all
    False: labels never reach the worker, the parent puts the true ones into the recording."""
    times = np.asarray(header["times"], dtype=np.float64)
    return Stream(
        stream_id=header["id"],
        classes=classes,
        labels=np.zeros((times.size, len(classes)), dtype=bool),
        frame_times=times,
        frame_source=lambda: ParentFeed(conn, int(times.size), outbox),
        modalities=(),
        t0=float(header["t0"]),
        segment_length_s=header["seg"],
    )


def worker_main(
    config_json: str,
    memory_limit_mb: int | None,
    conn: Connection,
    slot: Any,
) -> None:
    """Entry point of an isolated (not sealed) worker: build the data set and the adapter from the run's
    configuration, warm up, then serve ``run`` requests until ``close``. (A sealed worker is
    :func:`streambench.harness.execution.sealed_worker.sealed_main`: it knows only what the model needs.)"""
    bind_to_parent()
    try:
        from streambench.harness.datasets.catalog import make_streams, make_warmup_stream
        from streambench.harness.execution.config import RunConfig
        from streambench.harness.execution.setup import build_adapter
        from streambench.harness.execution.torch_setup import configure_torch_when_imported

        config = RunConfig.model_validate_json(config_json)
        # torch is imported (and then seeded, its threads set) only by a model that uses it: a fresh worker
        # of a numpy model starts ~4 x faster (harness/execution/torch_setup.py)
        torch_configured = configure_torch_when_imported(config.threads, config.torch_seed)
        n_warmup = config.engine.warmup_frames
        streams = {s.stream_id: s for s in make_streams(config.data)}
        warmup = make_warmup_stream(config.data, n_warmup) if n_warmup else None
        sample = next(iter(streams.values()))

        def build() -> Adapter:
            return build_adapter(config, sample)

    except BaseException as exc:  # SIGINT is ignored here: whatever it is, the start failed
        send(conn, {"kind": "failed", **describe(exc)})
        return
    start = Start(build, warmup, config.engine, torch_configured, memory_limit_mb)
    listed = {
        "stream_ids": list(streams),
        "stream_frames": {stream_id: s.num_frames for stream_id, s in streams.items()},
        "warmup_stream_id": warmup.stream_id if warmup is not None else None,
    }
    serve(conn, slot, start, listed, lambda request: streams[request["stream_id"]])


@dataclasses.dataclass
class Start:
    """What a worker builds and warms up before it says ``ready`` (isolated and sealed workers alike)."""

    build: Callable[[], Adapter]
    warmup: Stream | None
    engine: Any  # EngineConfig (imported by the caller, after the worker's own start)
    torch_configured: Callable[[], Any]  # once built: the AdapterProcess (harness/execution/torch_setup.py)
    memory_limit_mb: int | None
    outbox: Outbox | None = None  # sealed: each output committed to the parent as it comes


def serve(
    conn: Connection,
    slot: Any,
    start: Start,
    listed: dict[str, Any],
    stream_for: Callable[[dict[str, Any]], Stream],
) -> None:
    """Build and warm the adapter up, say ``ready`` (with ``listed``: what the worker holds, if anything),
    then answer requests until ``close``; an error before ``ready`` is the start's reply."""
    try:
        server = RequestServer(conn, slot, start.build, start.warmup, start.engine, start.outbox)
        process = start.torch_configured()
        limit = start.memory_limit_mb
        note = limit_memory(limit) if limit is not None else None  # once built
        frames = server.warm()
        info = server.adapter.info.model_dump(mode="json")  # the model's property: it may raise too
        code = code_files(server.adapter)
    except AdapterError as exc:
        send(conn, adapter_error(exc))
        return
    except BaseException as exc:  # the model's construction: SystemExit, KeyboardInterrupt are its own
        send(conn, {"kind": "failed", **describe(exc)})
        return
    ready: dict[str, Any] = {"kind": "ready", "peak_rss_bytes": peak_rss_bytes(), "info": info}
    ready["warmup_frames"] = frames
    ready["process"] = process.model_dump(mode="json") if process is not None else None
    ready["code"] = code  # the files its code came from (the parent hashes them)
    send(conn, {**ready, "stream_ids": [], "warmup_stream_id": None, **listed, "memory_limit_note": note})
    server.serve(stream_for)


class RequestServer:
    """The worker's adapter and engine, and its request loop (isolated and sealed workers alike): ``run``
    a stream, count ``flops``, ``rebuild`` a fresh instance in this process (warmed up again, for the
    causality protocol's check of state shared across instances), until ``close`` or EOF."""

    def __init__(
        self,
        conn: Connection,
        slot: Any,
        build: Callable[[], Adapter],
        warmup: Stream | None,
        engine_config: Any,
        outbox: Outbox | None = None,
    ) -> None:
        self.conn, self.slot, self.build, self.warmup = conn, slot, build, warmup
        self.engine_config = engine_config
        self.outbox = outbox
        self.adapter = build()

    def warm(self) -> int:
        """A fresh engine around the current adapter, warmed up; the warm-up frames fed."""
        from streambench.harness.execution.engine import Engine

        # interrupts=(): SIGINT is ignored in a worker, so whatever leaves predict() is the model's own
        self.engine = Engine(
            WorkerAdapter(self.adapter, self.slot, self.outbox), self.engine_config, interrupts=()
        )
        frames = self.engine.warm_up(self.warmup) if self.warmup is not None else 0
        self.slot[0] = IDLE
        return frames

    def serve(self, stream_for: Callable[[dict[str, Any]], Stream]) -> None:
        conn, slot = self.conn, self.slot
        while True:
            try:
                request = json.loads(conn.recv_bytes())
            except EOFError:
                return  # the parent is gone
            except OSError:  # this end is: closed (by the model) or broken
                pipe_lost()
            kind = request.get("kind")
            if kind not in ("run", "flops", "rebuild"):
                return
            try:
                if kind == "rebuild":
                    self.adapter = self.build()
                    send(conn, {"kind": "rebuilt", "warmup_frames": self.warm()})
                    continue
                stream = stream_for(request)
                if kind == "flops":
                    flops, reason = self.engine.count_flops(stream)
                    slot[0] = IDLE
                    send(conn, {"kind": "flops", "flops": flops, "reason": reason})
                    continue
                record = request.get("record")  # the parent's choice for this stream, else the config's
                self.engine.config = (
                    self.engine_config
                    if record is None
                    else self.engine_config.model_copy(update={"record": tuple(record)})
                )
                if self.outbox is not None:
                    self.outbox.record = tuple(self.engine.config.record)
                for _ in range(int(request.get("resets", 1)) - 1):
                    self.engine.adapter.reset_state()
                recording = self.engine.run_stream(
                    stream, request.get("role", "test"), untimed=bool(request.get("untimed"))
                )
                slot[0] = FINISHED  # out of predict(): serialising the stream is not a frame's time
                buffer = io.BytesIO()
                np.savez(buffer, **to_arrays([recording]))  # type: ignore[arg-type]
            except AdapterError as exc:  # the slot still names the frame, should the reply not arrive
                send(conn, adapter_error(exc))
                slot[0] = IDLE
                continue
            except BaseException as exc:  # outside the adapter's calls (those are AdapterErrors)
                send(conn, {"kind": "failed", **describe(exc)})
                return
            send(conn, {"kind": "ok", "peak_rss_bytes": peak_rss_bytes()})
            try:
                conn.send_bytes(buffer.getvalue())
            except OSError:
                pipe_lost()
