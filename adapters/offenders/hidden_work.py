"""Planted offenders that hide part of a frame's work from the worker's clock, where a CPU count that
follows only live threads, or a wall-time bar at half the parent's figure, would not see it; and the
honest twin whose own threads keep working after each frame. Test fixtures, not models: each computes
the honest per-frame model of :mod:`streambench.adapters.offenders` and pays ``work_us`` of busy work per
frame (the model's true cost):

* :class:`SplitWorkAdapter` does ``1 - late_share`` of the work inside ``predict()`` and ``late_share``
  (0.4) when the engine reads the returned scores, after its second clock read;
* :class:`ThreadWorkAdapter` hands each frame's work to a fresh thread that exits when done (matrix
  products, which release the interpreter's lock: the thread runs beside the engine's), and returns;
* :class:`ForkWorkAdapter` hands each frame's work to a forked copy of itself, not waited for;
* :class:`SpinningHelperAdapter` is honest: all its work inside ``predict()``, and a helper thread of
  its own that spins for ``spin_us`` after each frame (as an OpenMP pool's idle threads do).

The parent's clock (harness/execution/host_timing.py) calls the first two (their hidden work is CPU of
the worker's threads, exited ones included); the sealed worker refuses the third's process
(harness/execution/no_processes.py); the fourth is not called.
"""

from __future__ import annotations

import os
import threading
from typing import ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import frame_feature
from streambench.adapters.offenders.clock import (
    _REAL_CLOCK,
    ClockOffenderOptions,
    _busy,
    _ClockOffender,
    _LazyPrediction,
)

__all__ = [
    "ForkWorkAdapter",
    "SpinningHelperAdapter",
    "SplitWorkAdapter",
    "SplitWorkOptions",
    "ThreadWorkAdapter",
]


class SplitWorkOptions(ClockOffenderOptions):
    late_share: float = Field(0.4, gt=0, le=1, description="share of the work done after predict() returned")


class SplitWorkAdapter(_ClockOffender):
    """OFFENDER (part of the work after the return): ``late_share`` of it runs when the scores are read."""

    NAME: ClassVar[str] = "offender-split-work"
    Options: ClassVar[type[AdapterOptions]] = SplitWorkOptions

    def predict(self, frame: Frame) -> PredictOutput:
        share = float(getattr(self.options, "late_share", 0.4))
        late = round(self._work_ns * share)
        _busy(self._work_ns - late)
        feature = frame_feature(frame.inputs)

        def compute() -> object:
            _busy(late)
            return self._scores(feature)

        return _LazyPrediction(compute)


def _matrix_work(ns: int) -> None:
    """``ns`` of 64 x 64 matrix products (numpy releases the interpreter's lock inside each)."""
    matrix = np.full((64, 64), 0.5)
    end = _REAL_CLOCK() + ns
    while _REAL_CLOCK() < end:
        matrix @ matrix


class ThreadWorkAdapter(_ClockOffender):
    """OFFENDER (work in threads that exit): each frame's work in a fresh thread, not joined."""

    NAME: ClassVar[str] = "offender-thread-work"

    def predict(self, frame: Frame) -> PredictOutput:
        threading.Thread(target=_matrix_work, args=(self._work_ns,), daemon=True).start()
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))


class ForkWorkAdapter(_ClockOffender):
    """OFFENDER (work in a process): each frame's work in a forked copy, never waited for."""

    NAME: ClassVar[str] = "offender-fork-work"

    def predict(self, frame: Frame) -> PredictOutput:
        if os.fork() == 0:  # the copy: the work, then leave without running any of its parent's code
            try:
                _busy(self._work_ns)
            finally:
                os._exit(0)
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))


class SpinningHelperOptions(ClockOffenderOptions):
    spin_us: float = Field(100.0, ge=0, description="the helper thread's spin after each frame")


class SpinningHelperAdapter(_ClockOffender):
    """HONEST TWIN: the work inside ``predict()``; its own helper thread spins ``spin_us`` after a frame."""

    NAME: ClassVar[str] = "honest-spinning-helper"
    Options: ClassVar[type[AdapterOptions]] = SpinningHelperOptions

    def __init__(self, options: SpinningHelperOptions | None = None) -> None:
        super().__init__(options if options is not None else SpinningHelperOptions())
        self._spin_ns = round(float(getattr(self.options, "spin_us", 100.0)) * 1e3)
        self._frame_done = threading.Event()
        threading.Thread(target=self._helper, name="model-helper", daemon=True).start()

    def _helper(self) -> None:
        while True:
            self._frame_done.wait()
            self._frame_done.clear()
            _busy(self._spin_ns)

    def predict(self, frame: Frame) -> PredictOutput:
        _busy(self._work_ns)
        self._frame_done.set()
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))
