"""Per-frame feature arrays as streams (issue 37 item 1): .npy, .npz and HDF5 files the tests write, labels
as event lists or per-frame arrays, frames at a given rate or at their own timestamps, and errors that name
the file, the array key and the field to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from pydantic import ValidationError

from streambench.harness.datasets.array_files import ArrayFileError
from streambench.harness.datasets.catalog import background_class_of, make_streams, make_warmup_stream
from streambench.harness.execution.config import RunConfig
from streambench.harness.io.labels import LabelFileError


def data(**fields: Any) -> Any:
    """A ``[data]`` table as a configuration file gives it."""
    return RunConfig.model_validate({"data": {"kind": "feature_arrays", **fields}}).data


def test_npy_frames_at_a_rate_labelled_by_an_event_list(tmp_path: Path) -> None:
    rows = np.arange(20, dtype=np.float64).reshape(10, 2)
    np.save(tmp_path / "clip.npy", rows)
    (tmp_path / "clip.csv").write_text("onset,offset,label\n0.2,0.5,yes\n0.76,0.9,no\n")
    (stream,) = make_streams(data(directory=str(tmp_path), frame_rate_hz=10, background_class="bg"))
    assert stream.stream_id == "clip" and stream.classes == ("bg", "no", "yes")
    np.testing.assert_allclose(stream.frame_times, np.arange(1, 11) / 10)  # (i + 1) / rate
    # frame i covers (i/10, (i+1)/10]: yes covers frames 2-4 whole; no covers 0.04 of frame 7 (< 0.5) and
    # all of frame 8: by the audio_files overlap rule
    expected = np.zeros((10, 3), dtype=bool)
    expected[[2, 3, 4], 2] = True
    expected[8, 1] = True
    expected[:, 0] = ~expected[:, 1:].any(axis=1)
    np.testing.assert_array_equal(stream.labels, expected)
    frames = list(stream.frames())
    assert stream.modalities == ("features",) and frames[3].inputs["features"].dtype == np.float32
    np.testing.assert_array_equal(frames[3].inputs["features"], [6.0, 7.0])
    assert frames[3].t == pytest.approx(0.4) and stream.segment_length_s == 1.0


def test_npz_modalities_timestamps_and_per_frame_label_indices(tmp_path: Path) -> None:
    times = np.array([0.1, 0.2, 0.35, 0.4, 0.6])  # a variable frame rate
    np.savez(
        tmp_path / "s.npz",
        mel=np.ones((5, 3)),
        pitch=np.arange(5.0)[:, None],
        labels=np.array([0, 0, 2, 1, 0]),
        timestamps=times,
    )
    config = data(files=[{"features": str(tmp_path / "s.npz")}], classes=["background", "yes", "no"])
    (stream,) = make_streams(config)
    assert stream.modalities == ("mel", "pitch")  # the file's order; labels and timestamps are not fed
    np.testing.assert_array_equal(stream.frame_times, times)
    np.testing.assert_array_equal(stream.labels.argmax(axis=1), [0, 0, 2, 1, 0])
    first = next(iter(stream.frames()))
    assert set(first.inputs) == {"mel", "pitch"} and first.inputs["pitch"].shape == (1,)
    picked = make_streams(config.model_copy(update={"modalities": ("pitch",)}))[0]
    assert picked.modalities == ("pitch",)
    warm = make_warmup_stream(config, 4)  # noise of the payload shapes at the median frame period
    np.testing.assert_allclose(warm.frame_times, [0.1, 0.2, 0.3, 0.4])
    assert {m: v.shape for m, v in next(iter(warm.frames())).inputs.items()} == {"mel": (3,), "pitch": (1,)}
    assert warm.labels[:, 0].all()


def test_an_hdf5_file_of_groups_is_one_stream_per_group_with_multi_hot_labels(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "set.h5", "w") as handle:
        for name, length in (("walk", 4), ("run", 6)):
            group = handle.create_group(name)
            group["imu"] = np.random.default_rng(0).standard_normal((length, 6))
            multi = np.zeros((length, 3), dtype=bool)
            multi[:, 0] = True
            multi[1, 1:] = True  # two events at once
            group["labels"] = multi
    config = data(directory=str(tmp_path), frame_rate_hz=50, classes=["background", "a", "b"])
    streams = make_streams(config)
    assert [s.stream_id for s in streams] == ["run", "walk"]  # h5py lists groups by name
    assert streams[1].labels[1].tolist() == [True, True, True] and streams[1].num_frames == 4
    assert next(iter(streams[0].frames())).inputs["imu"].shape == (6,)
    assert background_class_of(config) == "background"


def test_errors_name_the_file_the_array_and_the_field(tmp_path: Path) -> None:
    np.save(tmp_path / "bare.npy", np.zeros((4, 2)))
    (tmp_path / "bare.txt").write_text("0\t0.1\tyes\n")
    with pytest.raises(ArrayFileError, match=r"bare\.npy: no frame times: set data\.frame_rate_hz"):
        make_streams(data(directory=str(tmp_path)))
    np.savez(tmp_path / "t.npz", x=np.zeros((3, 2)), timestamps=np.array([0.0, 0.1, 0.2]), labels=[0, 0, 1])
    files = [{"features": str(tmp_path / "t.npz")}]
    with pytest.raises(ArrayFileError, match=r"t\.npz: array 'timestamps': .*after 0.*add one frame period"):
        make_streams(data(files=files, classes=["background", "yes"]))
    np.savez(tmp_path / "l.npz", x=np.zeros((3, 2)), labels=np.array([0, 1]))
    files = [{"features": str(tmp_path / "l.npz")}]
    with pytest.raises(ArrayFileError, match=r"l\.npz: array 'labels': \(2,\) rows, the stream has 3 frames"):
        make_streams(data(files=files, classes=["background", "yes"], frame_rate_hz=10))
    with pytest.raises(ArrayFileError, match=r"per-frame label arrays need data\.classes"):
        make_streams(data(files=files, frame_rate_hz=10))
    with pytest.raises(ArrayFileError, match=r"l\.npz: no array 'mel' \(data\.modalities\); it holds: x"):
        make_streams(data(files=files, classes=["background", "yes"], frame_rate_hz=10, modalities=["mel"]))
    np.savez(tmp_path / "o.npz", x=np.zeros((3, 2)), labels=np.array([0, 5, 1]))
    files = [{"features": str(tmp_path / "o.npz")}]
    with pytest.raises(ArrayFileError, match=r"frame 1: class index 5 outside 0\.\.1"):
        make_streams(data(files=files, classes=["background", "yes"], frame_rate_hz=10))
    files = [{"features": str(tmp_path / "o.npz"), "labels": str(tmp_path / "bare.txt")}]
    with pytest.raises(ArrayFileError, match=r"labels twice: the array 'labels' and the file .*bare\.txt"):
        make_streams(data(files=files, classes=["background", "yes"], frame_rate_hz=10))
    np.savez(tmp_path / "n.npz", x=np.zeros((3, 2)))
    with pytest.raises(ArrayFileError, match=r"n\.npz: has no labels"):
        make_streams(data(files=[{"features": str(tmp_path / "n.npz")}], frame_rate_hz=10))
    (tmp_path / "late.csv").write_text("onset,offset,label\n0.1,9.0,yes\n")  # seconds past the end
    files = [{"features": str(tmp_path / "bare.npy"), "labels": str(tmp_path / "late.csv")}]
    with pytest.raises(LabelFileError, match=r"late\.csv, line 2: .*ends after the features"):
        make_streams(data(files=files, frame_rate_hz=10))
    with pytest.raises(ValidationError, match="must contain background_class 'background'"):
        data(directory=str(tmp_path), classes=["yes", "no"])
    with pytest.raises(ValidationError, match=r"label file .*\.wav must end in"):
        data(files=[{"features": "x.npy", "labels": "x.wav"}])


def test_an_hdf5_file_with_datasets_and_groups_at_the_top_is_refused(tmp_path: Path) -> None:
    with h5py.File(tmp_path / "mixed.h5", "w") as handle:
        handle["x"] = np.zeros((2, 2))
        handle.create_group("g")["x"] = np.zeros((2, 2))
    with pytest.raises(ArrayFileError, match=r"mixed\.h5: holds both datasets \(x\) and groups \(g\)"):
        make_streams(data(directory=str(tmp_path), frame_rate_hz=10))


def test_a_directory_without_array_files_and_two_label_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ArrayFileError, match=r"holds no \.npy / \.npz / \.h5 / \.hdf5 file"):
        make_streams(data(directory=str(tmp_path), frame_rate_hz=10))
    np.save(tmp_path / "a.npy", np.zeros((3, 2)))
    (tmp_path / "a.txt").write_text("")
    (tmp_path / "a.csv").write_text("")
    with pytest.raises(ArrayFileError, match=r"a\.npy: has 2 label files of the same stem"):
        make_streams(data(directory=str(tmp_path), frame_rate_hz=10))


def test_an_array_that_is_no_numbers_is_an_error_naming_the_file_and_the_array(tmp_path: Path) -> None:
    """The frames of an array of text (or of objects) cannot be float32: the error names the file and the
    array, as every other fault of the data's files does (it said only 'could not convert string to
    float: np.str_('a')')."""
    np.savez(tmp_path / "s.npz", mel=np.array([["a", "b"]] * 3), labels=np.array([0, 1, 0]))
    (stream,) = make_streams(data(directory=str(tmp_path), classes=["background", "yes"], frame_rate_hz=10))
    with pytest.raises(ArrayFileError, match=r"s\.npz: array 'mel': holds <U1, not numbers \(could not conv"):
        next(iter(stream.frames()))
