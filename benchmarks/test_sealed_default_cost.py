"""Issue 24, item 1 and 7: what the default (a sealed, sandboxed worker timed by the parent) costs
against the in-process opt-out, per frame of wall time and at start-up, with the reference adapter on
the synthetic set and with Silero VAD on speech-like audio files.

Opt-in: ``python -m pytest benchmarks/test_sealed_default_cost.py -s``. Both modes run through the one
interface the protocols use (harness/execution/model_runner.py), interleaved round by round in one
process tree, so a busy machine slows both alike; the figures are medians over rounds, printed; the
only assertion is a ratio of the sealed per-frame wall time against the in-process one measured in the
same run (no absolute time)."""

from __future__ import annotations

import statistics
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from streambench.harness.datasets.catalog import make_streams, make_warmup_stream
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.model_runner import open_runner

pytestmark = pytest.mark.benchmark

ROUNDS = 5
MAX_WALL_RATIO = 25.0  # the sealed pipe must not cost more than this many in-process frames (reference)


def _measure(config: RunConfig) -> tuple[float, float]:
    """(start-up s, wall µs per frame) of one mode: build + warm up, then every stream."""
    streams = make_streams(config.data)
    n = config.engine.warmup_frames
    warmup = make_warmup_stream(config.data, n) if n else None
    began = time.perf_counter()
    with open_runner(config, streams[0], warmup) as runner:
        started = time.perf_counter()
        for stream in streams:
            runner.run_stream(stream, "test")
        ended = time.perf_counter()
    frames = sum(s.num_frames for s in streams)
    return started - began, (ended - started) / frames * 1e6


def _compare(label: str, config: RunConfig) -> float:
    here = config.model_copy(update={"isolate": False})
    sealed = config.model_copy(update={"isolate": True, "isolation": IsolationConfig(sealed=True)})
    rows: dict[str, list[tuple[float, float]]] = {"in-process": [], "sealed": []}
    for _ in range(ROUNDS):
        for name, chosen in (("in-process", here), ("sealed", sealed)):
            rows[name].append(_measure(chosen))
    start = {k: statistics.median(s for s, _ in v) for k, v in rows.items()}
    wall = {k: statistics.median(w for _, w in v) for k, v in rows.items()}
    print(
        f"\n{label}: start-up in-process {start['in-process']:.2f} s, sealed {start['sealed']:.2f} s "
        f"(+{start['sealed'] - start['in-process']:.2f} s); wall per frame in-process "
        f"{wall['in-process']:.1f} µs, sealed {wall['sealed']:.1f} µs "
        f"(+{wall['sealed'] - wall['in-process']:.1f} µs, x{wall['sealed'] / wall['in-process']:.2f}); "
        f"medians of {ROUNDS} interleaved rounds"
    )
    return wall["sealed"] / wall["in-process"]


def test_reference_on_the_synthetic_set() -> None:
    config = RunConfig(
        adapter="reference",
        data=SyntheticConfig(seed=0, num_streams=6, duration_s=10.0),
        engine=EngineConfig(warmup_frames=100),
    )
    assert _compare("reference, 6 x 10 s synthetic", config) < MAX_WALL_RATIO


def _speech_files(directory: Path) -> Path:
    from tests.data.speech_like import SR, recording

    for seed in range(3):
        audio = recording(seed)
        pcm = (np.clip(audio, -1, 1) * 32767).astype("<i2")
        with wave.open(str(directory / f"speech{seed}.wav"), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(SR)
            out.writeframes(pcm.tobytes())
        (directory / f"speech{seed}.txt").write_text(f"0.5\t{audio.size / SR - 0.5:.3f}\tspeech\n")
    return directory


def test_silero_vad_on_speech_like_audio(tmp_path: Path) -> None:
    pytest.importorskip("silero_vad")
    from streambench.harness.datasets.audio_files import AudioFilesConfig

    config = RunConfig(
        adapter="silero-vad",
        data=AudioFilesConfig(directory=_speech_files(tmp_path), background_class="non-speech"),
        engine=EngineConfig(warmup_frames=100),
    )
    _compare("silero-vad (TorchScript), 3 speech-like files", config)
