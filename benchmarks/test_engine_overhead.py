"""What the harness adds per frame: the engine with the ``null`` adapter against a bare Python loop.

Opt-in (not collected by ``pytest`` alone): ``python -m pytest benchmarks``. The budget is 2 µs per
frame on the development machine; the comparison interleaves both loops in one run and compares
medians, so a busy machine slows both alike.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

import numpy as np
import pytest

from adapters.contract import Frame, Stream
from adapters.null import NullAdapter
from harness.execution.engine import Engine, EngineConfig

pytestmark = pytest.mark.benchmark

FRAMES = 20_000
CLASSES = tuple(f"c{i}" for i in range(29))
BUDGET_NS = 2_000


def _frames() -> list[Frame]:
    payload = {"audio": np.zeros(64, dtype=np.float32), "visual": np.zeros(128, dtype=np.float32)}
    return [Frame(index=i, t=(i + 1) / 25, inputs=payload) for i in range(FRAMES)]


def _stream(frames: list[Frame]) -> Stream:
    labels = np.zeros((FRAMES, len(CLASSES)), dtype=bool)
    return Stream(
        stream_id="bench",
        classes=CLASSES,
        labels=labels,
        frame_times=np.array([f.t for f in frames]),
        frame_source=lambda: frames,
        modalities=("audio", "visual"),
    )


def bare_loop(adapter: NullAdapter, frames: Sequence[Frame]) -> None:
    predict = adapter.predict
    for frame in frames:
        predict(frame)


@pytest.fixture(scope="module")
def setup() -> tuple[NullAdapter, Engine, list[Frame]]:
    adapter = NullAdapter(NullAdapter.Options(classes=CLASSES))
    return adapter, Engine(adapter, EngineConfig(warmup_frames=0)), _frames()


def test_bare_loop(benchmark, setup) -> None:  # type: ignore[no-untyped-def]
    adapter, _, frames = setup
    benchmark(bare_loop, adapter, frames)


def test_engine_frame_loop(benchmark, setup) -> None:  # type: ignore[no-untyped-def]
    _, engine, frames = setup
    benchmark(engine._feed, frames, "bench", len(frames))


def test_engine_run_stream(benchmark, setup) -> None:  # type: ignore[no-untyped-def]
    _, engine, frames = setup
    benchmark(engine.run_stream, _stream(frames))


def test_overhead_per_frame_within_budget(setup) -> None:  # type: ignore[no-untyped-def]
    adapter, engine, frames = setup
    bare, timed = [], []
    for _ in range(25):
        start = time.perf_counter_ns()
        bare_loop(adapter, frames)
        bare.append(time.perf_counter_ns() - start)
        start = time.perf_counter_ns()
        engine._feed(frames, "bench", len(frames))
        timed.append(time.perf_counter_ns() - start)
    overhead_ns = (statistics.median(timed) - statistics.median(bare)) / FRAMES
    bare_ns, engine_ns = statistics.median(bare) / FRAMES, statistics.median(timed) / FRAMES
    print(
        f"\nbare loop {bare_ns:.0f} ns/frame, engine {engine_ns:.0f} ns/frame, "
        f"harness overhead {overhead_ns:.0f} ns/frame (budget {BUDGET_NS} ns)"
    )
    assert overhead_ns <= BUDGET_NS
