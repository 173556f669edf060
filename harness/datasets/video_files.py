"""Video files as streams, at their own frame rate: a video classifier fed one decoded frame at a
time, 25, 30 or 60 frames/s, or a variable frame rate by the frames' own timestamps.

- **Decoding** by PyAV (FFmpeg's libraries; ``pip install 'streambench[video]'``): the first video stream
  of each file, every frame in presentation order, converted to ``pixel_format`` (``rgb24``: payload uint8
  ``[H, W, 3]``; ``gray``: ``[H, W]``), scaled to ``width`` x ``height`` when both are given (FFmpeg's
  swscale), as float32 in [0, 1] with ``dtype = "float32"``. The payload's modality is ``modality``
  (``visual``).
- **Frame times** from the presentation timestamps (read without decoding, from the demuxed packets): frame
  ``i``'s capture interval runs from its own timestamp to the next frame's, measured from the first
  frame's (the stream starts at 0); the last frame lasts the median frame period. So frame ``i`` of a
  30 frames/s video arrives at ``(i + 1) / 30`` s, and a variable frame rate keeps every frame's own time.
  Two frames with one timestamp are an error naming the file.
- **The decode cost is outside every timed window**: a stream's frames are decoded when its
  ``frame_source`` is called, and the engine seals (copies) every frame of a stream before the first
  ``predict()`` is timed; a sealed worker gets each frame already decoded from the parent, which decodes
  the stream before its first frame is fed (harness/execution/frame_server.py). The decoded frame count
  and timestamps must match the demuxed ones, or the stream fails naming the file.
- **Labels** (:mod:`streambench.harness.datasets.frame_labels`): an event list (``.txt`` / ``.labels`` /
  ``.csv``, seconds from the video's first frame) by each frame's overlap, or a per-frame ``.npy`` array.
  Give ``files`` (``{video, labels}`` pairs) or a ``directory``: every ``.mp4`` / ``.mkv`` / ``.avi`` /
  ``.mov`` / ``.webm`` / ``.m4v`` in it, sorted, with the label file of its stem. Stream id: the file's stem.

The warm-up stream is seeded noise of the first video's frame shape at its frame period (no scored frame
is decoded for it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.audio_labels import read_labels
from streambench.harness.datasets.frame_labels import (
    ARRAY_LABEL_SUFFIX,
    EVENT_SUFFIXES,
    FrameLabelOptions,
    class_names,
    events_to_labels,
    labelled_files,
    labels_of_npy,
    noise_warmup,
    one_source,
    typed_label_file,
)
from streambench.harness.io.labels import LabelSpan

__all__ = [
    "VIDEO_SUFFIXES",
    "VideoFileError",
    "VideoFilesConfig",
    "VideoLabelPair",
    "streams",
    "warmup_stream",
]

VIDEO_SUFFIXES = (".mp4", ".mkv", ".avi", ".mov", ".webm", ".m4v")
"""The files a ``directory`` is searched for."""
WARMUP_SEED = 2**31 - 5


class VideoFileError(ValueError):
    """A video file that cannot be used: unreadable, without a video stream or frames, or decoded otherwise
    than demuxed."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        super().__init__(f"{os.fspath(path)}: {problem}")


