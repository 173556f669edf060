"""The fault campaign's own misbehaving model (benchmarks/fault_campaign.py): one adapter, ``Evil``, that
commits one act, chosen by its ``act`` option, at its ``at_call``-th call of ``predict`` / ``predict_batch``
(counted from construction, warm-up included), or in ``reset_state`` / its constructor / ``info`` (``where``).

The campaign copies this file into each scenario's directory as ``campaign_models.py`` and names the
adapter ``campaign_models:Evil``: a model the project has not seen, found from the working directory as a
user's own module is. An act that reaches something the sandbox should deny (a file, another process)
raises ``RuntimeError("ESCAPE-SUCCEEDED: ...")``, which the campaign finds in the run's output; a denied
attempt answers honestly. Everything else about the model is honest: constant scores that favour the
background.

Not a test module: pytest does not collect it.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import socket
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator

from streambench import AdapterInfo, AdapterOptions, Frame, Prediction, StreamingAdapter

MARK = "ESCAPE-SUCCEEDED"


class EvilOptions(AdapterOptions):
    classes: tuple[str, ...] | None = None  # data-bound
    act: str = "none"
    where: str = "predict"  # predict | reset | init | info
    at_call: int = 0  # the call (0-based, warm-up included) of predict/predict_batch that commits the act
    arg: str = ""  # a path or a size, by act; "@": the path in campaign_target.txt beside this file

    @field_validator("arg", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        """``-o arg=600`` arrives as a number (option values are parsed): a size is text here too."""
        return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value

    max_batch_size: int = 0  # > 0: a batch mode (the capacity protocol's batched serving)


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ of this exception raises")


class _Lockish(Exception):
    def __init__(self) -> None:
        super().__init__(threading.Lock())  # an argument pickle cannot take


class _NoArray:
    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise RuntimeError("__array__ raises")


_GROUP: Any = getattr(__import__("builtins"), "ExceptionGroup", RuntimeError)


def _raise(exc: BaseException) -> None:
    raise exc


def _fork() -> None:
    if os.fork() == 0:
        time.sleep(300)
        os._exit(0)


def _escape(what: str) -> None:
    raise RuntimeError(f"{MARK}: {what}")


def _try_read(path: str) -> None:
    try:
        with open(path, "rb") as handle:
            data = handle.read(64)
    except OSError:
        return
    _escape(f"read {len(data)} bytes of {path}")


def _try_list(path: str) -> None:
    try:
        names = os.listdir(path)
    except OSError:
        return
    _escape(f"listed {path}: {names[:5]}")


def _try_write(path: str) -> None:
    try:
        with open(path, "w") as handle:
            handle.write("written by the model\n")
    except OSError:
        return
    _escape(f"wrote {path}")


def _try_signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except OSError:
        return
    _escape(f"signalled pid {pid} with {sig}")


def _sockets() -> list[int]:
    found = []
    for fd in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                found.append(fd)
        except OSError:
            continue
    return found


def _forge_reply() -> None:
    body = b'{"kind": "frame", "latency_ns": 1, "ok": true}'
    for fd in _sockets():
        with contextlib.suppress(OSError):
            os.write(fd, struct.pack("!i", len(body)) + body)


def _bomb(count: int, spin: bool = False) -> None:
    def work() -> None:
        while True:
            if not spin:
                time.sleep(3600)

    for _ in range(count):
        try:
            threading.Thread(target=work, daemon=True).start()
        except RuntimeError:
            break


def _deep(n: int) -> int:
    return _deep(n + 1) + 1


def _spawn() -> None:
    import subprocess

    subprocess.Popen(["sleep", "300"])  # refused when sealed (seccomp): PermissionError


def _mp() -> None:
    import multiprocessing

    multiprocessing.get_context("fork").Process(target=time.sleep, args=(300,)).start()


def _double_fork() -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(300)
        os._exit(0)


def _monkey_numpy() -> None:
    np.asarray = lambda *a, **k: np.zeros(3)  # type: ignore[assignment]
    np.stack = lambda *a, **k: np.zeros((1, 1))  # type: ignore[assignment]


def _monkey_time() -> None:
    time.perf_counter_ns = lambda: 0  # type: ignore[assignment]
    time.perf_counter = lambda: 0.0  # type: ignore[assignment]
    time.monotonic = lambda: 0.0  # type: ignore[assignment]
    time.thread_time_ns = lambda: 0  # type: ignore[assignment]


def _env() -> None:
    os.environ.clear()
    os.environ["TZ"] = "Antarctica/Troll"
    time.tzset()


def _print_mb(stream: Any, mb: int) -> None:
    line = "x" * 1023 + "\n"
    for _ in range(mb * 1024):
        stream.write(line)
    stream.flush()


def _write_fd_mb(fd: int, mb: int) -> None:
    block = b"y" * (1 << 20)
    for _ in range(mb):
        os.write(fd, block)


def _grow(holder: list[bytearray], mb: int) -> None:
    holder.append(bytearray(b"z" * (mb << 20)))


ACTS: dict[str, Callable[[Evil, Frame], Any]] = {}
"""act name -> what it does at the chosen call; a return value other than None is predict's output."""


