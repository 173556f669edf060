"""What the harness adds per frame: the engine with the ``null`` adapter against a bare Python loop.

Opt-in (not collected by ``pytest`` alone); the figure of docs/performance.md and of issue 16 (item 7)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_engine_overhead.py -s -k overhead

The overhead per frame is (engine's frame loop ``Engine._feed`` − bare loop) / frames, both over the same
20 000 sealed-like frames and the null adapter's 29 class scores; the bare loop calls ``predict`` and
nothing else. ``test_overhead_per_frame_against_the_previous_loop`` measures four loops in one process,
interleaved (bare, this engine, the engine of a reference revision loaded from git beside it:
``OVERHEAD_BASE``, default the commit before the loop was rewritten, and this engine fed in chunks for a
progress hook that does nothing), ``OVERHEAD_REPEATS`` rounds (default 101) in alternating order, and
compares medians: of the wall time (what a latency figure pays) and of the
thread's CPU time (``time.thread_time_ns``: the time this process was descheduled is left out, so it is
steadier on a shared machine). A busy machine slows all three alike; the ratio is the figure to read.
"""

from __future__ import annotations

import importlib.util
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.null import NullAdapter
from streambench.harness.execution.engine import Engine, EngineConfig

pytestmark = pytest.mark.benchmark

FRAMES = 20_000
CLASSES = tuple(f"c{i}" for i in range(29))
BUDGET_NS = 2_000
ROOT = Path(__file__).resolve().parents[1]
BASE = os.environ.get("OVERHEAD_BASE", "0c8d8f4")  # main before issue 16's item 7 (the enumerate loop)
REPEATS = int(os.environ.get("OVERHEAD_REPEATS", "101"))


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


def _no_progress(done: int, total: int) -> None:
    """A progress hook that does nothing: what the chunked loop costs by itself."""


def engine_at(revision: str) -> ModuleType:
    """``harness/execution/engine.py`` as it was at ``revision``, loaded beside this one (it imports the
    other harness modules of this checkout; a revision from before the one namespace, streambench 0.2,
    imports them as top-level ``adapters`` / ``harness`` / ``protocols``, read here as ``streambench.*``)."""
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{revision}:harness/execution/engine.py"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"no engine.py at {revision!r} to compare with: {exc}")
    source = re.sub(
        r"^(from|import) (adapters|harness|protocols)\b", r"\1 streambench.\2", source, flags=re.M
    )
    name = f"_engine_at_{revision}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic look their module up
    exec(compile(source, f"engine.py@{revision}", "exec"), module.__dict__)
    return module


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


def test_overhead_per_frame_against_the_previous_loop(setup) -> None:  # type: ignore[no-untyped-def]
    adapter, engine, frames = setup
    old = engine_at(BASE)
    previous = old.Engine(adapter, old.EngineConfig(warmup_frames=0))
    loops: dict[str, Callable[[], object]] = {
        "bare": lambda: bare_loop(adapter, frames),
        "engine": lambda: engine._feed(frames, "bench", FRAMES),
        f"engine@{BASE}": lambda: previous._feed(frames, "bench", FRAMES),
        "engine+progress": lambda: engine._feed(frames, "bench", FRAMES, progress=_no_progress),
    }
    wall: dict[str, list[int]] = {name: [] for name in loops}
    cpu: dict[str, list[int]] = {name: [] for name in loops}
    names = list(loops)
    for k in range(REPEATS):
        for name in names if k % 2 == 0 else names[::-1]:
            c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
            loops[name]()
            w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            wall[name].append(w1 - w0)
            cpu[name].append(c1 - c0)
    overhead = {}
    print(f"\n{FRAMES} frames, {len(CLASSES)} classes, {REPEATS} interleaved rounds, medians in ns per frame")
    for clock, times in (("wall", wall), ("cpu", cpu)):
        per_frame = {name: statistics.median(t) / FRAMES for name, t in times.items()}
        over = {name: per_frame[name] - per_frame["bare"] for name in names[1:]}
        overhead[clock] = over
        print(
            f"{clock:4s}: bare loop {per_frame['bare']:.0f}; "
            + "; ".join(f"{name} {per_frame[name]:.0f} (overhead {over[name]:.0f})" for name in names[1:])
            + f"; overhead ratio engine / engine@{BASE} = {over['engine'] / over[names[2]]:.2f}"
            + f", engine+progress / engine = {over['engine+progress'] / over['engine']:.2f}"
        )
    assert overhead["wall"]["engine"] <= BUDGET_NS
    assert overhead["cpu"]["engine"] < overhead["cpu"][names[2]]  # the rewrite must not have lost ground
