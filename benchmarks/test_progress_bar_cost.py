"""Does the run's progress bar distort the latencies it shows the progress of? (issue 17 item, in the loop)

Opt-in (not collected by ``pytest`` alone)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_progress_bar_cost.py -s

In process, the engine times ``predict()`` in the main thread. rich's ``Progress`` redraws itself by default
from a thread of its own, 10 times a second (``auto_refresh``); to draw, that thread takes the GIL, which
it may get while the main thread is inside a timed ``predict()``: that frame then waits for the drawing.
``streambench run`` draws its bar from the engine's between-chunk callback instead (``auto_refresh`` off,
harness/cli/run.py). This benchmark runs the same stream three ways, interleaved, in one process: no bar;
the bar as rich draws it by default (a refresh thread); the bar as ``run`` draws it. The console is a
terminal writing to ``/dev/null``, so the drawing is done. Per way, medians over the rounds of: p50, p99,
p99.9 and max latency, how many redraws started inside a ``predict()`` (each redraw's start and each
frame's entry and exit read on the same clock; the adapter reads them, in every way alike) and the median
latency of those frames.
``BAR_ROUNDS`` (default 9), ``BAR_FRAMES`` (default 30 000) and ``BAR_BLOCKS`` (the ``work`` adapter's
blocks per frame, default 10) size it.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from streambench.adapters.contract import Frame, PredictOutput, Stream
from streambench.adapters.null import WorkAdapter, WorkOptions
from streambench.harness.cli.run import _BarHook, progress_bar
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.executor import EngineExecutor, InProcess
from streambench.protocols.base import Plan, PlannedStream

pytestmark = pytest.mark.benchmark

ROUNDS = int(os.environ.get("BAR_ROUNDS", "9"))
FRAMES = int(os.environ.get("BAR_FRAMES", "30000"))
BLOCKS = int(os.environ.get("BAR_BLOCKS", "10"))
WAYS = ("no bar", "refresh thread (rich default)", "drawn between chunks (run)")


class Stamped(WorkAdapter):
    """The ``work`` adapter noting when each ``predict()`` was entered and left."""

    def __init__(self, options: WorkOptions) -> None:
        super().__init__(options)
        self.windows: list[tuple[int, int]] = []

    def predict(self, frame: Frame) -> PredictOutput:
        entered = time.perf_counter_ns()
        out = super().predict(frame)
        self.windows.append((entered, time.perf_counter_ns()))
        return out


def _stream() -> Stream:
    frames = [Frame(index=i, t=(i + 1) / 25, inputs={}) for i in range(FRAMES)]
    return Stream(
        stream_id="long",
        classes=("background", "event"),
        labels=np.zeros((FRAMES, 2), dtype=bool),
        frame_times=np.array([f.t for f in frames]),
        frame_source=lambda: frames,
        modalities=("audio",),
    )


def _one_run(way: str, adapter: Stamped, stream: Stream, devnull: Any) -> dict[str, float]:
    adapter.windows.clear()
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    executor = EngineExecutor(InProcess(engine, {"long": stream}, None))
    plan = Plan(streams=(PlannedStream(stream_id="long", role="test"),))
    redraws: list[int] = []
    if way == WAYS[0]:
        recording = executor.execute(plan)[0]
    else:
        bar = progress_bar(True, Console(file=devnull, force_terminal=True, width=120))
        bar.live.auto_refresh = way == WAYS[1]
        draw = bar.live.refresh

        def refresh() -> None:
            redraws.append(time.perf_counter_ns())
            draw()

        bar.live.refresh = refresh  # type: ignore[method-assign]
        with bar:
            executor.progress = hook = _BarHook(bar, bar.add_task("run", total=None, stream=""))
            executor.frame_progress = hook.frames
            recording = executor.execute(plan)[0]
    latency = recording.latency_ns
    windows = np.array(adapter.windows, dtype=np.int64)
    stamps = np.array(redraws, dtype=np.int64)
    k = np.searchsorted(windows[:, 0], stamps) - 1  # the frame entered last before each redraw started
    hit = (k >= 0) & (stamps < windows[np.clip(k, 0, None), 1])
    return {
        "p50": float(np.percentile(latency, 50)),
        "p99": float(np.percentile(latency, 99)),
        "p99.9": float(np.percentile(latency, 99.9)),
        "max": float(latency.max()),
        "redraws": float(len(stamps)),
        "inside predict": float(hit.sum()),
        "hit latency": float(np.median(latency[k[hit]])) if hit.any() else float("nan"),
    }


@pytest.fixture
def devnull() -> Iterator[Any]:
    with open(os.devnull, "w") as sink:
        yield sink


def test_the_bar_drawn_between_chunks_leaves_predict_alone(devnull: Any) -> None:
    adapter, stream = Stamped(WorkOptions(blocks=BLOCKS)), _stream()
    _one_run(WAYS[0], adapter, stream, devnull)  # warm
    figures: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    for r in range(ROUNDS):
        for way in WAYS if r % 2 == 0 else WAYS[::-1]:
            figures[way].append(_one_run(way, adapter, stream, devnull))
    print(f"\nwork adapter, {BLOCKS} blocks per frame, {FRAMES} frames, {ROUNDS} interleaved rounds; "
          "medians over rounds (latency in µs)")  # fmt: skip
    print("| bar | p50 | p99 | p99.9 | max | redraws | redraws starting inside a predict() | "
          "latency of those frames (median) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for way, runs in figures.items():
        m = {k: statistics.median([f[k] for f in runs if f[k] == f[k]] or [np.nan]) for k in runs[0]}
        print(
            f"| {way} | {m['p50'] / 1e3:.1f} | {m['p99'] / 1e3:.1f} | {m['p99.9'] / 1e3:.1f} | "
            f"{m['max'] / 1e3:.0f} | {m['redraws']:.0f} | {m['inside predict']:.0f} | "
            + ("–" if m["hit latency"] != m["hit latency"] else f"{m['hit latency'] / 1e3:.1f}")
            + " |"
        )
    # drawn from the engine's callback, no redraw can start inside a predict(): in every round, not a median
    assert all(f["inside predict"] == 0 for f in figures[WAYS[2]])
    assert all(f["redraws"] > 0 for f in figures[WAYS[2]])
