"""Progress within a stream (issue 17, in the loop; harness/execution/engine.py): the engine reports
between chunks of frames, never inside a ``predict()``. No timing is asserted: the streams are long
enough (in frames, or paced) that a report must fall inside them."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import AdapterInfo, Frame, Prediction, PredictOutput
from streambench.harness.execution.engine import Engine, EngineConfig
from tests.support import make_stream


class Watched:
    """Knows whether it is inside ``predict()`` and how many calls have returned."""

    def __init__(self) -> None:
        self.inside = False
        self.returned = 0
        self._info = AdapterInfo(name="watched", classes=("background", "event"), modalities=("x",))
        self._scores = np.zeros(2, dtype=np.float32)

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.returned = 0

    def predict(self, frame: Frame) -> PredictOutput:
        self.inside = True
        self._scores[:] = (frame.index, 0)
        self.inside = False
        self.returned += 1
        return Prediction(scores=self._scores, refers_to=frame.index - 1 if frame.index % 7 == 3 else None)


def test_progress_moves_within_a_long_stream_and_never_inside_predict() -> None:
    adapter = Watched()
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    stream = make_stream(num_frames=6000)
    calls: list[tuple[int, int, bool, int]] = []

    def hook(done: int, total: int) -> None:
        calls.append((done, total, adapter.inside, adapter.returned))

    rec = engine.run_stream(stream, progress=hook)
    plain = Engine(Watched(), EngineConfig(warmup_frames=0)).run_stream(stream)
    # chunks of 1, 4, 16, ... frames at most: a 6000-frame stream is reported several times within
    assert len(calls) >= 3
    done = [c[0] for c in calls]
    assert done == sorted(set(done)) and done[-1] <= 6000
    assert all(total == 6000 and not inside and returned == d for d, total, inside, returned in calls)
    for name in ("emitted_at", "refers_to", "scores"):  # chunked or not, the same recording
        np.testing.assert_array_equal(getattr(rec, name), getattr(plain, name))


def test_a_failing_progress_hook_is_not_called_an_adapter_failure() -> None:
    def hook(done: int, total: int) -> None:
        raise RuntimeError("the bar broke")

    engine = Engine(Watched(), EngineConfig(warmup_frames=0))
    with pytest.raises(RuntimeError, match="the bar broke"):
        engine.run_stream(make_stream(num_frames=100), progress=hook)
    paced = Engine(Watched(), EngineConfig(warmup_frames=0, pacing="paced"))
    with pytest.raises(RuntimeError, match="the bar broke"):
        paced.run_stream(make_stream(num_frames=80, fps=100.0), progress=hook)  # lasts 0.8 s: one report


def test_a_paced_stream_reports_between_frames() -> None:
    adapter = Watched()
    engine = Engine(adapter, EngineConfig(warmup_frames=0, pacing="paced"))
    calls: list[tuple[int, bool, int]] = []
    engine.run_stream(
        make_stream(num_frames=120, fps=100.0),  # paced: 1.2 s of wall time at least
        progress=lambda done, total: calls.append((done, adapter.inside, adapter.returned)),
    )
    assert calls and all(not inside and returned == done for done, inside, returned in calls)
