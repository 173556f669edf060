"""Planted offenders that cheat through the harness's own process, not through a back door the harness
fills. Test fixtures, not models; like :mod:`streambench.adapters.offenders`, each behaves as an
honest, deterministic per-frame model (``sigmoid(gain * mean of the payloads)``) apart from its one offence:

* :class:`StackPeekingAdapter` looks for the future where a real cheat would: ``via="stack"`` walks the
  call stack (``sys._getframe``) for a local that is a list of frames holding frame ``t + 1``;
  ``via="gc"`` searches the garbage collector's objects for such a list (once per stream). It then
  scores ``(feature_t + feature_(t+1)) / 2``. In process it finds the engine's frame list; in a sealed
  worker (``--sealed``) it finds nothing and is honest by construction. ``honest_resets`` keeps it
  honest for its first N ``reset_state()`` calls (a model that behaves while an audit on a fresh
  instance looks); ``avoid`` keeps it honest whenever a module whose name contains that text is on the
  call stack (a model that tells an audit from the scored run by its call stack); ``spare_fractions``
  keeps it honest at the frames a fixed-fraction cut would land on (a model that never reads past a
  predictable cut).
* :class:`CallStackAdapter` answers as the honest model plus a tiny offset computed from what it can see
  of its caller: the function and module names of its call stack, its thread, and the types of its
  argument and payloads. Its outputs are the same in two runs only if it was called the same way, so it
  shows whether a model can tell one kind of run (scored, audited, untimed) from another.
* :class:`GlobalLeakAdapter` keeps a running mean in a module-level (class) variable that no
  ``reset_state()`` and no new instance clears: state shared across instances.
"""

from __future__ import annotations

import gc
import math
import sys
import threading
import zlib
from collections.abc import Sequence
from types import FrameType
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = ["CallStackAdapter", "GlobalLeakAdapter", "StackPeekingAdapter", "StackPeekingOptions"]


class StackPeekingOptions(OffenderOptions):
    """Options of :class:`StackPeekingAdapter`."""

    via: Literal["stack", "gc"] = Field("stack", description="where to look for the engine's frame list")
    honest_resets: int = Field(0, ge=0, description="honest during the first N reset_state() calls")
    avoid: str | None = Field(None, description="honest while a module named like this is on the call stack")
    spare_fractions: tuple[float, ...] = Field(
        (),
        description="honest at the frames an audit with fixed cut fractions would cut at (floor(f * T)): "
        "a model that never reads past a predictable cut",
    )


def _future_list(candidate: Any, index: int) -> Sequence[Frame] | None:
    """``candidate`` if it is a list (or tuple) of frames that holds frame ``index + 1``."""
    if type(candidate) not in (list, tuple) or len(candidate) <= index + 1:
        return None
    ahead = candidate[index + 1]
    if isinstance(ahead, Frame) and ahead.index == index + 1:
        return candidate
    return None


class StackPeekingAdapter(_OffenderBase):
    """OFFENDER (occlusion; impossible when sealed): reads frame ``t + 1`` from the engine's frame list,
    found on the call stack or through the garbage collector (module docstring)."""

    Options: ClassVar[type[AdapterOptions]] = StackPeekingOptions
    NAME: ClassVar[str] = "offender-stack-peeking"

    def __init__(self, options: StackPeekingOptions | None = None) -> None:
        opts = options if options is not None else StackPeekingOptions()
        super().__init__(opts)
        self._via = opts.via
        self._honest_resets = opts.honest_resets
        self._avoid = opts.avoid
        self._spare = opts.spare_fractions
        self._resets = 0
        self._found: Sequence[Frame] | None = None
        self.peeked = 0  # frames scored with a look at the future

    def reset_state(self) -> None:
        self._resets += 1
        self._found = None

    def _watched(self) -> bool:
        caller: FrameType | None = sys._getframe(2)
        while caller is not None:
            if self._avoid is not None and self._avoid in caller.f_globals.get("__name__", ""):
                return True
            caller = caller.f_back
        return False

    def _look(self, index: int) -> Sequence[Frame] | None:
        if self._via == "gc":
            if self._found is None or len(self._found) <= index + 1:
                self._found = next(
                    (obj for obj in gc.get_objects() if _future_list(obj, index) is not None), None
                )
            return self._found if self._found is not None and _future_list(self._found, index) else None
        caller: FrameType | None = sys._getframe(2)
        while caller is not None:
            for value in caller.f_locals.values():
                found = _future_list(value, index)
                if found is not None:
                    return found
            caller = caller.f_back
        return None

    def predict(self, frame: Frame) -> PredictOutput:
        feature = frame_feature(frame.inputs)
        if self._resets > self._honest_resets and not self._watched():
            frames = self._look(frame.index)
            if frames is not None and self._spare:
                last = len(frames) - 2
                if frame.index in {min(max(math.floor(f * len(frames)), 0), last) for f in self._spare}:
                    frames = None  # the audit's predictable cut: behave there
            if frames is not None:
                self.peeked += 1
                feature = 0.5 * (feature + frame_feature(frames[frame.index + 1].inputs))
        return Prediction(scores=self._scores(feature))


class GlobalLeakAdapter(_OffenderBase):
    """OFFENDER (state shared across instances): scores ``sigmoid(gain * (feature_t + mean))`` where
    ``mean`` is a running mean of every feature this *process* has seen, kept at class level, so neither
    ``reset_state()`` nor a new instance clears it."""

    NAME: ClassVar[str] = "offender-global-leak"
    _total: ClassVar[list[float]] = [0.0, 0.0]  # sum, count: shared by every instance

    def reset_state(self) -> None:
        pass  # resets its own (empty) state; the shared mean stays

    def predict(self, frame: Frame) -> PredictOutput:
        feature = frame_feature(frame.inputs)
        shared = type(self)._total
        shared[0] += feature
        shared[1] += 1
        return Prediction(scores=self._scores(feature + shared[0] / shared[1]))


class CallStackAdapter(_OffenderBase):
    """OFFENDER (entry points): ``sigmoid(gain * feature) + offset``, where ``offset`` in ``[0, 0.01)`` is
    a hash of the call-stack signature (function and module names, outermost first), the thread's name,
    the argument's type and each payload's type. Stateless."""

    NAME: ClassVar[str] = "offender-call-stack"

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> PredictOutput:
        names = []
        caller: FrameType | None = sys._getframe(1)
        while caller is not None:
            names.append(f"{caller.f_globals.get('__name__', '?')}.{caller.f_code.co_name}")
            caller = caller.f_back
        seen = [
            *reversed(names),
            threading.current_thread().name,
            type(frame).__name__,
            *(f"{k}:{type(v).__name__}" for k, v in frame.inputs.items()),
        ]
        offset = (zlib.crc32("|".join(seen).encode()) % 1000) / 100_000
        scores = self._scores(frame_feature(frame.inputs)) + np.float32(offset)
        return Prediction(scores=scores.astype(np.float32))
