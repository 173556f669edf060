"""Audio files with label files → framed, labelled streams (harness/datasets/audio_files.py; the label
files and the frame labels by overlap: harness/datasets/audio_labels.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pydantic
import pytest
import soundfile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streambench.harness.datasets.audio_files import (
    AudioFileError,
    AudioFilesConfig,
    AudioLabelPair,
    streams,
    warmup_stream,
)
from streambench.harness.datasets.audio_labels import frame_labels
from streambench.harness.io.labels import LabelFileError, LabelSpan


def wav(path: Path, data: np.ndarray, rate: int) -> Path:
    soundfile.write(str(path), data, rate, subtype="FLOAT")
    return path


def sine(freq: float, rate: int, seconds: float, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(round(rate * seconds)) / rate
    return (amplitude * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def peak_hz(signal: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(signal * np.hanning(signal.size)))
    return float(np.fft.rfftfreq(signal.size, 1 / rate)[int(np.argmax(spectrum))])


def config(**kwargs: object) -> AudioFilesConfig:
    return AudioFilesConfig.model_validate(kwargs)


# 16 kHz, frames of 1600 samples = 0.1 s; the file lasts 1.05 s → 11 frames, the last one half padding
RATE, FRAME = 16000, 1600
AUDACITY = (
    "0.25\t0.55\tspeech\n"  # frames 2 and 5 are exactly half inside, 3 and 4 fully
    "0.62\t0.65\tmusic\n"  # two abutting spans: 0.3 of frame 6 each, 0.6 together
    "0.65\t0.68\tmusic\n"
    "1.02\t1.05\tdog\n"  # 0.03 s of the last frame's 0.05 s of audio (0.3 of a nominal frame)
)


@pytest.fixture
def mono(tmp_path: Path) -> AudioLabelPair:
    ramp = (np.arange(16800, dtype=np.float32) / 16800).astype(np.float32)
    audio = wav(tmp_path / "rec.wav", ramp, RATE)
    labels = tmp_path / "rec.txt"
    labels.write_text(AUDACITY)
    return AudioLabelPair(audio=audio, labels=labels)


def test_frames_and_labels_by_overlap(mono: AudioLabelPair) -> None:
    (stream,) = streams(config(files=[mono], frame_samples=FRAME))
    assert stream.stream_id == "rec"
    assert stream.classes == ("background", "dog", "music", "speech")
    assert stream.num_frames == 11
    np.testing.assert_allclose(stream.frame_times, np.arange(1, 12) * 0.1)
    on = {name: np.flatnonzero(stream.labels[:, k]).tolist() for k, name in enumerate(stream.classes)}
    assert on == {"background": [0, 1, 7, 8, 9], "dog": [10], "music": [6], "speech": [2, 3, 4, 5]}
    assert stream.meta["padded_samples"] == 800
    assert stream.meta["sample_rate_hz"] == RATE and stream.meta["frame_samples"] == FRAME
    assert stream.meta["resampled"] is False


def test_min_overlap_is_a_threshold(mono: AudioLabelPair) -> None:
    (stream,) = streams(config(files=[mono], frame_samples=FRAME, min_overlap=0.6))
    speech = stream.classes.index("speech")
    assert np.flatnonzero(stream.labels[:, speech]).tolist() == [3, 4]
    assert stream.labels[6, stream.classes.index("music")]  # exactly 0.6 together
    assert stream.labels[10, stream.classes.index("dog")]  # 0.03 s of its 0.05 s of real audio
    (stream,) = streams(config(files=[mono], frame_samples=FRAME, min_overlap=0.61))
    assert not stream.labels[6, stream.classes.index("music")]
    assert not stream.labels[10, stream.classes.index("dog")]
    assert stream.labels[10, 0] and stream.labels[10].sum() == 1


def test_payload_is_the_samples_and_the_last_frame_zero_padded(mono: AudioLabelPair) -> None:
    (stream,) = streams(config(files=[mono], frame_samples=FRAME))
    frames = list(stream.frames())
    assert [f.index for f in frames] == list(range(11))
    assert all(f.inputs["audio"].shape == (FRAME,) and f.inputs["audio"].dtype == np.float32 for f in frames)
    expected = np.arange(16800, dtype=np.float32) / 16800
    np.testing.assert_array_equal(frames[3].inputs["audio"], expected[4800:6400])
    np.testing.assert_array_equal(frames[10].inputs["audio"][:800], expected[16000:])
    assert not frames[10].inputs["audio"][800:].any()
    assert frames[4].t == pytest.approx(0.5)


def test_frame_labels_direct() -> None:
    spans = [LabelSpan(0.0, 0.15, "a"), LabelSpan(0.15, 0.2, "b"), LabelSpan(0.1, 0.1, "b")]
    labels = frame_labels(spans, ("bg", "a", "b"), "bg", 3, 0.1, 0.3, 0.5)
    assert labels.tolist() == [[False, True, False], [False, True, True], [True, False, False]]


def test_resampling_44k1_stereo(tmp_path: Path) -> None:
    stereo = np.stack([sine(1000, 44100, 1.0), sine(3000, 44100, 1.0)], axis=1)
    audio = wav(tmp_path / "st.wav", stereo, 44100)
    (tmp_path / "st.csv").write_text("onset,offset,label\n0.5,1.0,tone\n")
    pair = AudioLabelPair(audio=audio, labels=tmp_path / "st.csv")
    for mode, freqs in (("first", [1000]), ("mix", [1000, 3000]), ("all", [1000, 3000])):
        (stream,) = streams(config(files=[pair], channels=mode))
        assert stream.meta["resampled"] is True and stream.meta["source_sample_rate_hz"] == 44100
        assert stream.meta["num_samples"] == 16000
        assert stream.num_frames == 32 and stream.meta["padded_samples"] == 32 * 512 - 16000
        frames = [f.inputs["audio"] for f in stream.frames()]
        signal = np.concatenate(frames, axis=-1)[..., :16000]
        if mode == "all":
            assert frames[0].shape == (2, 512)
            assert [peak_hz(signal[c], 16000) for c in range(2)] == freqs
        else:
            assert frames[0].shape == (512,)
            spectrum = np.abs(np.fft.rfft(signal))
            top = sorted(np.argsort(spectrum)[-len(freqs) :].tolist())
            assert top == freqs  # 1 Hz bins over 1 s
        if mode == "first":  # the amplitude survives the polyphase filter
            assert np.abs(signal[1000:15000]).max() == pytest.approx(0.5, abs=0.01)
        tone = stream.classes.index("tone")
        # frame i covers [i, i+1) * 0.032 s: frame 15 is [0.48, 0.512) → 0.375 inside; 16 is fully inside
        assert np.flatnonzero(stream.labels[:, tone]).tolist() == list(range(16, 32))


def test_rate_mismatch_refused_when_resampling_is_off(tmp_path: Path) -> None:
    audio = wav(tmp_path / "cd.wav", sine(440, 44100, 0.1), 44100)
    (tmp_path / "cd.txt").write_text("")
    pair = AudioLabelPair(audio=audio, labels=tmp_path / "cd.txt")
    with pytest.raises(AudioFileError) as info:
        streams(config(files=[pair], resample=False))
    message = str(info.value)
    assert str(audio) in message and "44100 Hz" in message and "16000 Hz" in message


def test_directory_and_vad_classes(tmp_path: Path) -> None:
    wav(tmp_path / "b.wav", np.zeros(1024, dtype=np.float32), RATE)
    (tmp_path / "b.csv").write_text("0.0,0.032,speech\n")
    wav(tmp_path / "a.wav", np.zeros((2048, 2), dtype=np.float32), RATE)
    (tmp_path / "a.txt").write_text("0.032\t0.128\tspeech\n")
    cfg = config(directory=tmp_path, classes=("non-speech", "speech"), background_class="non-speech")
    got = streams(cfg)
    assert [s.stream_id for s in got] == ["a", "b"]
    assert got[0].labels[:, 1].tolist() == [False, True, True, True]
    assert got[0].labels[:, 0].tolist() == [True, False, False, False]
    assert got[1].labels[:, 1].tolist() == [True, False]


def test_errors_name_the_file(tmp_path: Path) -> None:
    audio = wav(tmp_path / "x.wav", np.zeros(512, dtype=np.float32), RATE)
    labels = tmp_path / "x.txt"
    labels.write_text("0\t0.01\tspeech\n0\t0.02\tcough\n")
    pair = AudioLabelPair(audio=audio, labels=labels)
    with pytest.raises(LabelFileError, match="line 2: label 'cough' is not one of the classes"):
        streams(config(files=[pair], classes=("background", "speech")))
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk")
    with pytest.raises(AudioFileError, match=r"broken\.wav: cannot be read as audio"):
        streams(config(files=[AudioLabelPair(audio=broken, labels=labels)]))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "lonely.wav").write_bytes(audio.read_bytes())
    with pytest.raises(AudioFileError, match=r"lonely\.wav: has no label file"):
        streams(config(directory=tmp_path / "sub"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(AudioFileError, match=r"empty: holds no \*\.wav file"):
        streams(config(directory=tmp_path / "empty"))
    with pytest.raises(AudioFileError, match="nowhere: is not a directory"):
        streams(config(directory=tmp_path / "nowhere"))


def test_spans_past_the_end_of_the_audio_are_refused(tmp_path: Path) -> None:
    audio = wav(tmp_path / "short.wav", np.zeros(RATE, dtype=np.float32), RATE)  # 1 s
    labels = tmp_path / "short.txt"
    labels.write_text("0.2\t0.5\tspeech\n0.8\t1.005\tspeech\n0.9\t12.5\tspeech\n")
    pair = AudioLabelPair(audio=audio, labels=labels)
    with pytest.raises(LabelFileError, match=r"short\.txt, line 3: span 0\.9-12\.5 s .* ends after"):
        streams(config(files=[pair]))
    labels.write_text("0.2\t0.5\tspeech\n0.8\t1.005\tspeech\n")  # within the 10 ms rounding tolerance
    assert streams(config(files=[pair]))[0].num_frames == -(-RATE // 512)


def test_config_validation(tmp_path: Path) -> None:
    pair = {"audio": tmp_path / "a.wav", "labels": tmp_path / "a.txt"}
    with pytest.raises(pydantic.ValidationError, match="either files"):
        config(files=[pair], directory=tmp_path)
    with pytest.raises(pydantic.ValidationError, match="either files"):
        config()
    with pytest.raises(pydantic.ValidationError, match="must contain background_class"):
        config(files=[pair], classes=("speech",))
    with pytest.raises(pydantic.ValidationError, match=r"must end in \.txt"):
        config(files=[{"audio": tmp_path / "a.wav", "labels": tmp_path / "a.json"}])
    with pytest.raises(pydantic.ValidationError):
        config(files=[pair], min_overlap=0.0)
    with pytest.raises(pydantic.ValidationError):
        config(files=[pair], sample_rate=8000)


def test_warmup_stream(mono: AudioLabelPair) -> None:
    cfg = config(files=[mono], frame_samples=FRAME)
    warm = warmup_stream(cfg, 7)
    assert warm.num_frames == 7 and warm.stream_id == "audio-warmup"
    assert warm.classes == ("background", "dog", "music", "speech")
    assert warm.labels[:, 0].all() and warm.labels.sum() == 7
    first = [f.inputs["audio"] for f in warm.frames()]
    again = [f.inputs["audio"] for f in warm.frames()]
    assert all(a.shape == (FRAME,) and np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert 0.005 < float(np.std(np.concatenate(first))) < 0.02
    with pytest.raises(ValueError, match="num_frames"):
        warmup_stream(cfg, 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300), prefix=st.sampled_from([b"", b"RIFF", b"RIFF\x24\x00\x00\x00WAVEfmt "]))
def test_random_bytes_as_wav_read_or_raise_audio_file_error(data: bytes, prefix: bytes) -> None:
    with tempfile.TemporaryDirectory(prefix="wav-") as name:
        audio, labels = Path(name) / "r.wav", Path(name) / "r.txt"
        audio.write_bytes(prefix + data)
        labels.write_text("")
        try:
            for stream in streams(config(files=[{"audio": audio, "labels": labels}], frame_samples=64)):
                for frame in stream.frames():
                    assert frame.inputs["audio"].shape[-1] == 64
        except AudioFileError as exc:
            assert str(audio) in str(exc)


def test_audacity_labels_extension_is_read_as_audacity(tmp_path: Path) -> None:
    # issue 27 item 5: Audacity's own ".labels" export, in a directory and as a listed pair
    wav(tmp_path / "a.wav", np.zeros(2048, dtype=np.float32), RATE)
    (tmp_path / "a.labels").write_text("0.032\t0.128\tspeech\n")
    cfg = config(directory=tmp_path, classes=("non-speech", "speech"), background_class="non-speech")
    (got,) = streams(cfg)
    assert got.labels[:, 1].tolist() == [False, True, True, True]
    assert got.meta["labels_source"].endswith("a.labels")
    pair = AudioLabelPair(audio=tmp_path / "a.wav", labels=tmp_path / "a.labels")
    (listed,) = streams(config(files=[pair], classes=("non-speech", "speech"), background_class="non-speech"))
    assert listed.labels.tolist() == got.labels.tolist()


def test_two_label_files_for_one_recording_are_refused_by_name(tmp_path: Path) -> None:
    wav(tmp_path / "a.wav", np.zeros(2048, dtype=np.float32), RATE)
    (tmp_path / "a.txt").write_text("0.032\t0.128\tspeech\n")
    (tmp_path / "a.labels").write_text("0.032\t0.128\tspeech\n")
    with pytest.raises(AudioFileError, match=r"a\.wav: has 2 label files \(a\.txt, a\.labels\); keep one"):
        streams(config(directory=tmp_path))
    (tmp_path / "a.txt").unlink()
    (tmp_path / "a.labels").unlink()
    with pytest.raises(AudioFileError, match=r"has no label file \(\.txt, \.labels, \.csv\)"):
        streams(config(directory=tmp_path))
