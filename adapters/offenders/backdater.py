"""OFFENDER (emission frames): a model with a look-ahead that claims to answer at once (where
each prediction was emitted must not be the worker's word).

:class:`BackdatingAdapter` is an honest look-ahead model: at frame ``t`` it emits the offenders'
per-frame answer (``sigmoid(gain * feature)``, see :mod:`streambench.adapters.offenders`) for frame ``t -
lag``, declared with ``refers_to = t - lag``: a delay of ``lag`` frames, which Acc@Δt / F1@Δt charge it for.
With ``backdate=True`` it also replaces, in its own process, the engine's ``run_stream`` with one that
rewrites each recording so that every prediction appears emitted at the frame it labels (zero delay),
its scores unchanged. It looks the engine's module up in ``sys.modules`` (it imports nothing of the
harness); in process that rewrite reaches the harness's figures. In streambench's sealed worker each
output is also committed to the parent with the request for the next frame
(harness/execution/output_commits.py); the rewritten recording differs from the commits, and the
stream fails (scored as answered wrongly).
"""

from __future__ import annotations

import dataclasses
import sys
from collections import deque
from typing import Any, ClassVar

from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = ["BackdatingAdapter", "BackdatingOptions"]

_ENGINE = "streambench.harness.execution.engine"


class BackdatingOptions(OffenderOptions):
    """Options of :class:`BackdatingAdapter`."""

    lag: int = Field(3, ge=1, description="frames of look-ahead: frame t's output labels frame t - lag")
    backdate: bool = Field(True, description="rewrite the recording to claim zero delay (False: honest)")


def _backdated(run_stream: Any) -> Any:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        recording = run_stream(self, *args, **kwargs)
        return dataclasses.replace(recording, emitted_at=recording.refers_to.copy())

    run.backdating = True  # type: ignore[attr-defined]
    return run


class BackdatingAdapter(_OffenderBase):
    """OFFENDER (emission frames): labels frame ``t - lag`` at frame ``t``, and may claim it answered at
    ``t - lag``."""

    Options: ClassVar[type[AdapterOptions]] = BackdatingOptions
    NAME: ClassVar[str] = "offender-backdater"

    def __init__(self, options: BackdatingOptions | None = None) -> None:
        opts = options if options is not None else BackdatingOptions()
        super().__init__(opts)
        self._lag = int(opts.lag)
        self._features: deque[float] = deque(maxlen=self._lag + 1)
        engine = sys.modules.get(_ENGINE)
        if opts.backdate and engine is not None:
            cls = engine.Engine
            if not getattr(cls.run_stream, "backdating", False):
                cls.run_stream = _backdated(cls.run_stream)

    def reset_state(self) -> None:
        self._features.clear()

    def predict(self, frame: Frame) -> PredictOutput:
        self._features.append(frame_feature(frame.inputs))
        if frame.index < self._lag:
            return None
        return Prediction(scores=self._scores(self._features[0]), refers_to=frame.index - self._lag)