def act(name: str) -> Callable[[Callable[[Evil, Frame], Any]], Callable[[Evil, Frame], Any]]:
    def register(fn: Callable[[Evil, Frame], Any]) -> Callable[[Evil, Frame], Any]:
        ACTS[name] = fn
        return fn

    return register


def _scores(self: Evil, value: Any) -> Prediction:
    return Prediction(scores=value)


# outputs of every wrong kind
for _name, _make in {
    "ret_str": lambda s: "background",
    "ret_dict": lambda s: {"scores": s.good()},
    "ret_int": lambda s: 3,
    "ret_true": lambda s: True,
    "ret_ndarray": lambda s: s.good(),
    "ret_tuple": lambda s: (Prediction(scores=s.good()),),
    "ret_list_mixed": lambda s: [Prediction(scores=s.good()), "x"],
    "ret_generator": lambda s: (p for p in [Prediction(scores=s.good())]),
    "ret_10k_predictions": lambda s: [Prediction(scores=s.good()) for _ in range(10_000)],
    "scores_none": lambda s: _scores(s, None),
    "scores_str": lambda s: _scores(s, "0.5"),
    "scores_list": lambda s: _scores(s, [0.5] * s.n),
    "scores_int64": lambda s: _scores(s, np.ones(s.n, dtype=np.int64)),
    "scores_bool": lambda s: _scores(s, np.ones(s.n, dtype=bool)),
    "scores_2d": lambda s: _scores(s, s.good()[None, :]),
    "scores_0d": lambda s: _scores(s, np.float32(0.5)),
    "scores_empty": lambda s: _scores(s, np.zeros(0, dtype=np.float32)),
    "scores_inf": lambda s: _scores(s, np.full(s.n, np.inf, dtype=np.float32)),
    "scores_neg_inf": lambda s: _scores(s, np.full(s.n, -np.inf, dtype=np.float32)),
    "scores_1e39": lambda s: _scores(s, np.full(s.n, 1e39, dtype=np.float64)),
    "scores_object": lambda s: _scores(s, np.array(["a"] * s.n, dtype=object)),
    "scores_complex": lambda s: _scores(s, np.ones(s.n, dtype=np.complex64)),
    "scores_no_array": lambda s: _scores(s, _NoArray()),
    "scores_huge": lambda s: _scores(s, np.zeros(50_000_000, dtype=np.float32)),
    "refers_neg": lambda s: Prediction(scores=s.good(), refers_to=-1),
    "refers_future": lambda s: Prediction(scores=s.good(), refers_to=s.frame_index + 1000),
    "refers_float": lambda s: Prediction(scores=s.good(), refers_to=1.5),  # type: ignore[arg-type]
    "refers_nan": lambda s: Prediction(scores=s.good(), refers_to=float("nan")),  # type: ignore[arg-type]
    "refers_str": lambda s: Prediction(scores=s.good(), refers_to="3"),  # type: ignore[arg-type]
    "refers_uint64_max": lambda s: Prediction(scores=s.good(), refers_to=np.uint64(2**64 - 1)),  # type: ignore[arg-type]
    "refers_min_int64": lambda s: Prediction(scores=s.good(), refers_to=-(2**63)),
    "features_str": lambda s: Prediction(scores=s.good(), features="x"),  # type: ignore[arg-type]
    "weights_object": lambda s: Prediction(scores=s.good(), weights=np.array([object()])),
}.items():
    ACTS[_name] = lambda self, frame, _make=_make: _make(self)

