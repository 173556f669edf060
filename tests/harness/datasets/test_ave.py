"""AVE from its annotation file and HDF5 features (harness/datasets/ave.py), on tiny files."""

from __future__ import annotations

import tempfile
from pathlib import Path

import h5py
import numpy as np
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streambench.harness.datasets.ave import (
    AVE_CATEGORIES,
    AVE_CLASSES,
    AveConfig,
    FeatureFileError,
    streams,
    warmup_stream,
)
from streambench.harness.io.annotations import AnnotationFileError

ANNOTATIONS = (
    "Category&VideoID&Quality&StartTime&EndTime\n"
    "Church bell&RUhOCu3LNXM&good&0&10\n"
    "Bark&3jS8tWfLJxI&good&7&9\n"
    "Mandolin&3jS8tWfLJxI&good&2&4\n"  # the same video again, with another event
)


def write_features(path: Path, shape: tuple[int, ...], seed: int) -> np.ndarray:
    data = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    with h5py.File(path, "w") as handle:
        handle.create_dataset("avadataset", data=data)
    return data


@pytest.fixture
def ave(tmp_path: Path) -> tuple[AveConfig, np.ndarray, np.ndarray]:
    (tmp_path / "Annotations.txt").write_text(ANNOTATIONS)
    audio = write_features(tmp_path / "audio_feature.h5", (3, 10, 128), 1)
    visual = write_features(tmp_path / "visual_feature.h5", (3, 10, 7, 7, 512), 2)
    cfg = AveConfig(
        annotations=tmp_path / "Annotations.txt",
        audio_features=tmp_path / "audio_feature.h5",
        visual_features=tmp_path / "visual_feature.h5",
    )
    return cfg, audio, visual


def segments(stream_labels: np.ndarray) -> list[str]:
    assert (stream_labels.sum(axis=1) == 1).all()  # one class per segment
    return [AVE_CLASSES[int(k)] for k in stream_labels.argmax(axis=1)]


def test_classes() -> None:
    assert len(AVE_CLASSES) == 29 and AVE_CLASSES[0] == "background"
    assert AVE_CATEGORIES[:3] == ("Church bell", "Male speech, man speaking", "Bark")
    assert AVE_CATEGORIES[-1] == "Mandolin"


def test_streams_labels_and_ids(ave: tuple[AveConfig, np.ndarray, np.ndarray]) -> None:
    cfg, _, _ = ave
    got = streams(cfg)
    assert [s.stream_id for s in got] == ["RUhOCu3LNXM", "3jS8tWfLJxI#1", "3jS8tWfLJxI#2"]
    assert segments(got[0].labels) == ["Church bell"] * 10
    assert segments(got[1].labels) == ["background"] * 7 + ["Bark"] * 2 + ["background"]
    assert segments(got[2].labels) == ["background"] * 2 + ["Mandolin"] * 2 + ["background"] * 6
    for s in got:
        assert s.classes == AVE_CLASSES and s.segment_length_s == 1.0 and s.t0 == 0.0
        np.testing.assert_array_equal(s.frame_times, np.arange(1.0, 11.0))
    assert got[1].meta["row"] == 1 and got[1].meta["annotation_line"] == 3


def test_payloads(ave: tuple[AveConfig, np.ndarray, np.ndarray]) -> None:
    cfg, audio, visual = ave
    frames = list(streams(cfg)[2].frames())
    assert [f.index for f in frames] == list(range(10))
    assert [f.t for f in frames] == [float(i) for i in range(1, 11)]
    assert frames[4].inputs["audio"].shape == (128,) and frames[4].inputs["visual"].shape == (512,)
    np.testing.assert_array_equal(frames[4].inputs["audio"], audio[2, 4])
    np.testing.assert_allclose(
        frames[4].inputs["visual"], visual[2, 4].mean(axis=(0, 1)), rtol=1e-5, atol=1e-6
    )
    flat = list(streams(cfg.model_copy(update={"visual_pool": "flatten"}))[0].frames())
    assert flat[9].inputs["visual"].shape == (7 * 7 * 512,)
    np.testing.assert_array_equal(flat[9].inputs["visual"], visual[0, 9].reshape(-1))


