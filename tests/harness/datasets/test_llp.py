"""LLP / AVVP evaluation files → per-modality segment labels (harness/datasets/llp.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streambench.harness.datasets.ave import FeatureFileError
from streambench.harness.datasets.llp import LLP_CLASSES, LLP_EVENTS, LlpConfig, streams, warmup_stream
from streambench.harness.io.annotations import AnnotationFileError

HEADER = "filename\tonset\toffset\tevent_labels\n"
AUDIO = HEADER + (
    "KSRjje7GH44_60_70\t8\t10\tBlender\n"
    "KSRjje7GH44_60_70\t0\t8\tSpeech\n"
    "HK1i4YyF5WU_30_40\t1\t3\tSpeech\n"
    "HK1i4YyF5WU_30_40\t9\t9\tSpeech\n"  # zero-length: no segment
)
VISUAL = HEADER + (
    "KSRjje7GH44_60_70\t0\t10\tBlender\nMcVcuryKUp4_160_170\t6\t8\tSpeech\n"  # a clip with visual events only
)


@pytest.fixture
def files(tmp_path: Path) -> LlpConfig:
    (tmp_path / "AVVP_eval_audio.csv").write_text(AUDIO)
    (tmp_path / "AVVP_eval_visual.csv").write_text(VISUAL)
    return LlpConfig(
        audio_labels=tmp_path / "AVVP_eval_audio.csv", visual_labels=tmp_path / "AVVP_eval_visual.csv"
    )


def on(labels: np.ndarray, name: str) -> list[int]:
    return np.flatnonzero(labels[:, LLP_CLASSES.index(name)]).tolist()


def test_classes() -> None:
    assert len(LLP_EVENTS) == 25
    assert LLP_CLASSES[0] == "background" and LLP_CLASSES[1:] == LLP_EVENTS
    assert LLP_EVENTS[0] == "Speech" and LLP_EVENTS[-1] == "Clapping"


def test_per_modality_labels(files: LlpConfig) -> None:
    got = streams(files)
    assert [s.stream_id for s in got] == ["KSRjje7GH44_60_70", "HK1i4YyF5WU_30_40", "McVcuryKUp4_160_170"]
    blender = got[0]
    audio, visual = blender.meta["labels_audio"], blender.meta["labels_visual"]
    assert audio.shape == visual.shape == blender.labels.shape == (10, 26)
    assert on(audio, "Blender") == [8, 9] and on(audio, "Speech") == list(range(8))
    assert on(visual, "Blender") == list(range(10)) and on(visual, "Speech") == []
    assert on(blender.labels, "Speech") == list(range(8)) and on(blender.labels, "Blender") == list(range(10))
    assert on(audio & visual, "Blender") == [8, 9]  # audio-visual: both modalities
    assert on(blender.labels, "background") == [] and on(visual, "background") == []

    speech = got[1]
    assert on(speech.meta["labels_audio"], "Speech") == [1, 2]
    assert on(speech.meta["labels_visual"], "background") == list(range(10))
    assert on(speech.labels, "background") == [0, *range(3, 10)]

    visual_only = got[2]
    assert on(visual_only.meta["labels_audio"], "background") == list(range(10))
    assert on(visual_only.labels, "Speech") == [6, 7]
    for s in got:
        assert s.segment_length_s == 1.0 and s.modalities == ("audio", "visual")
        np.testing.assert_array_equal(s.frame_times, np.arange(1.0, 11.0))


def test_without_features_payloads_are_missing(files: LlpConfig) -> None:
    frames = list(streams(files)[0].frames())
    assert len(frames) == 10 and all(f.inputs == {"audio": None, "visual": None} for f in frames)


def test_npy_features(files: LlpConfig, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    arrays = {}
    for kind, shape in (("vggish", (10, 128)), ("res152", (80, 2048)), ("r2plus1d_18", (10, 512))):
        (tmp_path / kind).mkdir()
        for clip in ("KSRjje7GH44", "HK1i4YyF5WU", "McVcuryKUp4"):
            arrays[kind, clip] = rng.standard_normal(shape).astype(np.float32)
            np.save(tmp_path / kind / f"{clip}.npy", arrays[kind, clip])
    cfg = files.model_copy(
        update={
            "audio_features": tmp_path / "vggish",
            "visual_features": tmp_path / "res152",
            "st_features": tmp_path / "r2plus1d_18",
        }
    )
    frames = list(streams(cfg)[1].frames())
    assert frames[3].inputs["audio"].shape == (128,) and frames[3].inputs["visual"].shape == (2560,)
    np.testing.assert_array_equal(frames[3].inputs["audio"], arrays["vggish", "HK1i4YyF5WU"][3])
    pooled = arrays["res152", "HK1i4YyF5WU"][24:32].mean(axis=0)  # segment 3 = frames 24..31 at 8 fps
    np.testing.assert_allclose(frames[3].inputs["visual"][:2048], pooled, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(frames[3].inputs["visual"][2048:], arrays["r2plus1d_18", "HK1i4YyF5WU"][3])

    np.save(tmp_path / "vggish" / "HK1i4YyF5WU.npy", np.zeros((9, 128), dtype=np.float32))
    with pytest.raises(FeatureFileError, match=r"HK1i4YyF5WU\.npy: has shape \(9, 128\)"):
        streams(cfg)
    (tmp_path / "vggish" / "HK1i4YyF5WU.npy").unlink()
    with pytest.raises(FeatureFileError, match=r"HK1i4YyF5WU\.npy: is missing"):
        streams(cfg)
    (tmp_path / "vggish" / "HK1i4YyF5WU.npy").write_bytes(b"\x93NUMPY garbage")
    with pytest.raises(FeatureFileError, match=r"cannot be read as a \.npy array"):
        streams(cfg)


def test_label_errors_name_file_and_line(files: LlpConfig) -> None:
    files.visual_labels.write_text(VISUAL.replace("\tSpeech", "\tSpeaking"))
    with pytest.raises(AnnotationFileError, match=r"AVVP_eval_visual\.csv, line 3: unknown LLP event"):
        streams(files)
    files.visual_labels.write_text(VISUAL)
    files.audio_labels.write_text(AUDIO.replace("\t8\t10\t", "\t8\t11\t"))
    with pytest.raises(AnnotationFileError, match=r"AVVP_eval_audio\.csv, line 2: offset 11 is past"):
        streams(files)


def test_warmup_stream(files: LlpConfig) -> None:
    warm = warmup_stream(files, 100)
    assert warm.num_frames == 100 and warm.stream_id == "llp-warmup"
    clips = ["KSRjje7GH44_60_70", "HK1i4YyF5WU_30_40", "McVcuryKUp4_160_170"]
    assert warm.meta["streams"] == [*clips, *clips, *clips, clips[0]]
    assert [f.index for f in warm.frames()] == list(range(100))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=300), magic=st.booleans())
def test_random_bytes_as_npy_raise_feature_file_error(data: bytes, magic: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="npy-") as name:
        directory = Path(name)
        (directory / "a.csv").write_text(HEADER + "abcdefghijk_0_10\t0\t1\tDog\n")
        (directory / "v.csv").write_text(HEADER + "abcdefghijk_0_10\t0\t1\tDog\n")
        (directory / "feats").mkdir()
        bad = directory / "feats" / "abcdefghijk.npy"
        bad.write_bytes((b"\x93NUMPY\x01\x00" if magic else b"") + data)
        cfg = LlpConfig(
            audio_labels=directory / "a.csv",
            visual_labels=directory / "v.csv",
            audio_features=directory / "feats",
        )
        try:
            got = streams(cfg)
        except FeatureFileError as exc:
            assert str(bad) in str(exc)
        else:  # only a well-formed [k * 10, D] array gets through
            assert len(list(got[0].frames())) == 10
