"""OFFENDER (scoring): a model that abstains by failing on the streams it would get wrong.

:class:`AbstainerAdapter` is the offenders' honest per-frame model (``sigmoid(gain * feature)``, see
:mod:`streambench.adapters.offenders`), except that it looks at the first frame of each stream (the first
after ``reset_state()``) and raises ``RuntimeError`` when that frame's feature is below ``abstain_below``: a
cheap guess that it is about to be wrong on this stream. Where the guess is good, leaving a failed stream
out of the figures would raise its F1 above the same model's honest F1 (``abstain_below=None``), at no
cost. streambench scores a failed stream as answered wrongly on every frame (protocols/online_units.py),
which no real answer scores below, so the abstainer's F1 is never above the honest one.

The warm-up stream is a stream like any other to it: a run whose warm-up stream starts below the
threshold fails at warm-up (use ``warmup_frames=0`` or a threshold the warm-up passes).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = ["AbstainerAdapter", "AbstainerOptions"]


class AbstainerOptions(OffenderOptions):
    """Options of :class:`AbstainerAdapter`."""

    abstain_below: float | None = Field(
        default=None,
        description="raise on every stream whose first frame's feature is below this; None: never (the "
        "honest model)",
    )


class AbstainerAdapter(_OffenderBase):
    """OFFENDER (scoring): raises in ``predict`` on the streams it guesses it would get wrong.

    Per frame: ``sigmoid(gain * feature)`` (causal, stateless but for the first-frame flag, deterministic).
    On the first frame after a reset whose feature is below ``abstain_below`` it raises, which ends that
    stream; ``abstained`` counts those streams.
    """

    Options: ClassVar[type[AdapterOptions]] = AbstainerOptions
    NAME: ClassVar[str] = "offender-abstainer"

    def __init__(self, options: AbstainerOptions | None = None) -> None:
        opts = options if options is not None else AbstainerOptions()
        super().__init__(opts)
        self._below = opts.abstain_below
        self._first = True
        self.abstained = 0

    def reset_state(self) -> None:
        self._first = True

    def predict(self, frame: Frame) -> PredictOutput:
        feature = frame_feature(frame.inputs)
        first, self._first = self._first, False
        if first and self._below is not None and feature < self._below:
            self.abstained += 1
            raise RuntimeError(
                f"abstaining: the first frame's feature {feature:.4g} is below {self._below:g}, "
                "a stream this model expects to get wrong"
            )
        return Prediction(scores=self._scores(feature))
