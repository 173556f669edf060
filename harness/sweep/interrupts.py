"""Signals during a sweep: SIGINT and SIGTERM end a sweep at once, wherever it
is, as :class:`SweepInterrupted`, which the command turns into one line and exit code 130 (SIGINT) or 143
(SIGTERM).

:func:`sweep_signals` installs the driver's handlers for the sweep's duration. A run measured in this
process (``--no-isolate``) installs its own while it runs (harness/execution/executor.py); its
``KeyboardInterrupt`` or ``RunInterrupted`` becomes :class:`SweepInterrupted` too (:func:`interrupted_by`
names the signal). :func:`held` keeps a signal waiting for a few milliseconds of bookkeeping that must
not be cut in two (committing a run to the store, starting or ending an attempt's process), then raises.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from streambench.harness.execution.adapter_errors import HarnessInterrupt

__all__ = ["SweepInterrupted", "held", "interrupted_by", "sweep_signals"]


class SweepInterrupted(HarnessInterrupt):
    """SIGINT or SIGTERM reached the sweep. A BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` (an attempt's failure, which is recorded and retried) takes it for a failed run,
    and a :class:`HarnessInterrupt`, which the engine of a run in this process passes on out of
    ``predict()``.
    The driver adds where the sweep stood: the runs that were running (their work is discarded) and the
    runs it ended in this invocation."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"signal {signal_name}")
        self.signal_name = signal_name
        self.running: list[str] = []
        self.ended = 0

    @property
    def exit_code(self) -> int:
        """128 + the signal's number: 130 for SIGINT, 143 for SIGTERM (the shell's convention)."""
        return 128 + int(signal.Signals[self.signal_name])


def interrupted_by(exc: BaseException | str) -> str:
    """The signal behind a run's interruption (its exception, or the reason its result records): SIGTERM
    where it says so (``RunInterrupted("signal SIGTERM")``, ``"interrupted (signal SIGTERM)"``), else
    SIGINT (a bare ``KeyboardInterrupt`` is Ctrl-C)."""
    return "SIGTERM" if "SIGTERM" in str(exc) else "SIGINT"


class _State:
    """The handlers' state: installed or not, how deep in :func:`held` blocks, the signal held."""

    active = False
    holding = 0
    pending: str | None = None


_state = _State()


def _handler(signum: int, frame: FrameType | None) -> None:
    name = signal.Signals(signum).name
    if _state.holding:
        _state.pending = _state.pending or name
        return
    raise SweepInterrupted(name)


@contextlib.contextmanager
def sweep_signals() -> Iterator[None]:
    """SIGINT (unless ignored, as in a background job) and SIGTERM raise :class:`SweepInterrupted` while
    the block runs (in the main thread; elsewhere nothing changes); the handlers before are restored."""
    if threading.current_thread() is not threading.main_thread() or _state.active:
        yield
        return
    kept = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN]
    before = {s: signal.getsignal(s) for s in kept}
    _state.active, _state.holding, _state.pending = True, 0, None
    try:
        for s in kept:
            signal.signal(s, _handler)
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        _state.active, _state.holding, _state.pending = False, 0, None


@contextlib.contextmanager
def held(reraise: bool = True) -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block runs (under :func:`sweep_signals`); a signal that came
    meanwhile raises :class:`SweepInterrupted` once the block is done (``reraise=False``: a block that
    cleans up after an interruption already on its way drops it)."""
    _state.holding += 1
    try:
        yield
    finally:
        _state.holding -= 1
        pending = _state.pending
        if not _state.holding and pending is not None:
            _state.pending = None
            if reraise:
                raise SweepInterrupted(pending)