def test_split_file_selects_and_orders(ave: tuple[AveConfig, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    cfg, _, _ = ave
    split = tmp_path / "testSet.txt"
    split.write_text("Mandolin&3jS8tWfLJxI&good&2&4\nChurch bell&RUhOCu3LNXM&good&0&10\n")
    got = streams(cfg.model_copy(update={"split": split}))
    assert [s.meta["row"] for s in got] == [2, 0]
    split.write_text("Church bell&RUhOCu3LNXM&good&0&10\nBark&3jS8tWfLJxI&good&7&10\n")
    with pytest.raises(AnnotationFileError, match=r"testSet.txt, line 2: sample '3jS8tWfLJxI' is not in"):
        streams(cfg.model_copy(update={"split": split}))


def test_annotation_errors(ave: tuple[AveConfig, np.ndarray, np.ndarray]) -> None:
    cfg, _, _ = ave
    cfg.annotations.write_text(ANNOTATIONS.replace("Bark&", "Barking&"))
    with pytest.raises(AnnotationFileError, match="line 3: unknown AVE category 'Barking'"):
        streams(cfg)
    cfg.annotations.write_text(ANNOTATIONS.replace("&7&9", "&7&11"))
    with pytest.raises(AnnotationFileError, match="line 3: EndTime 11 is past the 10 s video"):
        streams(cfg)


def test_feature_file_errors(ave: tuple[AveConfig, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    cfg, _, _ = ave
    write_features(tmp_path / "short.h5", (2, 10, 128), 3)
    with pytest.raises(FeatureFileError, match=r"short\.h5: has 2 rows but .* has 3 samples"):
        streams(cfg.model_copy(update={"audio_features": tmp_path / "short.h5"}))
    write_features(tmp_path / "wrong.h5", (3, 9, 128), 3)
    with pytest.raises(FeatureFileError, match=r"wrong.h5: 'avadataset' has shape \(3, 9, 128\)"):
        streams(cfg.model_copy(update={"visual_features": tmp_path / "wrong.h5"}))
    with pytest.raises(FeatureFileError, match="has no dataset 'features'"):
        streams(cfg.model_copy(update={"dataset": "features"}))
    with pytest.raises(FeatureFileError, match=r"missing\.h5: cannot be read as HDF5"):
        streams(cfg.model_copy(update={"audio_features": tmp_path / "missing.h5"}))
    with pytest.raises(pydantic.ValidationError):
        AveConfig.model_validate({**cfg.model_dump(), "visual_pool": "max"})


def test_pooled_visual_features_are_accepted(
    ave: tuple[AveConfig, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    cfg, _, _ = ave
    vec = write_features(tmp_path / "visual_feature_vec.h5", (3, 10, 512), 4)
    frames = list(
        streams(cfg.model_copy(update={"visual_features": tmp_path / "visual_feature_vec.h5"}))[1].frames()
    )
    np.testing.assert_array_equal(frames[0].inputs["visual"], vec[1, 0])


def test_warmup_stream(ave: tuple[AveConfig, np.ndarray, np.ndarray]) -> None:
    cfg, audio, _ = ave
    warm = warmup_stream(cfg, 25)
    assert warm.stream_id == "ave-warmup" and warm.num_frames == 30  # whole videos: 3 x 10 >= 25
    np.testing.assert_array_equal(warm.frame_times, np.arange(1.0, 31.0))
    frames = list(warm.frames())
    assert [f.index for f in frames] == list(range(30))
    np.testing.assert_array_equal(frames[12].inputs["audio"], audio[1, 2])
    assert warmup_stream(cfg, 45).meta["streams"][3] == "RUhOCu3LNXM"  # cycles


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=600), header=st.booleans())
def test_random_bytes_as_hdf5_raise_feature_file_error(data: bytes, header: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="h5-") as name:
        directory = Path(name)
        (directory / "a.txt").write_text("Bark&x&good&0&1\n")
        good = directory / "good.h5"
        write_features(good, (1, 10, 128), 0)
        bad = directory / "bad.h5"
        bad.write_bytes((b"\x89HDF\r\n\x1a\n" if header else b"") + data)
        cfg = AveConfig(annotations=directory / "a.txt", audio_features=bad, visual_features=good)
        with pytest.raises(FeatureFileError) as info:
            streams(cfg)
        assert str(bad) in str(info.value)
