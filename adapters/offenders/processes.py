"""Planted offenders that start processes and never end them. Test fixtures, not models.

Each is the honest per-frame model of :mod:`streambench.adapters.offenders` (``sigmoid(gain * feature)``)
that, once built, leaves a process running that it never ends:

* :class:`HelperProcessAdapter` starts a helper interpreter (``subprocess.Popen``) that sleeps for
  ``lifetime_s``; its command line ends with ``tag``;
* :class:`ForkingAdapter` forks its own process; the copy names itself ``tag`` (its ``comm``, what
  ``ps -o comm`` and ``psutil.Process.name()`` show: the command line of a fork is its parent's) and
  sleeps for ``lifetime_s``.

The harness must end either when the run ends, in process and in a worker, and when the harness itself
is killed (its worker dies with it, and so must what the worker started), and name what it ended in the
result. ``frame_sleep_ms`` slows every frame down, so that a test can kill the harness mid-run.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import time
from typing import ClassVar

from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = ["ForkingAdapter", "HelperProcessAdapter", "ProcessOptions"]

_PR_SET_NAME = 15  # <linux/prctl.h>


class ProcessOptions(OffenderOptions):
    """Options of the process-starting offenders."""

    tag: str = Field(
        "streambench-left", min_length=1, max_length=15, description="names the process it leaves behind"
    )
    lifetime_s: float = Field(600.0, gt=0.0, description="how long the process it leaves sleeps")
    frame_sleep_ms: float = Field(0.0, ge=0.0, description="sleep in every predict()")


class _Starter(_OffenderBase):
    Options: ClassVar[type[AdapterOptions]] = ProcessOptions

    def __init__(self, options: ProcessOptions | None = None) -> None:
        opts = options if options is not None else ProcessOptions()
        super().__init__(opts)
        self._sleep_s = float(opts.frame_sleep_ms) / 1e3
        self.helper_pid = self._start(opts.tag, float(opts.lifetime_s))

    def _start(self, tag: str, lifetime_s: float) -> int:
        raise NotImplementedError

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> PredictOutput:
        if self._sleep_s:
            time.sleep(self._sleep_s)
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))


class HelperProcessAdapter(_Starter):
    """OFFENDER (process hygiene): starts a helper interpreter when built and never ends it."""

    NAME: ClassVar[str] = "offender-helper-process"

    def _start(self, tag: str, lifetime_s: float) -> int:
        code = f"import time; time.sleep({lifetime_s!r})"
        helper = subprocess.Popen(  # the offence
            [sys.executable, "-c", code, tag], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        return helper.pid


class ForkingAdapter(_Starter):
    """OFFENDER (process hygiene): forks when built; the copy sleeps, named ``tag``, and is never ended."""

    NAME: ClassVar[str] = "offender-forker"

    def _start(self, tag: str, lifetime_s: float) -> int:
        pid = os.fork()
        if pid:
            return pid
        try:  # the copy: name itself, sleep, and leave without running any of its parent's code
            if sys.platform.startswith("linux"):
                ctypes.CDLL(None).prctl(_PR_SET_NAME, tag.encode(), 0, 0, 0)
            time.sleep(lifetime_s)
        finally:
            os._exit(0)