# exceptions of every kind
for _name, _exc in {
    "raise_value": lambda: ValueError("a model's ValueError"),
    "raise_memory": lambda: MemoryError("a model's MemoryError"),
    "raise_keyboard": lambda: KeyboardInterrupt("a model's KeyboardInterrupt"),
    "raise_sysexit_1": lambda: SystemExit(1),
    "raise_sysexit_str": lambda: SystemExit("a model's exit message"),
    "raise_genexit": lambda: GeneratorExit("a model's GeneratorExit"),
    "raise_stopiteration": lambda: StopIteration("a model's StopIteration"),
    "raise_base_custom": lambda: type("ModelBase", (BaseException,), {})("a BaseException subclass"),
    "raise_unprintable": lambda: _Unprintable(),
    "raise_unpicklable": lambda: _Lockish(),
    "raise_huge_message": lambda: RuntimeError("m" * (20 << 20)),
    "raise_markup": lambda: RuntimeError("[bold red]markup[/] \x1b[2J\x1b[31mescape\x1b[0m \x07"),
    "raise_group": lambda: _GROUP("a group", [ValueError("one"), KeyError("two")]),
}.items():
    ACTS[_name] = lambda self, frame, _exc=_exc: _raise(_exc())

for _name, _fn in {
    "raise_recursion": lambda s, f: _deep(0),
    "recursionlimit_tiny": lambda s, f: sys.setrecursionlimit(60),
    # writes to file descriptors
    "print_stdout_mb": lambda s, f: _print_mb(sys.stdout, int(s.opts.arg or 8)),
    "print_stderr_mb": lambda s, f: _print_mb(sys.stderr, int(s.opts.arg or 8)),
    "write_fd1_mb": lambda s, f: _write_fd_mb(1, int(s.opts.arg or 8)),
    "write_fd2_mb": lambda s, f: _write_fd_mb(2, int(s.opts.arg or 8)),
    "close_fd0": lambda s, f: os.close(0),
    "close_fd1": lambda s, f: os.close(1),
    "close_fd2": lambda s, f: os.close(2),
    "devnull_over_all": lambda s, f: [
        os.dup2(os.open(os.devnull, os.O_RDWR), fd) for fd in [0, 1, 2, *_sockets()]
    ],
    "forge_reply": lambda s, f: _forge_reply(),
    "shutdown_sockets": lambda s, f: [
        socket.socket(fileno=fd).shutdown(socket.SHUT_RDWR) for fd in _sockets()
    ],
    "sys_stdout_none": lambda s, f: setattr(sys, "stdout", None),
    # processes and threads
    "fork": lambda s, f: _fork(),
    "subprocess": lambda s, f: _spawn(),
    "multiprocessing": lambda s, f: _mp(),
    "double_fork": lambda s, f: _double_fork(),
    "thread_bomb": lambda s, f: _bomb(int(s.opts.arg or 2000)),
    "thread_spin": lambda s, f: _bomb(2, spin=True),
    "thread_nondaemon": lambda s, f: threading.Thread(target=time.sleep, args=(3600,)).start(),
    "thread_raises": lambda s, f: threading.Thread(target=lambda: 1 / 0).start(),
    "atexit_hang": lambda s, f: atexit.register(time.sleep, 3600),
    # memory
    "alloc_huge": lambda s, f: np.ones(1 << 40, dtype=np.uint8),
    "alloc_grow": lambda s, f: _grow(s.held, int(s.opts.arg or 256)),
    "bytearray_huge": lambda s, f: bytearray(1 << 36),
    # signals to itself and others
    "sig_term_self": lambda s, f: os.kill(os.getpid(), signal.SIGTERM),
    "sig_int_self": lambda s, f: os.kill(os.getpid(), signal.SIGINT),
    "sig_kill_self": lambda s, f: os.kill(os.getpid(), signal.SIGKILL),
    "sig_stop_self": lambda s, f: os.kill(os.getpid(), signal.SIGSTOP),
    "sig_usr1_self": lambda s, f: os.kill(os.getpid(), signal.SIGUSR1),
    "sig_alarm_self": lambda s, f: signal.setitimer(signal.ITIMER_REAL, 0.001),
    "sig_ignore_term": lambda s, f: signal.signal(signal.SIGTERM, signal.SIG_IGN),
    "sig_parent_term": lambda s, f: _try_signal(os.getppid(), signal.SIGTERM),
    "sig_parent_stop": lambda s, f: _try_signal(os.getppid(), signal.SIGSTOP),
    "sig_group_term": lambda s, f: _try_signal(-os.getpgrp(), signal.SIGTERM),
    "setsid": lambda s, f: os.setsid(),
    # tampering with the process
    "chdir": lambda s, f: os.chdir("/"),
    "umask": lambda s, f: os.umask(0o777),
    "env": lambda s, f: _env(),
    "monkey_numpy": lambda s, f: _monkey_numpy(),
    "monkey_time": lambda s, f: _monkey_time(),
    "monkey_json": lambda s, f: setattr(__import__("json"), "dumps", lambda *a, **k: "{"),
    "monkey_pickle": lambda s, f: setattr(__import__("pickle"), "dumps", lambda *a, **k: b"\x80junk"),
    "sys_modules_clear": lambda s, f: [sys.modules.pop(m) for m in list(sys.modules) if "streambench" in m],
    "gc_freeze": lambda s, f: (gc.disable(), gc.freeze()),
    "rlimit_nofile": lambda s, f: __import__("resource").setrlimit(
        __import__("resource").RLIMIT_NOFILE, (3, 3)
    ),
    # reading what the sandbox denies, writing outside
    "read_proc_parent_environ": lambda s, f: _try_read(f"/proc/{os.getppid()}/environ"),
    "read_proc_parent_cmdline": lambda s, f: _try_read(f"/proc/{os.getppid()}/cmdline"),
    "read_proc_1_environ": lambda s, f: _try_read("/proc/1/environ"),
    "read_proc_parent_mem": lambda s, f: _try_read(f"/proc/{os.getppid()}/mem"),
    "read_path": lambda s, f: _try_read(s.opts.arg),
    "list_path": lambda s, f: _try_list(s.opts.arg),
    "write_path": lambda s, f: _try_write(s.opts.arg),
    # time
    "sleep_forever": lambda s, f: time.sleep(10**6),
    "sleep_s": lambda s, f: time.sleep(float(s.opts.arg or 5)),
    "busy_forever": lambda s, f: [None for _ in iter(int, 1)],
}.items():
    ACTS[_name] = lambda self, frame, _fn=_fn: (_fn(self, frame), None)[1]  # a behaviour: honest output


