"""CUDA event timing: the pool's bookkeeping on a fake torch, and the real thing under the gpu marker."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from streambench.harness.instruments.cuda_timing import CudaEventTimer


class FakeEvent:
    clock = 0.0  # shared "device time" in ms

    def __init__(self, enable_timing: bool) -> None:
        assert enable_timing
        self.at: float | None = None

    def record(self) -> None:
        self.at = FakeEvent.clock

    def elapsed_time(self, end: FakeEvent) -> float:
        assert self.at is not None and end.at is not None
        return end.at - self.at


def test_pool_records_pairs_and_converts_ms_to_ns() -> None:
    synced = []
    fake_torch = SimpleNamespace(cuda=SimpleNamespace(Event=FakeEvent, synchronize=lambda: synced.append(1)))
    timer = CudaEventTimer(4, torch_module=fake_torch)
    for ms in (0.5, 2.0, 0.25):
        timer.start()
        FakeEvent.clock += ms
        timer.end()
    np.testing.assert_array_equal(timer.read_ns(), [500_000, 2_000_000, 250_000])
    assert synced == [1]  # read once, after the stream


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_events_time_a_device_sleep() -> None:
    timer = CudaEventTimer(2)
    for cycles in (1_000_000, 4_000_000):
        timer.start()
        torch.cuda._sleep(cycles)
        timer.end()
    short, long = timer.read_ns()
    assert 0 < short < long
