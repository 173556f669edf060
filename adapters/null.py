"""The null adapter: a model that does nothing, to measure the harness's own per-frame overhead.

Implements the null adapter of ``../shared/DESIGN.md`` ("The engine": "A null adapter run
(``streambench selftest``) publishes that overhead and the clock's resolution as the floor of every
measurement"). ``predict`` returns one preallocated, read-only :class:`Prediction` with uniform scores on
every call, so the time measured around it is the engine's loop and clock, not a model.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from pydantic import Field

from adapters.contract import AdapterInfo, AdapterOptions, Frame, Prediction, PredictOutput, StreamingAdapter

__all__ = ["NullAdapter", "NullOptions"]


class NullOptions(AdapterOptions):
    """Options of :class:`NullAdapter`. ``classes`` is data-bound (filled from the data set)."""

    classes: tuple[str, ...] | None = Field(
        default=None, min_length=1, description="class names; None: ('background', 'event')"
    )


class NullAdapter(StreamingAdapter):
    """Returns the same constant uniform :class:`Prediction` object for every frame; keeps no state."""

    Options = NullOptions
    DEFAULT_CLASSES: ClassVar[tuple[str, ...]] = ("background", "event")

    def __init__(self, options: NullOptions | None = None) -> None:
        opts = options if options is not None else NullOptions()
        super().__init__(opts)
        names = opts.classes if opts.classes is not None else self.DEFAULT_CLASSES
        scores = np.full(len(names), 1.0 / len(names), dtype=np.float32)
        scores.setflags(write=False)
        self._prediction = Prediction(scores=scores)
        self._info = AdapterInfo(name="null", classes=names, modalities=("audio", "visual"), device="cpu")

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        return None

    def predict(self, frame: Frame) -> PredictOutput:
        return self._prediction
