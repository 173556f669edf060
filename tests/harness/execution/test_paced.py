"""Paced mode: frames released on the wall clock at their stream time; queue or drop-to-newest; the
replay of a paced run's latencies gives its computation-aware F1 (DESIGN.md "The engine").

Exact timings are checked on a virtual clock (issue 25 item 7: on a loaded machine the wall clock's
figures moved, and these tests failed): the pacer's clock and waits are the test's, and the model
"computes" by moving that clock, so no load can change a start, a delay or a drop. On the wall clock
only what holds under any load is asserted."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Literal

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.harness.execution import paced
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.protocols import online
from streambench.protocols.pacing import replay_recording
from streambench.protocols.recording import StreamRecording
from tests.support import ScriptedAdapter, make_stream

MS = 1_000_000
Script = Callable[[Frame], Prediction]


def _answer(frame: Frame, labels: np.ndarray | None) -> Prediction:
    row = labels[frame.index] if labels is not None else np.array([1, 0])
    return Prediction(scores=np.where(row, 0.9, 0.1).astype(np.float32))


def busy(ms: float, labels: np.ndarray | None = None) -> Script:
    """A model that computes ``ms`` ms per frame on the wall clock (a busy wait)."""

    def script(frame: Frame) -> Prediction:
        end = time.perf_counter_ns() + int(ms * MS)
        while time.perf_counter_ns() < end:
            pass
        return _answer(frame, labels)

    return script


class VirtualClock:
    """The paced feed's clock: time moves only when the pacer waits for a frame's arrival or the model
    computes (:meth:`busy`)."""

    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns

    def wait_until(self, due_ns: int, clock: object) -> None:
        self.now_ns = max(self.now_ns, due_ns)

    def busy(self, ms: int, labels: np.ndarray | None = None) -> Script:
        def script(frame: Frame) -> Prediction:
            self.now_ns += ms * MS
            return _answer(frame, labels)

        return script


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    virtual = VirtualClock()
    monkeypatch.setattr(paced, "time", SimpleNamespace(perf_counter_ns=virtual))
    monkeypatch.setattr(paced, "wait_until", virtual.wait_until)
    return virtual


def _paced(script: Script, stream_id: str, policy: Literal["queue", "drop"] = "queue") -> StreamRecording:
    """A paced run of a 20-frame stream at 100 frames/s (frame i arrives at 10 (i + 1) ms)."""
    config = EngineConfig(warmup_frames=0, pacing="paced", paced_policy=policy)
    return Engine(ScriptedAdapter(script), config).run_stream(
        make_stream(stream_id, num_frames=20, fps=100.0)
    )


def test_queue_releases_frames_at_their_time_and_feeds_all_of_them(clock: VirtualClock) -> None:
    rec = _paced(clock.busy(2), "p")
    arrival = rec.frame_times_ns - rec.t0_ns
    assert rec.paced_start_ns is not None and rec.paced_policy == "queue"
    # a 2 ms model at 10 ms per frame keeps up: each frame starts at its arrival, not before nor after
    np.testing.assert_array_equal(rec.paced_start_ns, arrival)
    np.testing.assert_array_equal(rec.latency_ns, np.full(20, 2 * MS))
    assert rec.num_predictions == 20


def test_drop_to_newest_skips_frames_when_the_model_falls_behind(clock: VirtualClock) -> None:
    # 25 ms per frame, a frame every 10 ms: the model is free at 35, 60, 85, 110, ... ms and takes the
    # newest frame that has arrived by then (frame 5 arrives at 60 ms: exactly when the model is free)
    rec = _paced(clock.busy(25), "d", policy="drop")
    assert rec.paced_start_ns is not None
    fed = rec.paced_start_ns >= 0
    np.testing.assert_array_equal(np.flatnonzero(fed), [0, 2, 5, 7, 10, 12, 15, 17, 19])
    np.testing.assert_array_equal(fed, replay_recording(rec, "drop").processed)  # the replay agrees
    np.testing.assert_array_equal(np.unique(rec.emitted_at), np.flatnonzero(fed))
    assert np.all(rec.latency_ns[~fed] == 0)
    speed = online.score([rec], online.OnlineConfig(), ("background", "event")).overall.speed
    assert speed.latency.n == 9 and speed.latency.min_ms == 25  # dropped frames are not latencies
    assert speed.replay.measured and speed.replay.drop_rate == pytest.approx(11 / 20)


def _answered(curves: Any, unit: str, frames: int) -> list[int]:
    return [round(p.answered * frames) for p in curves[unit]["strict"]]


def test_replay_of_a_paced_run_reproduces_its_computation_aware_f1(clock: VirtualClock) -> None:
    # 100 frames/s (frame i arrives at 10 (i + 1) ms), 13 ms per frame with a queue: frame i finishes
    # at 10 + 13 (i + 1) ms, 13 + 3 i ms after it arrived: answered within 0 / 30 / 60 / 150 ms =
    # 0 / 6 / 16 / 30 frames, on the paced clock and in the replay of its latencies alike
    stream = make_stream("r", num_frames=30, fps=100.0)
    adapter = ScriptedAdapter(clock.busy(13, stream.labels))
    rec = Engine(adapter, EngineConfig(warmup_frames=0, pacing="paced")).run_stream(stream)
    np.testing.assert_array_equal(rec.latency_ns, np.full(30, 13 * MS))
    config = online.OnlineConfig(deltas_ms=(0, 30, 60, 150))
    curves = online.score([rec], config, stream.classes).overall.accuracy.curves
    assert _answered(curves, "frame", 30) == [30, 30, 30, 30]  # the algorithmic clock ignores compute
    assert _answered(curves, "frame_paced", 30) == [0, 6, 16, 30]
    assert _answered(curves, "frame_replay", 30) == [0, 6, 16, 30]


def test_on_the_wall_clock_a_paced_run_keeps_what_holds_under_any_load() -> None:
    """The pacer never feeds a frame before it arrived nor before the model is free, so each paced
    delay is at least the replayed one (the replay sees the recorded predict() times only: a
    descheduled process falls further behind); queue feeds every frame, drop always the last."""
    stream = make_stream("w", num_frames=30, fps=100.0)
    rec = Engine(
        ScriptedAdapter(busy(13, stream.labels)), EngineConfig(warmup_frames=0, pacing="paced")
    ).run_stream(stream)
    assert rec.paced_start_ns is not None and np.all(rec.latency_ns >= 13 * MS)
    start, arrival = rec.paced_start_ns, rec.frame_times_ns - rec.t0_ns
    assert np.all(start >= arrival) and np.all(start[1:] >= start[:-1] + rec.latency_ns[:-1])
    config = online.OnlineConfig(deltas_ms=(0, 30, 60, 150, 10_000))
    curves = online.score([rec], config, stream.classes).overall.accuracy.curves
    paced_counts, replay = _answered(curves, "frame_paced", 30), _answered(curves, "frame_replay", 30)
    assert paced_counts[0] == replay[0] == 0  # no frame is answered before 13 ms of compute
    assert all(p <= r for p, r in zip(paced_counts, replay, strict=True)), (paced_counts, replay)
    assert paced_counts[-1] == replay[-1] == 30  # every frame answered within 10 s

    dropped = _paced(busy(25), "d", policy="drop")
    assert dropped.paced_start_ns is not None
    fed = dropped.paced_start_ns >= 0
    assert fed[-1] and fed.sum() <= 9  # ≥ 25 ms per fed frame: at most 8 start before the last arrives
    np.testing.assert_array_equal(np.unique(dropped.emitted_at), np.flatnonzero(fed))
    assert np.all(dropped.latency_ns[~fed] == 0) and np.all(dropped.latency_ns[fed] >= 25 * MS)