class VideoLabelPair(BaseModel):
    """One video and its labels: an event list (``.txt`` / ``.labels`` / ``.csv``) or a ``.npy`` array."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    video: Path
    labels: Path

    _labels = field_validator("labels")(typed_label_file)


class VideoFilesConfig(FrameLabelOptions):
    """Video files decoded frame by frame at their own frame rate, with labels (module docstring)."""

    kind: Literal["video_files"] = "video_files"
    files: tuple[VideoLabelPair, ...] = Field(
        (), description="{video, labels} pairs: a video file and its event list or .npy label array"
    )
    directory: Path | None = Field(
        None, description="every .mp4/.mkv/.avi/.mov/.webm/.m4v in it with the same-stem labels"
    )
    pixel_format: Literal["rgb24", "gray"] = Field(
        "rgb24", description="rgb24: [H, W, 3] payloads; gray: [H, W]"
    )
    width: int | None = Field(None, gt=0, description="scale frames to this width (with height)")
    height: int | None = Field(None, gt=0, description="scale frames to this height (with width)")
    dtype: Literal["uint8", "float32"] = Field("uint8", description="uint8 pixels, or float32 in [0, 1]")
    modality: str = Field("visual", min_length=1, description="the modality the frames are fed as")

    @model_validator(mode="after")
    def _one_source(self) -> VideoFilesConfig:
        one_source(self.files, self.directory, "video/labels")
        if (self.width is None) != (self.height is None):
            raise ValueError("give both width and height to scale the frames, or neither")
        return self


def _av() -> Any:
    """The ``av`` module (PyAV, an optional dependency: ``pip install 'streambench[video]'``)."""
    try:
        import av
    except ImportError as exc:  # pragma: no cover - the dev install has it
        raise ImportError("video files need PyAV: pip install 'streambench[video]'") from exc
    return av


def _open(path: Path) -> tuple[Any, Any]:
    """The container and its first video stream, or :class:`VideoFileError`."""
    try:
        container = _av().open(os.fspath(path))
    except Exception as exc:  # PyAV raises av.error.* (OSError / ValueError subclasses) for unreadable files
        raise VideoFileError(path, f"cannot be read as video ({exc})") from None
    if not container.streams.video:
        container.close()
        raise VideoFileError(path, "holds no video stream")
    return container, container.streams.video[0]


def _probe(path: Path) -> tuple[np.ndarray, float, tuple[int, int], float | None]:
    """The frames' presentation timestamps in stream ticks (sorted, from the demuxed packets), the tick in
    seconds, the frame size ``(height, width)`` and the nominal frame rate."""
    container, video = _open(path)
    with container:
        size = (int(video.codec_context.height), int(video.codec_context.width))
        rate = video.average_rate or video.guessed_rate
        ticks = np.sort(
            np.array([p.pts for p in container.demux(video) if p.pts is not None], dtype=np.int64)
        )
        base = float(video.time_base)
    if ticks.size == 0:
        raise VideoFileError(path, "holds no video frame")
    if np.any(np.diff(ticks) <= 0):
        first = int(np.argmax(np.diff(ticks) <= 0))
        raise VideoFileError(
            path, f"frames {first} and {first + 1} share the timestamp {ticks[first] * base:g} s"
        )
    return ticks, base, size, float(rate) if rate else None


def _frame_times(path: Path, ticks: np.ndarray, base: float, rate: float | None) -> np.ndarray:
    starts = (ticks - ticks[0]) * base
    if ticks.size > 1:
        period = float(np.median(np.diff(starts)))
    elif rate:
        period = 1.0 / rate
    else:
        raise VideoFileError(path, "one frame and no frame rate: its duration is unknown")
    return np.append(starts[1:], starts[-1] + period)


def _decode(path: Path, config: VideoFilesConfig, ticks: np.ndarray) -> Iterator[np.ndarray]:
    """Every frame of the first video stream, converted (module docstring), checked against ``ticks``."""
    container, video = _open(path)
    scale = {"width": config.width, "height": config.height} if config.width is not None else {}
    count = 0
    with container:
        for frame in container.decode(video):
            if count >= ticks.size or frame.pts != ticks[count]:
                expected = ticks[count] if count < ticks.size else "none"
                raise VideoFileError(
                    path, f"decoded frame {count} has timestamp {frame.pts}, the demuxed packets {expected}"
                )
            pixels = frame.to_ndarray(format=config.pixel_format, **scale)
            yield pixels.astype(np.float32) / 255.0 if config.dtype == "float32" else pixels
            count += 1
    if count != ticks.size:
        raise VideoFileError(path, f"decoded {count} frames of the {ticks.size} demuxed")


def _pairs(config: VideoFilesConfig) -> list[tuple[Path, Path]]:
    if config.directory is None:
        return [(pair.video, pair.labels) for pair in config.files]
    found = labelled_files(
        config.directory, VIDEO_SUFFIXES, (*EVENT_SUFFIXES, ARRAY_LABEL_SUFFIX), VideoFileError
    )
    for video, labels in found:
        if labels is None:
            raise VideoFileError(video, "has no label file (.txt, .labels, .csv or .npy) with the same stem")
    return [(video, labels) for video, labels in found if labels is not None]


def _shape(config: VideoFilesConfig, size: tuple[int, int]) -> list[int]:
    height, width = size if config.width is None or config.height is None else (config.height, config.width)
    return [height, width, 3] if config.pixel_format == "rgb24" else [height, width]


def _make_stream(
    config: VideoFilesConfig,
    video: Path,
    label_file: Path,
    names: tuple[str, ...],
    spans: list[LabelSpan] | None,
) -> Stream:
    ticks, base, size, rate = _probe(video)
    times = _frame_times(video, ticks, base, rate)
    if spans is not None:
        labels = events_to_labels(spans, label_file, video, "video", names, config, times, 0.0)
    else:
        labels = labels_of_npy(label_file, names, ticks.size)
    modality = config.modality

    def frame_source() -> Iterator[Frame]:
        for i, pixels in enumerate(_decode(video, config, ticks)):
            yield Frame(index=i, t=float(times[i]), inputs={modality: pixels})

    periods = np.diff(times, prepend=0.0)
    spread = float(periods.max() - periods.min())  # beyond the container's rounding to its time base
    meta: dict[str, Any] = {
        "source": os.fspath(video),
        "labels_source": os.fspath(label_file),
        "frame_rate_hz": rate,
        "variable_frame_rate": spread > max(2 * base, 0.01 * float(periods.min())),
        "source_size": list(size),
        "payload_shape": _shape(config, size),
    }
    return Stream(
        stream_id=video.stem,
        classes=names,
        labels=labels,
        frame_times=times,
        frame_source=frame_source,
        modalities=(modality,),
        t0=0.0,
        segment_length_s=config.segment_length_s,
        meta=meta,
    )


def streams(config: VideoFilesConfig) -> list[Stream]:
    """One stream per video, in the order of ``files`` (or of the sorted names); the frames are decoded
    when a stream's ``frame_source`` is called."""
    pairs = _pairs(config)
    spans = [
        read_labels(labels) if labels.suffix.lower() != ARRAY_LABEL_SUFFIX else None for _, labels in pairs
    ]
    if config.classes is None and any(each is None for each in spans):
        raise VideoFileError(pairs[spans.index(None)][1], "per-frame label arrays need data.classes")
    names = class_names(config, [each for each in spans if each is not None])
    ids = [video.stem for video, _ in pairs]
    for video, _ in pairs:
        if ids.count(video.stem) > 1:
            raise VideoFileError(video, "two videos share the stem (stream id)")
    return [
        _make_stream(config, video, labels, names, each)
        for (video, labels), each in zip(pairs, spans, strict=True)
    ]


def warmup_stream(config: VideoFilesConfig, num_frames: int) -> Stream:
    """Seeded noise pixels of the first video's (scaled) frame shape at its frame period (module
    docstring), as ``video-warmup``."""
    first = streams(config)[0]
    floats = config.dtype == "float32"

    def draw(rng: np.random.Generator, shape: list[int]) -> np.ndarray:
        pixels = rng.integers(0, 256, size=shape, dtype=np.uint8)
        return pixels.astype(np.float32) / 255.0 if floats else pixels

    shapes = {config.modality: first.meta["payload_shape"]}
    warm = noise_warmup(first, num_frames, shapes, draw, WARMUP_SEED, config.background_class)
    warm.stream_id = "video-warmup"
    return warm
