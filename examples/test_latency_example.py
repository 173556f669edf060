"""Latency regression tests for a streaming model, in a project's own CI (streambench's pytest plugin).

Installing streambench registers the ``streambench_latency`` fixture. Each call runs an adapter through
the online protocol (warm-up, one stream at a time, batch 1, every ``predict()`` timed by the engine)
and records one pytest-benchmark round per frame, so pytest-benchmark's regression workflow applies:

    pytest test_latency_example.py --benchmark-autosave                      # record the baseline
    pytest test_latency_example.py --benchmark-compare --benchmark-compare-fail=median:10%   # the gate

Replace the adapters below with your own ``"my_package.models:MyAdapter"``.
"""

import pytest


def test_reference_model_latency(streambench_latency):
    run = streambench_latency(adapter="reference", streams=4, duration_s=2.0, warmup_frames=100)
    # a faster model that got worse is no win: guard the accuracy in the same test
    assert run.f1_at(0) > 0.5
    assert run.latency.n == 4 * 50  # 4 streams x 2 s x 25 fps, warm-up frames excluded


@pytest.mark.parametrize("duration_us", [200, 500])
def test_busy_wait_latency(streambench_latency, duration_us):
    run = streambench_latency(
        adapter="busywait", options={"duration_us": duration_us}, streams=2, duration_s=1.0, warmup_frames=25
    )
    assert run.latency.p50_ms >= duration_us / 1000  # it spins at least that long on every frame
