"""Issue 8: the harness's per-frame overhead is under 1 % of Silero VAD's per-frame latency.

Opt-in (``python -m pytest benchmarks -s -k silero``). In one run, interleaved: (a) the engine's overhead
per frame — the engine's timed loop with the ``null`` adapter against a bare Python loop calling the same
``predict`` (as benchmarks/test_engine_overhead.py), and (b) the median per-frame latency of both Silero
variants through the engine on generated speech-like audio (tests/data/speech_like.py). The ratio of
the two medians must stay under 1 %; both figures are printed.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.null import NullAdapter
from streambench.adapters.registry import create_adapter
from streambench.harness.execution.engine import Engine, EngineConfig
from tests.data.speech_like import SR, recording

pytestmark = pytest.mark.benchmark
pytest.importorskip("onnxruntime")
pytest.importorskip("silero_vad")

FRAME = 512


def _speech_stream() -> Stream:
    audio = np.concatenate([recording(seed) for seed in range(4)])  # 26 s, 812 frames
    n = audio.size // FRAME
    times = (np.arange(n) + 1) * FRAME / SR
    frames = [Frame(k, float(times[k]), {"audio": audio[k * FRAME : (k + 1) * FRAME]}) for k in range(n)]
    labels = np.zeros((n, 2), dtype=bool)
    labels[:, 0] = True
    return Stream("speech", ("non-speech", "speech"), labels, times, lambda: frames, ("audio",))


def _overhead_ns(rounds: int = 15, n: int = 20_000) -> float:
    adapter = NullAdapter(NullAdapter.Options(classes=("non-speech", "speech")))
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    payload = {"audio": np.zeros(FRAME, dtype=np.float32)}
    frames = [Frame(index=i, t=(i + 1) * FRAME / SR, inputs=payload) for i in range(n)]
    predict = adapter.predict
    extra = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for frame in frames:
            predict(frame)
        bare = time.perf_counter_ns() - start
        start = time.perf_counter_ns()
        engine._feed(frames, "bench", n)
        timed = time.perf_counter_ns() - start
        extra.append((timed - bare) / n)
    return statistics.median(extra)


@pytest.mark.parametrize("variant", ["silero-vad", "silero-vad-onnx"])
def test_harness_overhead_is_under_one_percent_of_silero(variant: str) -> None:
    stream = _speech_stream()
    engine = Engine(create_adapter(variant), EngineConfig(warmup_frames=200))
    engine.warm_up(stream)
    medians, overheads = [], []
    for _ in range(3):  # interleaved, so a busy machine slows both alike
        medians.append(float(np.median(engine.run_stream(stream).latency_ns)))
        overheads.append(_overhead_ns(rounds=5))
    silero_ns, overhead_ns = statistics.median(medians), statistics.median(overheads)
    share = overhead_ns / silero_ns
    print(
        f"\n{variant}: median latency {silero_ns / 1e3:.1f} µs per frame; harness overhead "
        f"{overhead_ns:.0f} ns per frame = {100 * share:.2f} % of it"
    )
    assert share < 0.01
