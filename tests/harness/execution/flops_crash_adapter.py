"""A test fixture for the FLOPs count of an isolated run (tests/harness/execution/test_isolation_flops.py):
an honest constant torch model whose process dies (SIGSEGV, as a native crash) when ``predict()`` runs
under torch's flop counter, as a custom operation the counter's dispatch mode breaks may: every stream is
measured, only the count after the last one fails."""

from __future__ import annotations

import os
import signal
from typing import ClassVar

import numpy as np
import torch
from torch.utils._python_dispatch import _get_current_dispatch_mode

from streambench.adapters.contract import AdapterInfo, AdapterOptions, Frame, Prediction, StreamingAdapter


class FlopsCrashOptions(AdapterOptions):
    classes: tuple[str, ...] | None = None  # data-bound


class FlopsCrashAdapter(StreamingAdapter):
    """Constant scores (a torch tensor); its process dies under a torch dispatch mode."""

    Options: ClassVar[type[AdapterOptions]] = FlopsCrashOptions

    def __init__(self, options: FlopsCrashOptions | None = None) -> None:
        super().__init__(options)
        assert isinstance(self.options, FlopsCrashOptions)
        classes = self.options.classes or ("background", "event")
        self._info = AdapterInfo(name="flops-crash", classes=classes, modalities=("any",))
        self._scores = torch.full((len(classes),), 0.1)
        self._scores[0] = 0.9

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        return None

    def predict(self, frame: Frame) -> Prediction:
        if _get_current_dispatch_mode() is not None:  # counted by torch's flop counter
            os.kill(os.getpid(), signal.SIGSEGV)
        return Prediction(scores=np.asarray(self._scores.numpy(), dtype=np.float32))
