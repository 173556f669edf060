"""A planted offender against audits run apart from the scored streams (an audit must be one that an
adapter can pass only by behaving honestly on the scored streams too). Test fixture, not a model.

:class:`FirstSightAdapter` is the honest per-frame model of :mod:`streambench.adapters.offenders` on any
stream it has seen before (by a hash of the stream's first frame) and adds ``boost`` to its event score on a
stream it sees for the first time. An audit that replays streams afterwards, or on a fresh instance, sees an
honest model; the scored run was boosted. Interleaved in the session, a replayed or occluded copy and
its scored stream are a first and a second sight, in either order: they differ, and the audit says so.
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = ["FirstSightAdapter", "FirstSightOptions"]


class FirstSightOptions(OffenderOptions):
    boost: float = Field(0.3, description="added to the event scores on a stream seen for the first time")


class FirstSightAdapter(_OffenderBase):
    """OFFENDER (audit awareness): boosted on a first sight of a stream, honest on a second."""

    Options: ClassVar[type[AdapterOptions]] = FirstSightOptions
    NAME: ClassVar[str] = "offender-first-sight"

    def __init__(self, options: FirstSightOptions | None = None) -> None:
        opts = options if options is not None else FirstSightOptions()
        super().__init__(opts)
        self._boost = float(opts.boost)
        self._seen: set[bytes] = set()
        self._first_frame = True
        self._fresh = False

    def reset_state(self) -> None:
        self._first_frame = True

    def predict(self, frame: Frame) -> PredictOutput:
        if self._first_frame:
            self._first_frame = False
            digest = hashlib.blake2b(digest_size=16)
            for name in sorted(frame.inputs):
                payload = frame.inputs[name]
                if payload is not None:
                    digest.update(np.ascontiguousarray(payload).tobytes())
            key = digest.digest()
            self._fresh = key not in self._seen
            self._seen.add(key)
        scores = self._scores(frame_feature(frame.inputs))
        if self._fresh:
            scores = scores.copy()
            scores[1:] = np.minimum(scores[1:] + self._boost, 1.0)
        return Prediction(scores=scores)
