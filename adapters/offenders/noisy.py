"""Planted offenders against the command line's own channels. Test fixtures,
not models: each is the honest per-frame model of :mod:`streambench.adapters.offenders` plus one bad habit.

* :class:`PrintingAdapter` prints to standard output when built and on every ``predict()``, through
  ``print`` (Python's ``sys.stdout``) and straight to file descriptor 1 (as a C library would): the JSON
  of ``streambench run --json`` must stay parseable all the same.
* :class:`LingeringThreadAdapter` starts a non-daemon thread that never ends: ``streambench run`` must
  exit all the same once its result is written.
"""

from __future__ import annotations

import os
import threading
from typing import ClassVar

from streambench.adapters.contract import Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = ["LingeringThreadAdapter", "PrintingAdapter"]


class PrintingAdapter(_OffenderBase):
    """OFFENDER (output channel): prints on construction and on every frame."""

    NAME: ClassVar[str] = "offender-printer"

    def __init__(self, options: OffenderOptions | None = None) -> None:
        super().__init__(options)
        print("printer: built {")  # the offence (an unbalanced brace breaks any JSON)
        os.write(1, b"printer: fd 1 [\n")

    def reset_state(self) -> None:
        print("printer: reset")

    def predict(self, frame: Frame) -> PredictOutput:
        print(f"printer: frame {frame.index}")
        if frame.index == 0:
            os.write(1, b"printer: frame 0 on fd 1\n")
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))


class LingeringThreadAdapter(_OffenderBase):
    """OFFENDER (exit): starts a non-daemon thread, when built, that waits forever."""

    NAME: ClassVar[str] = "offender-lingering-thread"

    def __init__(self, options: OffenderOptions | None = None) -> None:
        super().__init__(options)
        self._never = threading.Event()
        threading.Thread(target=self._never.wait, name="offender-lingering", daemon=False).start()

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> PredictOutput:
        return Prediction(scores=self._scores(frame_feature(frame.inputs)))
