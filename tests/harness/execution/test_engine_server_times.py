"""The engine records a served model's own per-frame figure (``ServerTimes``, adapters/contract.py) beside
its end-to-end latency: one per ``predict()``, drained after the stream outside every timed window, -1
where a reply carried none or the pacer dropped the frame; warm-up figures belong to no stream; a count
that is not one per call is the adapter's error naming the stream."""

from __future__ import annotations

import time

import numpy as np
import pytest

from streambench.adapters.contract import AdapterInfo, Frame, Prediction, ServerTimes
from streambench.harness.execution.engine import AdapterOutputError, Engine, EngineConfig
from tests.support import ScriptedAdapter, constant, make_stream


class Served:
    """Reports ``1000 * (index + 1)`` ns as the server's figure of each frame, none on every third, and
    sleeps ``pause_s`` on frame ``slow_at`` (a paced run then drops the frames that arrive meanwhile)."""

    def __init__(self, slow_at: int = -1, pause_s: float = 0.0, extra: bool = False) -> None:
        self.info = AdapterInfo(name="served", classes=("background", "event"), modalities=("x",))
        self.server_times = ServerTimes()
        self.slow_at, self.pause_s, self.extra = slow_at, pause_s, extra

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> Prediction:
        if frame.index == self.slow_at:
            time.sleep(self.pause_s)
        self.server_times.add(None if frame.index % 3 == 2 else 1000 * (frame.index + 1))
        if self.extra and frame.index == 4:
            self.server_times.add(1)
        return Prediction(scores=np.array([0.9, 0.1], dtype=np.float32))


def _expected(indices: np.ndarray) -> np.ndarray:
    return np.where(indices % 3 == 2, -1, 1000 * (indices + 1))


def test_one_figure_per_frame_and_none_from_the_warm_up() -> None:
    engine = Engine(Served(), EngineConfig(warmup_frames=5))
    engine.warm_up(make_stream("warm", num_frames=8))
    record = engine.run_stream(make_stream("s", num_frames=10))
    assert record.server_ns is not None
    np.testing.assert_array_equal(record.server_ns, _expected(np.arange(10)))


def test_a_paced_run_keeps_each_figure_with_its_frame_and_none_for_a_dropped_one() -> None:
    adapter = Served(slow_at=2, pause_s=0.035)
    engine = Engine(adapter, EngineConfig(warmup_frames=0, pacing="paced", paced_policy="drop"))
    record = engine.run_stream(make_stream("s", num_frames=10, fps=100.0))
    assert record.paced_start_ns is not None and record.server_ns is not None
    fed = record.paced_start_ns >= 0
    assert not fed.all()  # frames 3 and 4 arrived while frame 2 was served: dropped
    np.testing.assert_array_equal(record.server_ns[fed], _expected(np.flatnonzero(fed)))
    assert (record.server_ns[~fed] == -1).all()


def test_a_count_that_is_not_one_per_call_is_the_adapters_error_naming_the_stream() -> None:
    engine = Engine(Served(extra=True), EngineConfig(warmup_frames=0))
    with pytest.raises(AdapterOutputError, match="server_times holds 11 figures for 10 predict"):
        engine.run_stream(make_stream("s7", num_frames=10))
    record = engine.run_stream(make_stream("s8", num_frames=3))  # the next stream starts clean
    assert record.server_ns is not None and record.server_ns.size == 3


def test_an_untimed_audit_records_none_and_an_adapter_without_it_none() -> None:
    engine = Engine(Served(), EngineConfig(warmup_frames=0))
    assert engine.run_untimed(make_stream("s", num_frames=4)).server_ns is None
    plain = ScriptedAdapter(constant([0.9, 0.1]))
    assert Engine(plain, EngineConfig(warmup_frames=0)).run_stream(make_stream("s")).server_ns is None
