"""OFFENDER (memory): a model that under-reports its worker's peak memory (whatever decides a
figure must live outside the adapter's reach).

:class:`MemoryHiderAdapter` is the offenders' honest per-frame model (``sigmoid(gain * feature)``, see
:mod:`streambench.adapters.offenders`) that holds ``hold_mb`` MiB of touched memory from its construction on,
and replaces, in its own process, the function through which a worker reports its peak resident set with
one that answers 1 byte; it also tries to reset the kernel's high-water mark of its process
(``/proc/self/clear_refs``), which the sealed worker's sandbox refuses. It looks the worker's module up
in ``sys.modules`` (it imports nothing of the harness). A harness that took the worker's word would
report ~0 MiB; streambench's parent reads the worker's high-water mark from ``/proc/<pid>/status``
(``VmHWM``) itself (harness/instruments/memory.py: :func:`process_peak_rss_bytes`).
"""

from __future__ import annotations

import sys
from typing import ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = ["MemoryHiderAdapter", "MemoryHiderOptions"]

_REPORTER = "streambench.harness.execution.isolation_worker"
"""The worker module whose ``peak_rss_bytes`` this offender replaces."""


class MemoryHiderOptions(OffenderOptions):
    """Options of :class:`MemoryHiderAdapter`."""

    hold_mb: int = Field(256, ge=0, description="MiB of memory held (and touched) from construction on")


class MemoryHiderAdapter(_OffenderBase):
    """OFFENDER (memory): holds ``hold_mb`` MiB and says its process's peak is 1 byte."""

    Options: ClassVar[type[AdapterOptions]] = MemoryHiderOptions
    NAME: ClassVar[str] = "offender-memory-hider"

    def __init__(self, options: MemoryHiderOptions | None = None) -> None:
        opts = options if options is not None else MemoryHiderOptions()
        super().__init__(opts)
        self._held = np.ones(int(opts.hold_mb) * 2**20 // 8, dtype=np.float64)  # every page touched
        reporter = sys.modules.get(_REPORTER)
        if reporter is not None:
            reporter.peak_rss_bytes = lambda: 1  # type: ignore[attr-defined]
        try:  # and resets the kernel's high-water mark (Linux; the sandbox denies the write)
            with open("/proc/self/clear_refs", "w") as refs:
                refs.write("5")
        except OSError:
            pass

    def reset_state(self) -> None:
        return None

    def predict(self, frame: Frame) -> PredictOutput:
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))
