"""What the data was as the model received it (harness/datasets/provenance.py, issue 27 item 5): the source
files' own rates and channels, the conversions named in warnings, and each data set's framing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from streambench.harness.datasets.audio_files import AudioFilesConfig, streams
from streambench.harness.datasets.provenance import Framing, conversion_warnings, framing_of, source_files
from streambench.harness.datasets.spoof import SpoofConfig
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams


def _recordings(directory: Path) -> AudioFilesConfig:
    """a: 8 kHz stereo; b: 16 kHz mono; c: 16 kHz stereo; d: 8 kHz mono (each 0.5 s, one label)."""
    directory.mkdir()
    for stem, rate, channels in (("a", 8000, 2), ("b", 16000, 1), ("c", 16000, 2), ("d", 8000, 1)):
        shape = (rate // 2, channels) if channels > 1 else (rate // 2,)
        soundfile.write(str(directory / f"{stem}.wav"), np.zeros(shape, dtype=np.float32), rate)
        (directory / f"{stem}.txt").write_text("0.1\t0.2\tspeech\n")
    return AudioFilesConfig(directory=directory, sample_rate_hz=16000, frame_samples=512)


def test_source_files_record_each_files_own_rate_and_channels(tmp_path: Path) -> None:
    sources = source_files(streams(_recordings(tmp_path / "rec")))
    assert set(sources) == {"a", "b", "c", "d"}
    assert sources["a"] == {
        "file": str(tmp_path / "rec" / "a.wav"),
        "sample_rate_hz": 8000,
        "channels": 2,
        "resampled_to_hz": 16000,
        "channels_taken": "mix",
    }
    assert sources["b"]["resampled_to_hz"] is None and sources["b"]["channels"] == 1  # type: ignore[index]
    assert source_files(make_streams(SyntheticConfig(num_streams=2, duration_s=1.0, seed=1))) == {}


def test_conversions_are_named_in_warnings(tmp_path: Path) -> None:
    sources = source_files(streams(_recordings(tmp_path / "rec")))
    resampled, mixed = conversion_warnings(sources)
    assert resampled.startswith("2 of 4 audio files resampled from 8000 Hz to 16000 Hz (a, d;")
    assert "data.resample = false" in resampled
    assert mixed.startswith(
        "2 of 4 audio files mixed to mono (the mean of the channels) from 2 channels (a, c;"
    )
    first = source_files(streams(_recordings(tmp_path / "again").model_copy(update={"channels": "first"})))
    assert any(
        w.startswith("2 of 4 audio files cut to channel 0 from 2 channels")
        for w in conversion_warnings(first)
    )


def test_nothing_converted_nothing_said(tmp_path: Path) -> None:
    directory = tmp_path / "plain"
    directory.mkdir()
    soundfile.write(str(directory / "x.wav"), np.zeros(8000, dtype=np.float32), 16000)
    (directory / "x.txt").write_text("0.1\t0.2\tspeech\n")
    sources = source_files(streams(AudioFilesConfig(directory=directory)))
    assert sources and conversion_warnings(sources) == []
    assert conversion_warnings(None) == [] and conversion_warnings("not a mapping") == []  # older runs


def test_many_files_are_counted_not_all_named() -> None:
    sources = {
        f"s{k}": {"sample_rate_hz": 44100, "channels": 1, "resampled_to_hz": 16000, "channels_taken": "mix"}
        for k in range(5)
    }
    (warning,) = conversion_warnings(sources)
    assert "5 of 5 audio files resampled from 44100 Hz to 16000 Hz (s0, s1, s2 and 2 more;" in warning


AUDIO_16K = Framing(frame_rate_hz=31.25, frame_samples=512, sample_rate_hz=16000)
AUDIO_8K = Framing(frame_rate_hz=31.25, frame_samples=256, sample_rate_hz=8000)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (AudioFilesConfig(directory=Path("x")), AUDIO_16K),
        ({"kind": "audio_files", "sample_rate_hz": 8000, "frame_samples": 256}, AUDIO_8K),
        (SpoofConfig(), Framing(frame_rate_hz=50.0, frame_samples=320, sample_rate_hz=16000)),
        (SyntheticConfig(fps=10.0, segment_length_s=1.0), Framing(frame_rate_hz=10.0)),
        ({}, Framing(frame_rate_hz=25.0)),  # kind left out: synthetic, its default fps
        ({"kind": "ave"}, Framing(frame_rate_hz=1.0)),
        ({"kind": "feature_arrays", "frame_rate_hz": 100.0}, Framing(frame_rate_hz=100.0)),  # 10 ms frames
        ({"kind": "feature_arrays"}, None),  # each file's own timestamps
        ({"kind": "video_files"}, None),  # each video's own rate
        ({"kind": "unknown"}, None),
    ],
)  # fmt: skip
def test_framing_of_each_kind(data: object, expected: Framing | None) -> None:
    assert framing_of(data) == expected  # type: ignore[arg-type]


def test_framing_describes_itself() -> None:
    assert Framing(frame_rate_hz=31.25, frame_samples=512, sample_rate_hz=16000).describe() == (
        "512 samples at 16000 Hz (32 ms frames)"
    )
    assert Framing(frame_rate_hz=25.0).describe() == "25 frames/s (40 ms frames)"
