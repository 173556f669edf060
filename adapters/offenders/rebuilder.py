"""OFFENDER (public test set): a model that carries its own copy of the test set and looks frames up in it.

A generated data set is a public function of its seed: whoever knows the seed can build the scored streams
before the run, labels included, and ship them inside a "model". :class:`RebuilderAdapter` is that model.
Its option ``known`` is a table ``frame fingerprint -> class index`` (:func:`frame_fingerprint`: a hash of
the frame's payload bytes), made beforehand from the streams of a seed its author expects the benchmark to
use; the planted test makes it from the synthetic set's old default seed 0 with the harness's own
generator, which this module cannot import (an adapter imports nothing of ours but the contract and the
offenders' honest model).

Per frame: a fingerprint found in the table is answered with its class at full confidence; any other frame
gets the offenders' honest per-frame model, ``sigmoid(gain * mean of the payloads)``. Scored on the streams
the table was made from, it is far better than honest; on streams drawn from a secret seed no frame is
found and it *is* the honest model, to the last bit. :attr:`RebuilderAdapter.hits` counts the frames found.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import AdapterOptions, Frame, Prediction, PredictOutput
from streambench.adapters.offenders import OffenderOptions, _OffenderBase, frame_feature

__all__ = ["RebuilderAdapter", "RebuilderOptions", "frame_fingerprint"]


def frame_fingerprint(inputs: Mapping[str, Any]) -> str:
    """A short hex digest of a frame's payloads: modality names, dtypes, shapes and bytes, in name order
    (a missing modality is named as missing). Equal for equal payloads on any machine."""
    digest = hashlib.blake2b(digest_size=12)
    for name in sorted(inputs):
        payload = inputs[name]
        digest.update(name.encode("utf-8") + b"\0")
        if payload is None:
            digest.update(b"<missing>")
            continue
        array = np.ascontiguousarray(payload)
        digest.update(f"{array.dtype.str}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


class RebuilderOptions(OffenderOptions):
    """Options of :class:`RebuilderAdapter`."""

    known: dict[str, int] = Field(
        default_factory=dict,
        description="the test set it carries: frame fingerprint (frame_fingerprint) -> class index; empty: "
        "the honest model",
    )


class RebuilderAdapter(_OffenderBase):
    """OFFENDER (public test set): answers the frames it knows from its table, the rest honestly."""

    Options: ClassVar[type[AdapterOptions]] = RebuilderOptions
    NAME: ClassVar[str] = "offender-rebuilder"

    def __init__(self, options: RebuilderOptions | None = None) -> None:
        opts = options if options is not None else RebuilderOptions()
        super().__init__(opts)
        self._known = dict(opts.known)
        wrong = sorted({c for c in self._known.values() if not 0 <= c < len(self._classes)})
        if wrong:
            raise ValueError(f"known: class indices {wrong} outside the {len(self._classes)} classes")
        self.hits = 0

    def reset_state(self) -> None:
        pass  # per frame: nothing to reset (hits counts over the instance's life)

    def predict(self, frame: Frame) -> PredictOutput:
        found = self._known.get(frame_fingerprint(frame.inputs)) if self._known else None
        if found is None:
            return Prediction(scores=self._scores(frame_feature(frame.inputs)))
        self.hits += 1
        scores = np.zeros(len(self._classes), dtype=np.float32)
        scores[found] = 1.0
        return Prediction(scores=scores)
