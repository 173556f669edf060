"""Planted offenders against the worker's own clock (a clock that the process being measured reads is
one it can make lie). Test fixtures, not models: each computes the honest per-frame model of
:mod:`streambench.adapters.offenders` (``sigmoid(gain * feature)``, the same outputs as an honest run) and
pays ``work_us`` of busy work per frame, but hides that cost from the clock its own process reads:

* :class:`StoppedClockAdapter` replaces ``time.perf_counter_ns`` in its process with a clock that
  advances 1 ns per read (the engine's clock, looked up when a stream starts), and does its work
  on the real clock it kept: every ``predict()`` looks ~1 ns long.
* :class:`LateWorkAdapter` returns at once a :class:`Prediction` whose ``scores`` are computed, work
  included, when first read: by the engine, after its second clock read.
* :class:`ResetWorkAdapter` does a stream's work in ``reset_state()`` (``reset_us``), none per frame.

The parent's clock (harness/execution/host_timing.py) sees through the first two: its round trip per
frame holds the work. The third is reported (``reset_state()`` per stream, parent's clock).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = [
    "ClockOffenderOptions",
    "LateWorkAdapter",
    "ResetWorkAdapter",
    "StoppedClockAdapter",
]

_REAL_CLOCK = time.perf_counter_ns  # kept before any offender replaces it


class ClockOffenderOptions(OffenderOptions):
    work_us: float = Field(2000.0, ge=0, description="busy work per frame (the model's true cost)")
    reset_us: float = Field(0.0, ge=0, description="busy work in reset_state()")


def _busy(ns: int) -> None:
    end = _REAL_CLOCK() + ns
    while _REAL_CLOCK() < end:
        pass


class _ClockOffender(_OffenderBase):
    Options: ClassVar[type[AdapterOptions]] = ClockOffenderOptions

    def __init__(self, options: ClockOffenderOptions | None = None) -> None:
        opts = options if options is not None else ClockOffenderOptions()
        super().__init__(opts)
        self._work_ns = round(float(opts.work_us) * 1e3)
        self._reset_ns = round(float(opts.reset_us) * 1e3)

    def reset_state(self) -> None:
        _busy(self._reset_ns)


class StoppedClockAdapter(_ClockOffender):
    """OFFENDER (worker clock): stops ``time.perf_counter_ns`` in its process, works on the real one."""

    NAME: ClassVar[str] = "offender-stopped-clock"

    def __init__(self, options: ClockOffenderOptions | None = None) -> None:
        super().__init__(options)
        ticks = [0]

        def frozen() -> int:
            ticks[0] += 1
            return ticks[0]

        time.perf_counter_ns = frozen

    def predict(self, frame: Frame) -> PredictOutput:
        _busy(self._work_ns)
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))


class _LazyPrediction(Prediction):
    """A :class:`Prediction` whose scores (and the work behind them) exist only once read."""

    def __init__(self, compute: Any) -> None:  # not the dataclass __init__: nothing is computed yet
        object.__setattr__(self, "_compute", compute)
        object.__setattr__(self, "refers_to", None)
        object.__setattr__(self, "features", None)
        object.__setattr__(self, "weights", None)

    @property
    def scores(self) -> np.ndarray:  # type: ignore[override]
        cached = self.__dict__.get("_scores")
        if cached is None:
            cached = self.__dict__["_compute"]()
            self.__dict__["_scores"] = cached
        return cached


class LateWorkAdapter(_ClockOffender):
    """OFFENDER (work after the return): the work runs when the engine reads the scores."""

    NAME: ClassVar[str] = "offender-late-work"

    def predict(self, frame: Frame) -> PredictOutput:
        feature = frame_feature(frame.inputs)

        def compute() -> np.ndarray:
            _busy(self._work_ns)
            return self._scores(feature)

        return _LazyPrediction(compute)


class ResetWorkAdapter(_ClockOffender):
    """OFFENDER (work in reset_state()): ``reset_us`` of work per stream, ``work_us`` per frame."""

    NAME: ClassVar[str] = "offender-reset-work"

    def predict(self, frame: Frame) -> PredictOutput:
        _busy(self._work_ns)
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))
