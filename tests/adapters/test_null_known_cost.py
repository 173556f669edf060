"""The adapters of known cost (adapters/null.py: busy-wait, CUDA sleep) the selftest measures.

Timing figures are never asserted tightly here (DESIGN.md "Conventions": speed is measured in
benchmarks, not asserted in timed unit tests): the checks are the ones that hold by construction (a
busy-wait spinning on the engine's clock is never measured below its duration)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from pydantic import ValidationError

from streambench.adapters.contract import Adapter, Frame, Prediction
from streambench.adapters.null import (
    BusyWaitAdapter,
    BusyWaitOptions,
    CudaSleepAdapter,
    CudaSleepOptions,
    CudaUnavailableError,
)
from streambench.adapters.registry import create_adapter
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.selftest_checks import judge_busy_wait
from tests.support import make_stream

FRAME = Frame(index=0, t=0.04, inputs={})


def _cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


# --- the busy-wait adapter ------------------------------------------------------------------------


def test_busywait_latency_is_never_below_its_duration() -> None:
    adapter = BusyWaitAdapter(BusyWaitOptions(duration_us=200))
    assert isinstance(adapter, Adapter) and adapter.duration_ns == 200_000
    recording = Engine(adapter, EngineConfig(warmup_frames=0)).run_stream(make_stream(num_frames=30))
    assert recording.latency_ns.shape == (30,)
    assert (recording.latency_ns >= 200_000).all()
    assert recording.scores.shape == (30, 2) and np.allclose(recording.scores, 0.5)


def test_busywait_may_sleep_its_duration_instead_of_spinning() -> None:
    adapter = BusyWaitAdapter(BusyWaitOptions(duration_us=20_000, sleep=True))
    cpu = time.thread_time_ns()
    recording = Engine(adapter, EngineConfig(warmup_frames=0)).run_stream(make_stream(num_frames=5))
    assert (recording.latency_ns >= 20_000_000).all()  # never below its duration, as spinning
    assert time.thread_time_ns() - cpu < 50_000_000  # 100 ms waited, nearly none of it on the CPU


def test_busywait_returns_the_same_read_only_prediction() -> None:
    adapter = BusyWaitAdapter(BusyWaitOptions(duration_us=1, classes=("a", "b", "c", "d")))
    first, second = adapter.predict(FRAME), adapter.predict(FRAME)
    assert first is second and isinstance(first, Prediction) and first.refers_to is None
    assert first.scores.dtype == np.float32 and np.allclose(first.scores, 0.25)
    with pytest.raises(ValueError):
        first.scores[0] = 1.0


@pytest.mark.parametrize("bad", [0, -5.0])
def test_busywait_duration_must_be_positive(bad: float) -> None:
    with pytest.raises(ValidationError, match="duration_us"):
        BusyWaitOptions(duration_us=bad)


def test_busywait_classes_are_data_bound() -> None:
    adapter = create_adapter(
        "streambench.adapters.null:BusyWaitAdapter",
        {"duration_us": 5},
        data_bound={"classes": ("x", "y", "z")},
    )
    assert adapter.info.classes == ("x", "y", "z") and adapter.info.device == "cpu"


# --- the CUDA sleep adapter -----------------------------------------------------------------------


@pytest.mark.skipif(_cuda_available(), reason="checks the error on a machine without CUDA")
def test_cuda_sleep_refuses_to_build_without_cuda() -> None:
    with pytest.raises(CudaUnavailableError, match="needs a CUDA device"):
        CudaSleepAdapter(CudaSleepOptions(duration_us=1000))


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA device")
def test_cuda_sleep_is_measured_near_its_duration() -> None:  # pragma: no cover - GPU only
    adapter = CudaSleepAdapter(CudaSleepOptions(duration_us=1000))
    assert adapter.cycles_per_us > 0 and adapter.info.device.startswith("cuda")
    engine = Engine(adapter, EngineConfig(warmup_frames=10))
    engine.warm_up(make_stream("warm", num_frames=10))
    recording = engine.run_stream(make_stream(num_frames=50))
    figures = judge_busy_wait(1000, recording.latency_ns, tolerance=0.10)
    assert math.isfinite(figures.relative_error)
    # launch + synchronisation only add time; the calibration can be off by a few percent
    assert figures.median_ns >= 0.9 * 1_000_000
