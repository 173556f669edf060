"""Ctrl-C inside a stream (harness/execution/isolation.py ``IsolatedEngine.close(at_once=True)``): the
worker is ended at once. A worker inside a stream reads no "close" request before the stream's end (a
sealed one not at all), so asking it first only added a 5 s wait to every interrupted run. The model here
hangs in ``predict()``, the worst case; the test records the waits, not the wall time, so that a loaded
machine cannot make it pass or fail."""

from __future__ import annotations

import _thread
import threading
from typing import Any

import psutil
import pytest

from streambench.adapters.faulty import stream_fingerprint
from streambench.harness.datasets.catalog import make_streams
from streambench.harness.execution import isolation
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.sealing import seal_frames

DATA = {"num_streams": 2, "duration_s": 2.0, "seed": 0}


def _hanging_run() -> RunConfig:
    """The faulty adapter, hanging at frame 3 of the second stream."""
    streams = make_streams(RunConfig.model_validate({"adapter": "faulty", "data": DATA}).data)
    second = stream_fingerprint(seal_frames(streams[1].frames())[0])
    return RunConfig.model_validate(
        {
            "adapter": "faulty",
            "adapter_options": {"fault": "hang", "stream_fingerprint": second, "at_frame": 3},
            "data": DATA,
            "engine": {"warmup_frames": 5},
        }
    )


@pytest.mark.processes
@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "plain worker"])
def test_ctrl_c_in_a_stream_ends_the_worker_without_asking_it_first(
    sealed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    real_join = isolation._join

    def recorded_join(process: Any, timeout_s: float) -> None:
        waits.append(timeout_s)
        real_join(process, timeout_s)

    monkeypatch.setattr(isolation, "_join", recorded_join)
    limits = IsolationConfig(sealed=sealed, frame_timeout_s=600, stream_timeout_s=600)
    worker: psutil.Process | None = None
    with pytest.raises(KeyboardInterrupt), IsolatedEngine(_hanging_run(), limits) as engine:
        engine.run_stream("syn-0000")  # starts the worker and warms it up; the first stream is clean
        pid = engine.worker_pid
        assert pid is not None
        worker = psutil.Process(pid)
        waits.clear()  # from here on: the hang and the interruption
        threading.Timer(1.0, _thread.interrupt_main).start()  # Ctrl-C, while predict() hangs
        engine.run_stream("syn-0001")
    assert worker is not None
    assert waits and 5.0 not in waits, f"waited {waits} s for a worker that cannot read a close request"
    assert waits[0] == 1.0  # _end: SIGTERM, then a second before SIGKILL
    assert not worker.is_running() or worker.status() == psutil.STATUS_ZOMBIE


@pytest.mark.processes
def test_a_closed_idle_worker_is_still_asked_to_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an exception the worker is idle between streams: it reads the request and exits by
    itself (the 5 s wait is its limit, not a delay), so no worker is terminated needlessly."""
    ended: list[int] = []
    real_end = isolation._end
    monkeypatch.setattr(isolation, "_end", lambda process: (ended.append(process.pid), real_end(process)))
    with IsolatedEngine(_hanging_run(), IsolationConfig(sealed=True)) as engine:
        engine.run_stream("syn-0000")
        pid = engine.worker_pid
    assert pid is not None and ended == []
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