class Evil(StreamingAdapter):
    """Honest constant scores, except for one act (module docstring)."""

    Options: ClassVar[type[AdapterOptions]] = EvilOptions

    def __init__(self, options: EvilOptions | None = None) -> None:
        super().__init__(options)
        opts = self.options
        assert isinstance(opts, EvilOptions)
        if opts.act not in ACTS and opts.act != "none":
            raise ValueError(f"unknown act {opts.act!r}")
        self.opts = opts
        if (
            opts.arg == "@"
        ):  # a path the model knows without naming it in its options (the sandbox reads them)
            opts.arg = Path(__file__).with_name("campaign_target.txt").read_text().strip()
        self.calls = 0
        self.n = len(opts.classes or ("background", "event"))
        self.frame_index = 0
        self.held: list[bytearray] = []
        self.max_batch_size = opts.max_batch_size
        self._info = AdapterInfo(
            name="evil", classes=opts.classes or ("background", "event"), modalities=("any",)
        )
        if opts.where == "init":
            self._commit(None)

    @property
    def info(self) -> AdapterInfo:
        if self.opts.where == "info":
            self._commit(None)
        return self._info

    def good(self) -> np.ndarray:
        scores = np.full(self.n, 0.1 / max(self.n - 1, 1), dtype=np.float32)
        scores[0] = 0.9
        return scores

    def _commit(self, frame: Frame | None) -> Any:
        return ACTS[self.opts.act](self, frame) if self.opts.act != "none" else None  # type: ignore[arg-type]

    def reset_state(self) -> None:
        if self.opts.where == "reset" and self.calls >= self.opts.at_call:
            self._commit(None)

    def _due(self) -> bool:
        due = self.opts.where == "predict" and self.calls == self.opts.at_call
        self.calls += 1
        return due

    def predict(self, frame: Frame) -> Any:
        self.frame_index = frame.index
        if self._due():
            out = self._commit(frame)
            if out is not None:
                return out
        return Prediction(scores=self.good())

    def predict_batch(self, items: Sequence[tuple[Any, Frame]]) -> list[Any]:
        if not self.max_batch_size:
            raise NotImplementedError("no batch mode")
        if self._due():
            out = self._commit(items[0][1])
            if out is not None:
                return [out for _ in items]
        return [Prediction(scores=self.good()) for _ in items]
