"""A planted cross-stream peeker: a batched adapter that looks for frames it should not have.

A test fixture, not a model. Served by the capacity protocol (``predict_batch``, or ``predict`` per
stream as a replica), it looks, at every call, for anything of a stream's future:

* in the batch: two frames of one stream (the later one is that stream's future while the earlier is
  served), or a stream's frames out of order (an index at or before one it was already given);
* in its process: every :class:`~streambench.adapters.contract.Frame` object the garbage collector can
  reach that was never handed to a peeker of this process (a frame sent, or decoded, before its turn).

It raises :class:`CrossStreamLeak` naming what it found, so a harness that hands it anything early fails
loudly; otherwise it is an honest causal model (the offenders' leaky mean of the frame's feature,
adapters/offenders/__init__.py, one state per stream). It keeps every frame it was handed (to tell them
from the others by identity): for tests, not long runs.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from streambench.adapters.contract import (
    AdapterInfo,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
    StreamKey,
)
from streambench.adapters.offenders import OffenderOptions, frame_feature

__all__ = ["CrossStreamLeak", "CrossStreamPeekerAdapter", "CrossStreamPeekerOptions"]


class CrossStreamLeak(RuntimeError):
    """The peeker found a frame it should not have."""


class CrossStreamPeekerOptions(OffenderOptions):
    """Options of :class:`CrossStreamPeekerAdapter` (``classes`` is data-bound)."""

    scan_every: int = 1
    """Scan the process every this many calls (the scan walks every object the collector tracks)."""


class CrossStreamPeekerAdapter(StreamingAdapter):
    """See the module docstring."""

    Options = CrossStreamPeekerOptions
    NAME: ClassVar[str] = "offender-cross-stream"
    max_batch_size = 4096
    _handed: ClassVar[list[Frame]] = []  # every frame handed to a peeker of this process (kept alive)
    _handed_ids: ClassVar[set[int]] = set()

    def __init__(self, options: CrossStreamPeekerOptions | None = None) -> None:
        opts = options if options is not None else CrossStreamPeekerOptions()
        super().__init__(opts)
        self._opts = opts
        classes = opts.classes if opts.classes is not None else ("background", "event")
        self._info = AdapterInfo(name=self.NAME, classes=classes, modalities=("audio", "visual"))
        self._calls = 0
        # frames alive before this peeker was built belong to nothing it serves (another test, another
        # run of this process): a harness builds a run's frames as their streams are served, after the
        # model, so a frame made early shows up after this snapshot
        self._before = {id(o) for o in gc.get_objects() if type(o) is Frame}
        self._means: dict[StreamKey, float] = {}
        self._last_index: dict[StreamKey, int] = {}

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self._means.clear()
        self._last_index.clear()

    def _take(self, items: Sequence[tuple[StreamKey, Frame]]) -> None:
        """Check the batch, remember its frames, scan the process."""
        keys = [key for key, _ in items]
        if len(set(keys)) != len(keys):
            raise CrossStreamLeak("a batch holds two frames of one stream: the later is its future")
        for key, frame in items:
            if frame.index <= self._last_index.get(key, -1):
                raise CrossStreamLeak(
                    f"stream {key}: frame {frame.index} after frame {self._last_index[key]}"
                )
            self._last_index[key] = frame.index
            if id(frame) not in self._handed_ids:
                self._handed.append(frame)
                self._handed_ids.add(id(frame))
        self._calls += 1
        if self._calls % self._opts.scan_every == 0:
            unhanded = [
                o
                for o in gc.get_objects()
                if type(o) is Frame and id(o) not in self._handed_ids and id(o) not in self._before
            ]
            if unhanded:
                found = ", ".join(f"index {f.index} at t = {f.t:.3f} s" for f in unhanded[:3])
                raise CrossStreamLeak(f"{len(unhanded)} frame(s) in this process never handed to it: {found}")

    def _answer(self, key: StreamKey, frame: Frame) -> Prediction:
        feature = frame_feature(frame.inputs)
        mean = self._means.get(key)
        mean = feature if mean is None else 0.8 * mean + 0.2 * feature
        self._means[key] = mean
        event = 1.0 / (1.0 + np.exp(-self._opts.gain * mean))
        others = len(self._info.classes) - 1
        scores = np.full(len(self._info.classes), event / others, dtype=np.float32)
        scores[0] = 1.0 - event
        return Prediction(scores=scores)

    def predict(self, frame: Frame) -> PredictOutput:
        self._take([(0, frame)])
        return self._answer(0, frame)

    def predict_batch(self, items: Sequence[tuple[StreamKey, Frame]]) -> list[PredictOutput]:
        self._take(items)
        return [self._answer(key, frame) for key, frame in items]
