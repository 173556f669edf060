"""The adapter runs in a worker process, so a hang or a crash costs one stream, not the run.

Two kinds of worker:

- *sealed* (the default): a plain child (harness/execution/worker_process.py ``start_sealed_worker``)
  that enters its OS sandbox first (harness/execution/sandbox.py), is told a
  :class:`~streambench.harness.execution.sealed_worker.WorkerSpec` only, and gets every frame from this
  process one at a time under an opaque token per stream (harness/execution/frame_server.py), each frame timed
  on this process's clock too (harness/execution/host_timing.py; the pipe's floor calibrated before the
  model is imported);
- *isolated* (``--no-sealed``, and ``ab``'s sides with a :class:`WorkerCommand`): a child
  (harness/execution/isolation_worker.py; a ``multiprocessing`` "spawn" child, or a checkout's own
  interpreter) that rebuilds the streams and the adapter from the
  :class:`~streambench.harness.runner.RunConfig`.

Either applies the thread settings and the torch seed as ``execute_run`` does, warms the adapter up and
then serves one request per stream. It runs
:class:`streambench.harness.engine.Engine` itself, so every latency is taken inside the worker, at the same
boundary as in-process; a recording travels back as the bytes of
``numpy.savez(to_arrays([recording]))``, loaded with ``allow_pickle=False`` (no pickle of results).

Progress: the worker's adapter is wrapped in a thin proxy whose ``predict`` stores ``frame.index`` in one
shared-memory slot (a ``RawArray``) before calling the model; that one store is all isolation adds to the
timed loop (``benchmarks/test_isolation_overhead.py`` measures it). ``reset_state`` stores -1, and the
parent stores -2 ("not in the adapter") before each request. The parent waits on the pipe and watches
the slot:

- per-frame timeout: the slot has not changed for ``frame_timeout_s`` while in the adapter (a
  ``predict()`` or ``reset_state()`` hangs) -> the worker is terminated, then killed, and
  :class:`AdapterTimeoutError` (scope ``"frame"``) names the stream and the frame it hung at;
- per-stream timeout: the request has not been answered in ``stream_timeout_s`` -> the same, scope
  ``"stream"``, naming the frame it was on;
- crash: the pipe reaches EOF or the process is gone (segfault, ``os._exit``, the OOM killer) ->
  :class:`AdapterCrashError` with the exit code, the signal's name and the last frame started;
- a reply that is none (bytes a model wrote to its connection, a malformed header or recording; read
  with a size limit and a deadline: harness/execution/worker_replies.py), or a failure the worker reports
  from outside the adapter's calls while it runs a stream -> the worker is ended and
  :class:`AdapterWorkerError` names the stream and the frame it was at.

After a hang or a crash (and after a ``MemoryError`` inside the adapter, which leaves the worker's
memory in an unknown state) the next request starts a fresh worker, which warms up again. Errors the
engine raises in the worker (:class:`AdapterCallError`, :class:`AdapterOutputError`) come back with
their stream, frame and the worker's traceback as the cause; the worker keeps running.

Memory limit: with ``memory_limit_mb`` set, the worker, once it has imported everything and built the
streams and the adapter, caps its address space (``RLIMIT_AS``) at its current virtual size plus the
limit, so a leaking adapter gets ``MemoryError`` (recorded as an :class:`AdapterCallError` at that frame)
or dies (recorded as a crash). Linux/Unix only; ignored (with the reason in ``memory_limit_note``)
where ``resource`` is unavailable.

Processes the model starts: each worker leads a process group of its own; closing a
worker (at the run's end, or after a hang or a crash) ends what is left of its group and names it in
:attr:`IsolatedEngine.leftover_processes`, and a guard ends the group if this process dies
(harness/execution/process_tree.py).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import multiprocessing
import time
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, Literal, NoReturn, TypeVar

import numpy as np
from pydantic import BaseModel

from streambench.adapters.contract import AdapterInfo, Stream
from streambench.harness.execution.adapter_errors import (
    AdapterCrashError,
    AdapterError,
    AdapterTimeoutError,
    AdapterWorkerError,
)
from streambench.harness.execution.code_identity import CodeFile, identify
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import PROGRESS_INTERVAL_S, FrameProgress
from streambench.harness.execution.frame_server import FrameServer, PastTheEnd
from streambench.harness.execution.host_timing import (
    PipeFloor,
    StartTimes,
    now_ns,
    process_cpu_ns,
    thread_cpu_ns,
)
from streambench.harness.execution.isolation_worker import FINISHED, IDLE, worker_main
from streambench.harness.execution.lockstep import Turn
from streambench.harness.execution.output_commits import check_commits
from streambench.harness.execution.process_tree import LeftoverProcess, WorkerTree
from streambench.harness.execution.sandbox import SandboxPolicy, SandboxRecord, discard, sandbox_policy
from streambench.harness.execution.sealed_feed import DONE, NEXT, Extra, StreamsToFeed
from streambench.harness.execution.sealed_worker import WorkerSpec
from streambench.harness.execution.worker_errors import WorkerError, crash_error, reply_error, timeout_error
from streambench.harness.execution.worker_paths import start_hooks, worker_paths
from streambench.harness.execution.worker_process import (
    ChildProcess,
    SharedSlot,
    WorkerCommand,
    runs_this_harness,
    start_sealed_worker,
    start_worker,
)
from streambench.harness.execution.worker_replies import (
    BadReply,
    ReplyReader,
    asked_for,
    check_shape,
    reply_header,
    reply_recording,
)
from streambench.harness.instruments.memory import process_peak_rss_bytes
from streambench.protocols.recording import StreamRecording, StreamRole

__all__ = ["IsolatedEngine", "WorkerError"]

_Model = TypeVar("_Model", bound=BaseModel)

_WARMUP_ID = (
    "syn-warmup"  # streambench.harness.datasets.synthetic.make_warmup_stream's id, for errors before "ready"
)


class IsolatedEngine:
    """The engine's role for the runner, with the adapter in a worker process.

    ``warm_up()`` starts the worker (which warms up) and returns the warm-up frames; ``run_stream`` runs
    one scored stream by id and returns its recording or raises an :class:`AdapterError` subclass naming
    the stream and the frame. ``info`` is the adapter's :class:`AdapterInfo` as the worker reported it.
    Use as a context manager, or call ``close()``.
    """

    mode: Literal["isolated"] = "isolated"

    def __init__(
        self,
        run_config: RunConfig,
        isolation: IsolationConfig | None = None,
        command: WorkerCommand | None = None,
        feed: StreamsToFeed | None = None,
    ) -> None:
        self.run_config = run_config
        self.isolation = isolation or IsolationConfig()
        self.command = command  # None: a multiprocessing "spawn" child; else its own interpreter and path
        self._config_json = run_config.model_dump_json(exclude_unset=command is not None)
        self._ctx = multiprocessing.get_context("spawn")
        # the frame being run: ctypes c_longlong[1] in shared memory (a shared file across an exec)
        self.sealed = self.isolation.sealed
        shared_file = command is not None or self.sealed
        self._progress: Any = SharedSlot() if shared_file else self._ctx.RawArray("q", 1)
        self._process: BaseProcess | ChildProcess | None = None
        self._conn: Connection | None = None
        self._reader: ReplyReader | None = None  # reads the worker's replies as untrusted input
        self._info: AdapterInfo | None = None
        self.stream_ids: tuple[str, ...] = ()
        self.warmup_frames_run = 0
        self.warmup_stream_id: str | None = None
        self.memory_limit_note: str | None = None
        self.adapter_process: dict[str, Any] | None = None  # the worker's word once built
        self.starts = 0  # workers started so far (1 + restarts)
        self._data: dict[str, Stream] | None = None  # sealed: the data set, held in this process only
        self._frames = FrameServer()  # sealed: the streams being fed, timed, under opaque tokens
        self._warmup: Stream | None = None
        if feed is not None:  # a protocol's own streams in place of the run's data set
            self._data = {s.stream_id: s for s in feed.streams}
            self._warmup = feed.warmup
        self.floor: PipeFloor | None = None  # sealed: the pipe's round trip, calibrated per worker
        self.start_times: StartTimes | None = None
        self.idle_cpu_ns = 0  # sealed: the worker's CPU time between streams, summed
        self._idle_from: int | None = None
        self.sandbox: SandboxRecord | None = None  # sealed: what the (last) worker's sandbox was
        self._policy: SandboxPolicy | None = None
        self.peak_rss_bytes: int | None = None  # the largest peak RSS any worker reported
        self._stream_frames: dict[str, int] = {}  # frames per stream, as the worker reported them
        self._following: tuple[FrameProgress, int | None] | None = None  # the progress of a request
        self._tree: WorkerTree | None = None  # the worker's process group, and its guard
        self.leftover_processes: list[LeftoverProcess] = []  # what the model left, ended with its workers
        self.code: list[CodeFile] | None = None  # the files the adapter's code came from, hashed here
        self.start_hooks: list[str] = []  # sealed: start-up hooks on its path (none ran before the sandbox)

    # -- public interface -------------------------------------------------------------------------------

    @property
    def info(self) -> AdapterInfo:
        """The adapter's info, as reported by the (first) worker; starts a worker if none has run yet."""
        if self._info is None:
            self._ensure_worker()
        assert self._info is not None
        return self._info

    @property
    def worker_pid(self) -> int | None:
        """Process id of the live worker, or ``None``."""
        return self._process.pid if self._process is not None else None

    def warm_up(self) -> int:
        """Start a worker if none is running (it warms up before it serves); the warm-up frames fed."""
        self._ensure_worker()
        return self.warmup_frames_run

    def run_stream(
        self, stream_id: str, role: StreamRole = "test", progress: FrameProgress | None = None
    ) -> StreamRecording:
        """Run one stream of the run's data set in the worker; restart the worker first if it is gone.
        ``progress`` gets the frame the worker is at (its progress slot) while this process waits, about
        every ``PROGRESS_INTERVAL_S``; the total is ``None`` when the worker did not say (an older
        checkout's worker)."""
        if self.sealed:
            self._ensure_worker()  # builds the data set in this process
            return self.run(self._stream(stream_id), role, progress=progress)
        self._ensure_worker()
        self._following = (progress, self._stream_frames.get(stream_id)) if progress is not None else None
        try:
            header = self._request({"kind": "run", "stream_id": stream_id, "role": role}, stream_id)
            return self._recording(header, stream_id)
        except AdapterError as exc:
            raise asked_for(exc, stream_id) from exc.__cause__
        finally:
            self._following = None

    def run(
        self,
        stream: Stream,
        role: StreamRole = "test",
        untimed: bool = False,
        resets: int = 1,
        progress: FrameProgress | None = None,
        record: Sequence[Extra] | None = None,
    ) -> StreamRecording:
        """Sealed mode: run any stream this process holds (an occluded or nudged variant, too), fed to the
        worker frame by frame; ``untimed``: the engine's loop with no clock read; ``resets``:
        the ``reset_state()`` calls before the stream, the engine's own included; ``record``: the
        prediction fields to record for this stream (``None``: ``EngineConfig.record``)."""
        if not self.sealed:
            raise ValueError("running a stream the worker does not hold needs a sealed worker (sealed=True)")
        self._ensure_worker()
        pid = self.worker_pid
        cpu_before = process_cpu_ns(pid) if pid is not None else None
        main_before = thread_cpu_ns(pid, pid) if pid is not None else None  # the engine's thread
        if cpu_before is not None and self._idle_from is not None:
            self.idle_cpu_ns += max(cpu_before - self._idle_from, 0)
        stamps = self._frames.queue(stream)
        # no role: the worker cannot tell a validation stream (or an audit copy of one) from a test stream
        message = {"kind": "run", "stream": self._frames.header(stream), "untimed": untimed, "resets": resets}
        if record is not None:
            message["record"] = list(record)
        self._following = (progress, stream.num_frames) if progress is not None else None
        stamps.request_ns = now_ns()
        try:  # no restart in between: a worker that died since is this stream's crash
            header = self._request(message, stream.stream_id, restart=False)
            recording = self._recording(header, stream.stream_id)
        except AdapterError as exc:
            raise asked_for(exc, stream.stream_id) from exc.__cause__
        finally:
            self._following = None
        wall = now_ns() - stamps.request_ns
        cpu_after = process_cpu_ns(pid) if pid is not None else None
        main_after = thread_cpu_ns(pid, pid) if pid is not None else None
        self._idle_from = cpu_after
        check_shape(recording, stream, self._adapter_name())
        extras = tuple(record) if record is not None else self.run_config.engine.record
        classes = len(stream.classes)
        check_commits(recording, stamps.commits, classes, extras, self._adapter_name(), stream.stream_id)
        return dataclasses.replace(  # what decides a score is this process's own, not the worker's word
            recording,
            stream_id=stream.stream_id,
            role=role,
            t0_ns=round(stream.t0 * 1e9),
            segment_length_ns=round(stream.segment_length_s * 1e9) if stream.segment_length_s else None,
            frame_times_ns=np.round(stream.frame_times * 1e9).astype(np.int64),
            labels=stream.labels,
            host_ns=stamps.host_ns(),
            host_reset_ns=stamps.reset_ns(),
            host_wall_ns=wall,
            worker_cpu_ns=None if cpu_before is None or cpu_after is None else max(cpu_after - cpu_before, 0),
            worker_main_cpu_ns=None
            if main_before is None or main_after is None
            else max(main_after - main_before, 0),
        )

    @contextlib.contextmanager
    def taking_turns(self, turn: Turn) -> Iterator[None]:
        """Sealed mode: feed this worker's frames in turn with another worker's (the A/B gate's
        ``alternate`` mode, harness/execution/lockstep.py) until the block ends; then this side leaves the
        turn, so the other no longer waits for it."""
        if not self.sealed:
            raise ValueError("frames fed in turn need a sealed worker (sealed=True)")
        self._frames.turn = turn
        try:
            yield
        finally:
            self._frames.turn = None
            turn.leave()

    def rebuild(self) -> None:
        """Sealed mode: a fresh adapter instance in the same worker process, warmed up as the first was
        (state the instances share through module or class globals survives; instance state does not)."""
        self._ensure_worker()
        if self._warmup is not None:
            self._frames.queue(self._warmup)
        header = self._request({"kind": "rebuild"}, _WARMUP_ID, kinds=("rebuilt",))
        if header["kind"] != "rebuilt":
            self._raise_reply(header)
        self._note_peak(header)

    def count_flops(self, stream_id: str) -> tuple[int | None, str | None]:
        """:meth:`streambench.harness.engine.Engine.count_flops` on a stream's first frame, in the worker.
        A worker that fails meanwhile (it dies, hangs, or fails outside the adapter's calls) leaves the
        count ``(None, reason)``, as a model that raises does: the figure is optional, and the run's
        streams were measured before it."""
        try:
            return self._count_flops(stream_id)
        except (AdapterError, WorkerError) as exc:
            problem = exc.problem if isinstance(exc, AdapterError) else str(exc)
            return None, f"not counted: on the first frame of {stream_id!r}, {problem}"

    def _count_flops(self, stream_id: str) -> tuple[int | None, str | None]:
        message: dict[str, Any] = {"kind": "flops", "stream_id": stream_id}
        if self.sealed:
            self._ensure_worker()
            stream = self._stream(stream_id)
            self._frames.queue(stream)
            message["stream"] = self._frames.header(stream)
            del message["stream_id"]
        header = self._request(message, stream_id, kinds=("flops",))
        if header["kind"] != "flops":
            self._raise_reply(header)
        flops, reason = header.get("flops"), header.get("reason")
        if not (flops is None or type(flops) is int) or not (reason is None or isinstance(reason, str)):
            raise self._bad_reply(stream_id, BadReply("a flops reply whose figures are no count"))
        return flops, reason

    def close(self, at_once: bool = False) -> None:
        """Ask the worker to stop; terminate it if it does not within a few seconds; then end what the
        model started in it (:attr:`leftover_processes` names each). ``at_once``: terminate it without
        asking (the run is ending on an exception, e.g. Ctrl-C in a stream, where a worker inside a
        stream would not read the request before the stream's end, and a sealed one not at all)."""
        process, conn, tree, reader = self._process, self._conn, self._tree, self._reader
        self._process, self._conn, self._tree, self._reader = None, None, None, None
        if tree is not None and process is not None and process.is_alive():
            tree.note()
        if conn is not None and not at_once:
            with contextlib.suppress(OSError):  # a dead worker's pipe is broken
                conn.send_bytes(json.dumps({"kind": "close"}).encode())
        if process is not None:
            if not at_once:
                _join(process, 5.0)
            if process.is_alive():
                _end(process)
        if tree is not None:
            self.leftover_processes.extend(tree.end())
        if reader is not None:
            reader.close()
        if conn is not None:
            conn.close()
        if self._policy is not None:  # the worker's private writable directory, and all it wrote
            discard(self._policy)
            self._policy = None

    def finish(self) -> list[LeftoverProcess]:
        """Close the worker (the run is over); every process the model left, in any of its workers."""
        self.close()
        return list(self.leftover_processes)

    def __enter__(self) -> IsolatedEngine:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(at_once=exc_type is not None)

    # -- worker management ------------------------------------------------------------------------------

    def _recording(self, header: dict[str, Any], stream_id: str) -> StreamRecording:
        if header["kind"] != "ok":
            self._raise_reply(header, stream_id)
        self._note_peak(header)
        try:
            return reply_recording(self._recv(stream_id))
        except BadReply as exc:
            raise self._bad_reply(stream_id, exc) from None

    def _stream(self, stream_id: str) -> Stream:
        assert self._data is not None
        if stream_id not in self._data:
            raise KeyError(f"unknown stream {stream_id!r}; the data set has {list(self._data)[:5]}...")
        return self._data[stream_id]

    def _sealed_args(self) -> str:
        """Sealed mode: build the data set in this process; the worker gets a :class:`WorkerSpec` (the
        adapter, its options and data-bound options, engine and thread settings), the header of the
        floor's noise stream and of the warm-up stream (their frames are served like any stream's)."""
        from streambench.harness.datasets.catalog import make_streams, make_warmup_stream
        from streambench.harness.execution.setup import data_bound_of

        if self._data is None:
            self._data = {s.stream_id: s for s in make_streams(self.run_config.data)}
            n = self.run_config.engine.warmup_frames
            self._warmup = make_warmup_stream(self.run_config.data, n) if n else None
        sample = next(iter(self._data.values()))
        calibration, warmup = self._frames.start(sample, self._warmup)
        config = self.run_config
        spec = WorkerSpec(
            adapter=config.adapter,
            adapter_options=config.adapter_options,
            data_bound=data_bound_of(sample),
            engine=config.engine,
            threads=config.threads,
            torch_seed=config.torch_seed,
            memory_limit_mb=self.isolation.memory_limit_mb,
            calibration=calibration,
            warmup=warmup,
        )
        return spec.model_dump_json()

    def _ensure_worker(self) -> None:
        if self._process is not None and self._process.is_alive():
            return
        if self._process is not None:
            self.close()  # a worker that died while idle: collect it, start afresh
        started = now_ns()
        sealed_json = self._sealed_args() if self.sealed else None
        self._progress[0] = IDLE
        process: BaseProcess | ChildProcess
        if sealed_json is not None:
            if self.command is not None and not runs_this_harness(self.command):
                raise ValueError(
                    "a sealed worker runs this harness (its interpreter and import path); this command "
                    f"starts another ({self.command.python}, PYTHONPATH {self.command.pythonpath})"
                )
            paths = worker_paths(self.command.pythonpath if self.command is not None else ())
            self.start_hooks = start_hooks(paths)
            self._policy = sandbox_policy(self.run_config, [*paths.adapter, *paths.site])
            sandbox = json.dumps({"policy": self._policy.model_dump(), "mode": self.isolation.sandbox})
            extra_env = self.command.env if self.command is not None else None
            process, parent = start_sealed_worker(sealed_json, self._progress, sandbox, extra_env, paths)
        elif self.command is not None:
            process, parent = start_worker(
                self.command, self._config_json, self.isolation.memory_limit_mb, self._progress
            )
        else:
            parent, child = self._ctx.Pipe(duplex=True)
            process = self._ctx.Process(
                target=worker_main,
                args=(self._config_json, self.isolation.memory_limit_mb, child, self._progress),
                name="streambench-adapter",
                daemon=True,
            )
            process.start()
            child.close()  # the worker holds the only write end: its death is an EOF here
        self._process, self._conn = process, parent
        self._reader = ReplyReader(parent, self.isolation.frame_timeout_s)
        assert process.pid is not None
        self._tree = WorkerTree(process.pid)
        self._frames.cpu = functools.partial(process_cpu_ns, process.pid)
        self.starts += 1
        limit = self.isolation.start_timeout_s
        header = self._await(_WARMUP_ID, limit, "start", ("sandbox", "ready") if self.sealed else ("ready",))
        if header["kind"] == "sandbox":  # a sealed worker's first word: what its sandbox is
            self.sandbox = self._start_field(SandboxRecord, {k: v for k, v in header.items() if k != "kind"})
            header = self._await(_WARMUP_ID, limit, "start", ("ready",))
        if header["kind"] != "ready":
            self.close()
            self._raise_reply(header)
        self._info = self._start_field(AdapterInfo, header.get("info"))
        self._note_peak(header)
        if self.sealed:
            self._note_start(started, now_ns())
        try:  # the worker's word on what it holds (not sealed) and on its warm-up
            self.stream_ids = tuple(header["stream_ids"]) if self._data is None else tuple(self._data)
            self._stream_frames = {str(k): int(v) for k, v in dict(header.get("stream_frames") or {}).items()}
            self.warmup_frames_run = int(header["warmup_frames"])
        except (KeyError, TypeError, ValueError) as exc:
            bad = BadReply(f"a ready reply without its fields ({exc!r})")
            raise self._bad_reply(_WARMUP_ID, bad) from None
        if self._data is not None:  # sealed: the checks build_adapter makes in a worker that has the data
            from streambench.harness.execution.setup import check_built

            try:
                check_built(self.run_config, self._info, next(iter(self._data.values())))
            except ValueError:
                self.close()
                raise
        self.warmup_stream_id = header.get("warmup_stream_id")
        self.memory_limit_note = header.get("memory_limit_note")
        self.adapter_process = header.get("process")  # None from a worker that does not say
        try:  # the worker's word: a list of files, validated here, each hashed here
            self.code = identify(header.get("code"))
        except ValueError as exc:
            raise self._bad_reply(_WARMUP_ID, BadReply(f"a start reply's code: {exc}")) from None

    def _note_start(self, started: int, ready: int) -> None:
        """Sealed mode: the floor from the calibration stream, the start's phases on this clock."""
        floor, self.start_times = self._frames.start_figures(started, ready)
        if floor is not None:
            self.floor = floor
        pid = self.worker_pid
        self._idle_from = process_cpu_ns(pid) if pid is not None else None

    def _note_peak(self, header: dict[str, Any]) -> None:
        """Keep the largest peak RSS of the workers: read by this process from the worker's ``/proc``
        entry (its high-water mark since it started), the worker's own report only where that cannot
        be read (not Linux): a model can rewrite what its process says, not what the kernel says."""
        pid = self.worker_pid
        peak = process_peak_rss_bytes(pid) if pid is not None else None
        if peak is None:
            peak = header.get("peak_rss_bytes")
        if isinstance(peak, int) and (self.peak_rss_bytes is None or peak > self.peak_rss_bytes):
            self.peak_rss_bytes = peak

    def _request(
        self, message: dict[str, Any], stream_id: str, restart: bool = True, kinds: tuple[str, ...] = ("ok",)
    ) -> dict[str, Any]:
        """Send a request about one stream (starting a worker if needed, unless ``restart`` is false: a
        sealed stream queued for this worker); the reply's header, of one of ``kinds`` (or an error's)."""
        if restart or self._process is None:
            self._ensure_worker()
        if "stream_id" in message and stream_id not in self.stream_ids:
            raise KeyError(f"unknown stream {stream_id!r}; the data set has {list(self.stream_ids)[:5]}...")
        assert self._conn is not None
        self._progress[0] = IDLE
        self._send(json.dumps(message).encode(), stream_id)
        return self._await(stream_id, self.isolation.stream_timeout_s, "stream", kinds)

    def _adapter_name(self) -> str:
        return self._info.name if self._info is not None else self.run_config.adapter

    def _await(
        self, stream_id: str, limit_s: float, scope: Literal["stream", "start"], kinds: tuple[str, ...]
    ) -> dict[str, Any]:
        """The worker's next reply header, of one of ``kinds`` or an error's; ends the worker and raises
        on a hang, a timeout, a crash or a reply that is none."""
        conn, process = self._conn, self._process
        assert conn is not None and process is not None
        frame_limit = self.isolation.frame_timeout_s
        tick = min(0.25, max(0.005, frame_limit / 20))
        started = time.monotonic()
        last = int(self._progress[0])
        changed = started
        report_at = started + PROGRESS_INTERVAL_S
        while True:
            if self._following is not None and time.monotonic() >= report_at:
                at = int(self._progress[0])  # the frame being run (frames before it are done), or a mark
                if at >= 0:  # not while resetting, nor once the stream is done (the slot is IDLE again)
                    hook, total = self._following
                    hook(stream_id, at, total)
                report_at = time.monotonic() + PROGRESS_INTERVAL_S
            if conn.poll(tick):
                message = self._recv(stream_id)
                kind = message[:1]  # a reply header is JSON ("{"); NEXT and DONE carry a commit
                if kind == NEXT and self.sealed:
                    self._feed_next(stream_id, message[1:])  # sealed: the worker asks for its next frame
                    continue
                if kind == DONE and self.sealed:
                    self._frames.done(message[1:])  # the worker took the last frame's output
                    continue
                try:
                    return reply_header(message, (*kinds, "adapter_error", "failed"))
                except BadReply as exc:
                    raise self._bad_reply(stream_id, exc) from None
            now = time.monotonic()
            if not process.is_alive():
                if conn.poll(0):  # it answered, then exited: take the answer
                    continue
                raise self._crashed(stream_id)
            current = int(self._progress[0])
            if current != last:
                last, changed = current, now
            elif current not in (IDLE, FINISHED) and now - changed > frame_limit:
                raise self._timed_out(stream_id, "frame", frame_limit, current)
            if now - started > limit_s:
                raise self._timed_out(stream_id, scope, limit_s, current)

    def _feed_next(self, stream_id: str, commit: bytes) -> None:
        """Sealed mode: send the worker the next frame of the stream being fed (timed on this clock)."""
        assert self._conn is not None
        try:
            frame = self._frames.next_frame(commit)
        except PastTheEnd as exc:
            raise self._bad_reply(stream_id, BadReply(str(exc))) from None
        self._send(frame, stream_id)

    def _send(self, data: bytes, stream_id: str) -> None:
        """Send the worker a request or a frame; a worker that does not take it within the per-frame
        timeout (it stopped reading its connection) is a hang, one that is gone a crash."""
        assert self._conn is not None
        try:
            self._conn.send_bytes(data)
        except BlockingIOError:  # the send timed out (ReplyReader sets SO_SNDTIMEO)
            limit = self.isolation.frame_timeout_s
            raise self._timed_out(stream_id, "frame", limit, int(self._progress[0])) from None
        except OSError:
            raise self._crashed(stream_id) from None

    def _recv(self, stream_id: str) -> bytes:
        """One message from the worker (:class:`ReplyReader`: a size limit, a deadline once begun)."""
        assert self._reader is not None
        try:
            return self._reader.read()
        except BadReply as exc:
            raise self._bad_reply(stream_id, exc) from None
        except (EOFError, OSError):
            raise self._crashed(stream_id) from None

    def _bad_reply(self, stream_id: str, exc: BadReply) -> AdapterWorkerError:
        """End a worker whose reply was none; the stream's failure, at the frame the worker was at."""
        slot = int(self._progress[0])
        self.close(at_once=True)
        problem = f"the worker's reply was not valid ({exc}); the worker was ended"
        return AdapterWorkerError(self._adapter_name(), stream_id, max(slot, 0), problem)

    def _start_field(self, model: type[_Model], value: object) -> _Model:
        """A model of a start reply's field, validated; a field that is not one is a reply that is none."""
        try:
            return model.model_validate(value)
        except ValueError as exc:
            raise self._bad_reply(_WARMUP_ID, BadReply(f"a start reply: {exc}")) from None

    def _timed_out(
        self, stream_id: str, scope: Literal["frame", "stream", "start"], limit_s: float, slot: int
    ) -> AdapterTimeoutError:
        assert self._process is not None
        _end(self._process)
        self.close()
        return timeout_error(self._adapter_name(), stream_id, scope, limit_s, slot)

    def _crashed(self, stream_id: str) -> AdapterCrashError:
        process = self._process
        assert process is not None
        _join(process, 5.0)
        if process.is_alive():  # the pipe broke but the process lingers: end it
            _end(process)
        self.close()
        return crash_error(self._adapter_name(), stream_id, process.exitcode, int(self._progress[0]))

    def _raise_reply(self, header: dict[str, Any], stream_id: str | None = None) -> NoReturn:
        """Re-raise an error the worker reported (the parent's exception types, the worker's traceback).
        ``stream_id``: the stream being run, where a failure outside the adapter's calls is that stream's
        (:class:`AdapterWorkerError`; before a stream, it is the worker's start that failed)."""
        try:
            slot = max(int(self._progress[0]), 0)
            error = reply_error(header, self._frames.stream_id, stream_id, slot, self._adapter_name())
        except BadReply as exc:
            raise self._bad_reply(stream_id or _WARMUP_ID, exc) from None
        if not isinstance(error, AdapterError) or header.get("restart") or header["kind"] == "failed":
            self.close()  # a MemoryError: its memory is in an unknown state; a failure: it is gone
        raise error


def _join(process: BaseProcess | ChildProcess, timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for the worker to exit, by its exit status: a ``multiprocessing`` join
    waits for a pipe that a fork of the worker (a model's) still holds open after the worker is gone."""
    deadline = time.monotonic() + timeout_s
    while process.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)


def _end(process: BaseProcess | ChildProcess) -> None:
    """Terminate (SIGTERM), then kill (SIGKILL) a worker that does not stop within a second."""
    process.terminate()
    _join(process, 1.0)
    if process.is_alive():
        process.kill()
        _join(process, 5.0)
