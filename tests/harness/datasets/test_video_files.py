"""Video files at their own frame rate (issue 37 item 2): clips the tests encode with PyAV at 25, 30 and
60 frames/s and at a variable frame rate, labels by each frame's overlap or per frame, the pixels decoded
as arrays, and the decoding done before the first ``predict()`` is timed (in this process and for a
sealed worker, whose parent decodes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streambench.adapters.contract import AdapterInfo, Frame, Prediction, PredictOutput, StreamingAdapter
from streambench.harness.datasets import video_files
from streambench.harness.datasets.catalog import make_streams, make_warmup_stream
from streambench.harness.datasets.video_files import VideoFileError
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.frame_server import FrameServer
from tests.data.clips import encode_clip, levels

BRIGHTNESS = list(range(0, 240, 20))  # 12 frames


def data(**fields: Any) -> Any:
    return RunConfig.model_validate({"data": {"kind": "video_files", **fields}}).data


@pytest.mark.parametrize("fps", [25, 30, 60])
def test_frames_arrive_at_the_videos_own_rate_with_their_pixels_and_labels(tmp_path: Path, fps: int) -> None:
    encode_clip(tmp_path / "clip.mkv", levels(BRIGHTNESS), fps=fps)
    (tmp_path / "clip.txt").write_text(f"{3 / fps}\t{8 / fps}\tflash\n")  # frames 3-7, whole
    (stream,) = make_streams(data(directory=str(tmp_path)))
    assert stream.classes == ("background", "flash") and stream.modalities == ("visual",)
    # frame i arrives at (i + 1) / fps, to the container's 1 ms time base
    np.testing.assert_allclose(stream.frame_times, np.arange(1, 13) / fps, atol=1.5e-3)
    np.testing.assert_array_equal(np.flatnonzero(stream.labels[:, 1]), [3, 4, 5, 6, 7])
    frames = list(stream.frames())
    assert frames[0].inputs["visual"].shape == (24, 32, 3) and frames[0].inputs["visual"].dtype == np.uint8
    np.testing.assert_allclose([f.inputs["visual"].mean() for f in frames], BRIGHTNESS, atol=1.5)
    assert stream.meta["frame_rate_hz"] == pytest.approx(fps) and not stream.meta["variable_frame_rate"]


def test_a_variable_frame_rate_keeps_every_frames_own_time(tmp_path: Path) -> None:
    times_ms = [0, 33, 66, 116, 200]
    encode_clip(tmp_path / "vfr.mkv", levels([0, 50, 100, 150, 200]), times_ms=times_ms)
    (tmp_path / "vfr.csv").write_text("onset,offset,label\n0.066,0.2,wave\n")
    config = data(files=[{"video": str(tmp_path / "vfr.mkv"), "labels": str(tmp_path / "vfr.csv")}])
    (stream,) = make_streams(config)
    # each frame lasts until the next one's timestamp; the last one the median period (41.5 ms)
    np.testing.assert_allclose(stream.frame_times, [0.033, 0.066, 0.116, 0.2, 0.2415])
    assert stream.labels[:, 1].tolist() == [False, False, True, True, False]
    assert stream.meta["variable_frame_rate"]


def test_scaled_grey_float_frames_and_per_frame_label_arrays(tmp_path: Path) -> None:
    encode_clip(tmp_path / "c.mkv", levels(BRIGHTNESS), fps=30)
    np.save(tmp_path / "c.npy", np.array([0] * 6 + [1] * 6))
    config = data(
        directory=str(tmp_path),
        width=16,
        height=12,
        pixel_format="gray",
        dtype="float32",
        classes=["bg", "on"],
        background_class="bg",
    )
    (stream,) = make_streams(config)
    frames = list(stream.frames())
    assert frames[5].inputs["visual"].shape == (12, 16) and frames[5].inputs["visual"].dtype == np.float32
    assert frames[5].inputs["visual"].mean() == pytest.approx(100 / 255, abs=0.01)
    assert stream.labels[:, 1].tolist() == [False] * 6 + [True] * 6
    warm = make_warmup_stream(config, 3)  # noise of the scaled shape at the clip's period, no scored frame
    noise = next(iter(warm.frames())).inputs["visual"]
    assert noise.shape == (12, 16) and noise.dtype == np.float32
    np.testing.assert_allclose(warm.frame_times, np.arange(1, 4) / 30, atol=1.5e-3)


def test_errors_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "not-video.mp4").write_bytes(b"not a video at all")
    (tmp_path / "not-video.txt").write_text("")
    with pytest.raises(VideoFileError, match=r"not-video\.mp4: cannot be read as video"):
        make_streams(data(directory=str(tmp_path)))
    (tmp_path / "not-video.mp4").unlink()
    encode_clip(tmp_path / "bare.mkv", levels([0, 10]), fps=30)
    with pytest.raises(VideoFileError, match=r"bare\.mkv: has no label file"):
        make_streams(data(directory=str(tmp_path)))
    np.save(tmp_path / "bare.npy", np.array([0, 1]))
    with pytest.raises(VideoFileError, match=r"bare\.npy: per-frame label arrays need data\.classes"):
        make_streams(
            data(files=[{"video": str(tmp_path / "bare.mkv"), "labels": str(tmp_path / "bare.npy")}])
        )
    with pytest.raises(ValueError, match="give both width and height"):
        data(directory=str(tmp_path), width=10)


class _Watch(StreamingAdapter):
    """Records how many frames of the stream had been decoded when each predict() was called."""

    def __init__(self, decoded: list[int], seen: list[int]) -> None:
        super().__init__()
        self._decoded, self.seen = decoded, seen

    @property
    def info(self) -> AdapterInfo:
        return AdapterInfo(name="watch", classes=("background", "flash"), modalities=("visual",))

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> PredictOutput:
        self.seen.append(self._decoded[0])
        return Prediction(scores=np.array([1.0, 0.0], dtype=np.float32))


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    decoded = [0]
    real = video_files._decode

    def counted(*args: Any) -> Any:
        for pixels in real(*args):
            decoded[0] += 1
            yield pixels

    monkeypatch.setattr(video_files, "_decode", counted)
    return decoded


def test_every_frame_is_decoded_before_the_first_predict_is_timed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encode_clip(tmp_path / "clip.mkv", levels(BRIGHTNESS), fps=30)
    (tmp_path / "clip.txt").write_text("0.1\t0.2\tflash\n")
    (stream,) = make_streams(data(directory=str(tmp_path)))
    decoded = _counting(monkeypatch)
    seen: list[int] = []
    recording = Engine(_Watch(decoded, seen), EngineConfig(warmup_frames=0)).run_stream(stream)
    assert recording.num_frames == 12 and seen == [12] * 12  # in this process: all decoded, then timed
    decoded[0] = 0
    server = FrameServer()
    server.queue(stream)  # a sealed worker's parent: the stream decoded when queued, before any frame is sent
    assert decoded[0] == 12
    server.next_frame()
    assert decoded[0] == 12
