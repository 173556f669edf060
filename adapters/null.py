"""Adapters of known cost: the null adapter, a CPU busy-wait and a CUDA sleep.

They measure the harness, not a model (``../shared/DESIGN.md``, "The engine": "A null adapter run
(``streambench selftest``) publishes that overhead and the clock's resolution as the floor of every
measurement"). Each returns one preallocated, read-only :class:`Prediction` with uniform scores.

- :class:`NullAdapter` does nothing: the time measured around it is the engine's loop and clock.
- :class:`BusyWaitAdapter` spins on ``time.perf_counter_ns()`` (the engine's clock) until
  ``duration_us`` has passed. It never sleeps, so no scheduler wake-up latency is added; it can
  still be pre-empted on a loaded machine, which shows in the tail, not the median.
- :class:`WorkAdapter` runs a fixed number of blocks of work (matrix products): its time grows under load.
- :class:`CudaSleepAdapter` enqueues ``torch.cuda._sleep`` for a cycle count calibrated once at
  construction with CUDA events, then synchronises, so the measured time is device time plus the
  launch and synchronisation overhead (seed 004 §6.2.3 "计时点": the timing ends with the
  synchronisation needed to read the output). It can only be built where CUDA is available.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
)

__all__ = [
    "BusyWaitAdapter",
    "BusyWaitOptions",
    "CudaSleepAdapter",
    "CudaSleepOptions",
    "CudaUnavailableError",
    "NullAdapter",
    "NullOptions",
    "WorkAdapter",
    "WorkOptions",
]


class NullOptions(AdapterOptions):
    """Options of :class:`NullAdapter`. ``classes`` is data-bound (filled from the data set)."""

    classes: tuple[str, ...] | None = Field(
        default=None, min_length=1, description="class names; None: ('background', 'event')"
    )


class NullAdapter(StreamingAdapter):
    """Returns the same constant uniform :class:`Prediction` object for every frame; keeps no state."""

    Options: ClassVar[type[NullOptions]] = NullOptions
    NAME: ClassVar[str] = "null"
    DEFAULT_CLASSES: ClassVar[tuple[str, ...]] = ("background", "event")

    def __init__(self, options: NullOptions | None = None, device: str = "cpu") -> None:
        opts = options if options is not None else self.Options()
        super().__init__(opts)
        names = opts.classes if opts.classes is not None else self.DEFAULT_CLASSES
        scores = np.full(len(names), 1.0 / len(names), dtype=np.float32)
        scores.setflags(write=False)
        self._prediction = Prediction(scores=scores)
        self._info = AdapterInfo(name=self.NAME, classes=names, modalities=("audio", "visual"), device=device)

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        return None

    def predict(self, frame: Frame) -> PredictOutput:
        return self._prediction


class BusyWaitOptions(NullOptions):
    """Options of :class:`BusyWaitAdapter`."""

    duration_us: float = Field(1000.0, gt=0, description="time each predict() spins, in microseconds")
    sleep: bool = Field(
        False,
        description="wait without spinning (time.sleep): the same service time without using the CPU, so "
        "other work on the machine stretches it only by the wake-up (a capacity benchmark's control)",
    )


class BusyWaitAdapter(NullAdapter):
    """``predict()`` spins on ``time.perf_counter_ns()`` for ``duration_us`` (or sleeps that long, ``sleep``);
    keeps no state.

    The engine reads the same clock around the call, so every latency it records is at least the
    duration.
    """

    Options = BusyWaitOptions
    NAME = "busywait"

    def __init__(self, options: BusyWaitOptions | None = None) -> None:
        super().__init__(options)
        assert isinstance(self.options, BusyWaitOptions)
        self.duration_ns = round(self.options.duration_us * 1000)
        self.sleep = self.options.sleep

    def predict(self, frame: Frame) -> PredictOutput:
        clock = time.perf_counter_ns
        end = clock() + self.duration_ns
        if self.sleep:
            while (left := end - clock()) > 0:  # time.sleep may wake early on a signal
                time.sleep(left / 1e9)
            return self._prediction
        while clock() < end:
            pass
        return self._prediction


class WorkOptions(NullOptions):
    """Options of :class:`WorkAdapter`."""

    blocks: int = Field(
        100, gt=0, description="blocks of work each predict() runs (one 64x64 matrix product)"
    )


class WorkAdapter(NullAdapter):
    """``predict()`` runs ``blocks`` identical blocks of work (a 64 x 64 float64 matrix product each):
    fixed *work*, not fixed time.

    Unlike :class:`BusyWaitAdapter` (which spins until a wall-clock deadline, so its latency hides how much
    CPU it got), its latency grows when the machine takes the core away, like a real CPU-bound model's.
    Its cost is linear in ``blocks`` (x 1.10 blocks is 1.10 x the time, measured in one process), which a
    pure-Python loop of N iterations is not (CPython's loop speed moves by several per cent with N and the
    code around it), so ``blocks`` x 1.10 is a model 10 % slower: the A/B gate's benchmark.
    """

    Options = WorkOptions
    NAME = "work"

    def __init__(self, options: WorkOptions | None = None) -> None:
        super().__init__(options)
        assert isinstance(self.options, WorkOptions)
        self.blocks = self.options.blocks
        self._matrix = np.random.default_rng(0).random((64, 64))

    def predict(self, frame: Frame) -> PredictOutput:
        matrix = self._matrix
        for _ in range(self.blocks):
            matrix @ matrix  # the work itself
        return self._prediction


class CudaUnavailableError(RuntimeError):
    """A CUDA adapter was asked for on a machine where torch sees no CUDA device."""


class CudaSleepOptions(NullOptions):
    """Options of :class:`CudaSleepAdapter`. ``classes`` is data-bound (filled from the data set)."""

    duration_us: float = Field(1000.0, gt=0, description="device time of each predict(), in microseconds")
    calibration_cycles: int = Field(
        2_000_000, gt=0, description="cycles slept per calibration measurement (about 1 ms on most GPUs)"
    )
    calibration_repeats: int = Field(7, ge=1, description="calibration measurements; the median is used")


def _calibrate_cuda_sleep(cycles: int, repeats: int) -> float:
    """Cycles per microsecond of ``torch.cuda._sleep`` on the current device (median of event timings)."""
    import torch

    torch.cuda._sleep(cycles)  # untimed: the first launch pays for module loading
    torch.cuda.synchronize()
    rates = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        elapsed_us = start.elapsed_time(end) * 1000.0  # elapsed_time is in milliseconds
        if elapsed_us > 0:
            rates.append(cycles / elapsed_us)
    if not rates:
        raise RuntimeError("CudaSleepAdapter: calibration measured no elapsed time")
    return float(statistics.median(rates))


class CudaSleepAdapter(NullAdapter):
    """``predict()`` runs ``torch.cuda._sleep`` for a calibrated cycle count and synchronises.

    Runs on the current CUDA device (``torch.cuda.current_device()`` at construction, recorded in
    ``info.device``). Calibration (once, at construction): after one untimed launch,
    ``calibration_repeats`` launches of ``calibration_cycles`` are timed with a pair of CUDA events
    each; the median gives ``cycles_per_us``. The GPU's clock may change afterwards (boost, thermal
    limits), which the selftest's measured error would show. Raises :class:`CudaUnavailableError`
    where torch sees no CUDA device.
    """

    Options = CudaSleepOptions
    NAME = "cuda-sleep"

    def __init__(self, options: CudaSleepOptions | None = None) -> None:
        import torch  # imported here: the CPU adapters of this module do not pay for torch

        if not torch.cuda.is_available():
            raise CudaUnavailableError(
                "CudaSleepAdapter needs a CUDA device, and torch sees none "
                f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}); "
                "use BusyWaitAdapter ('busywait') on a CPU-only machine"
            )
        super().__init__(options, device=f"cuda:{torch.cuda.current_device()}")
        opts = self.options
        assert isinstance(opts, CudaSleepOptions)
        self.cycles_per_us = _calibrate_cuda_sleep(opts.calibration_cycles, opts.calibration_repeats)
        self.cycles = max(1, round(opts.duration_us * self.cycles_per_us))
        self._sleep: Callable[[int], None] = torch.cuda._sleep
        self._synchronize: Callable[[], None] = torch.cuda.synchronize

    def predict(self, frame: Frame) -> PredictOutput:
        self._sleep(self.cycles)
        self._synchronize()  # the output is only "ready" once the device work has finished
        return self._prediction
