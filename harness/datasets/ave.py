"""The AVE data set from its released features (seed 004 §6.1.1; Tian et al., ECCV 2018).

Files, as released with the authors' code (github.com/YapengTian/AVE-ECCV18):

- ``Annotations.txt``: one sample per line, ``Category&VideoID&Quality&StartTime&EndTime`` (read by
  :func:`streambench.harness.io.annotations.read_ave_annotations`);
- ``audio_feature.h5``: dataset ``avadataset`` of shape ``[N, 10, 128]`` (VGGish, one vector per 1 s
  segment) and ``visual_feature.h5``: ``avadataset`` of shape ``[N, 10, 7, 7, 512]`` (VGG-19 pool5 maps).
  Row ``i`` of both files is the sample on line ``i`` of ``Annotations.txt`` (header line not counted):
  the authors' loaders and split orders (``*_order.h5``) index features and annotations with the same
  number. ``N`` must equal the number of annotations. Already pooled visual features ``[N, 10, D]`` (the
  authors' ``visual_feature_vec.h5``) are accepted too;
- optional split file (``trainSet.txt`` / ``valSet.txt`` / ``testSet.txt``, same format): only its
  samples are streamed, in its order; each line must match an annotation line exactly.

One stream per sample, id = its YouTube id (``<id>#<row>`` when a video has several samples): 10 frames,
one per 1 s segment (``segment_length_s = 1``, frame ``s`` arrives at ``s + 1`` s),
``inputs={"audio": float32 [128], "visual": float32 [512]}`` — the 7x7 spatial mean of the visual map
(``visual_pool="mean"``) or the flattened map ``[25088]`` (``"flatten"``). 29 classes:
``"background"`` (class 0, the harness convention; the authors' ``labels.h5`` puts it last) and the 28
AVE categories in the authors' order (:data:`AVE_CATEGORIES`). Segment ``s`` has the sample's category
when ``StartTime <= s < EndTime``, background otherwise (one class per segment).

Errors: a malformed or inconsistent annotation / split file raises
:class:`~streambench.harness.io.annotations.AnnotationFileError` (file and line); a feature file that cannot
be read or has the wrong layout :class:`FeatureFileError` (file and dataset). Features are read when a
stream's ``frame_source`` is called, one row at a time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.adapters.contract import Frame, Stream
from streambench.harness.io.annotations import AnnotationFileError, AveAnnotation, read_ave_annotations

__all__ = [
    "AVE_CATEGORIES",
    "AVE_CLASSES",
    "AveConfig",
    "FeatureFileError",
    "concatenated_warmup",
    "streams",
    "warmup_stream",
]

AVE_CATEGORIES: tuple[str, ...] = (
    "Church bell",
    "Male speech, man speaking",
    "Bark",
    "Fixed-wing aircraft, airplane",
    "Race car, auto racing",
    "Female speech, woman speaking",
    "Helicopter",
    "Violin, fiddle",
    "Flute",
    "Ukulele",
    "Frying (food)",
    "Truck",
    "Shofar",
    "Motorcycle",
    "Acoustic guitar",
    "Train horn",
    "Clock",
    "Banjo",
    "Goat",
    "Baby cry, infant cry",
    "Bus",
    "Chainsaw",
    "Cat",
    "Horse",
    "Toilet flush",
    "Rodents, rats, mice",
    "Accordion",
    "Mandolin",
)
"""The 28 AVE event categories in the order of the authors' label index (``labels.h5`` columns 0-27)."""

AVE_CLASSES: tuple[str, ...] = ("background", *AVE_CATEGORIES)
NUM_SEGMENTS = 10


class FeatureFileError(ValueError):
    """A feature file (HDF5 or ``.npy``) that cannot be read or does not have the documented layout."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{os.fspath(path)}: {problem}")


class AveConfig(BaseModel):
    """The AVE data set: annotation file, the two released HDF5 feature files, an optional split file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["ave"] = "ave"
    annotations: Path = Field(description="Annotations.txt")
    audio_features: Path = Field(description="audio_feature.h5, [N, 10, 128]")
    visual_features: Path = Field(description="visual_feature.h5, [N, 10, 7, 7, 512] (or [N, 10, D])")
    split: Path | None = Field(None, description="trainSet.txt / valSet.txt / testSet.txt (None: all)")
    visual_pool: Literal["mean", "flatten"] = Field(
        "mean", description="mean: the 7x7 spatial mean, [512]; flatten: the whole map, [25088]"
    )
    dataset: str = Field("avadataset", min_length=1, description="name of the HDF5 dataset in both files")


def _h5py() -> Any:
    try:
        import h5py
    except ImportError as exc:  # pragma: no cover - the dev install has it
        raise ImportError("AVE features need the h5py package: pip install 'streambench[data]'") from exc
    return h5py


def _feature_shape(path: Path, dataset: str) -> tuple[int, ...]:
    """The shape of ``dataset`` in the HDF5 file ``path``, or :class:`FeatureFileError`."""
    h5py = _h5py()
    try:
        with h5py.File(os.fspath(path), "r") as handle:
            if dataset not in handle:
                raise FeatureFileError(path, f"has no dataset {dataset!r} (it has {sorted(handle.keys())})")
            node = handle[dataset]
            if not isinstance(node, h5py.Dataset):
                raise FeatureFileError(path, f"{dataset!r} is a group, not a dataset")
            return tuple(int(n) for n in node.shape)
    except FeatureFileError:
        raise
    except Exception as exc:  # h5py reports bad files as OSError, KeyError, ValueError, RuntimeError
        raise FeatureFileError(path, f"cannot be read as HDF5 ({exc})") from None


def _read_row(path: Path, dataset: str, row: int) -> np.ndarray:
    h5py = _h5py()
    try:
        with h5py.File(os.fspath(path), "r") as handle:
            return np.asarray(handle[dataset][row], dtype=np.float32)
    except Exception as exc:
        raise FeatureFileError(path, f"row {row} of {dataset!r} cannot be read ({exc})") from None


def _selection(config: AveConfig, samples: list[AveAnnotation]) -> list[int]:
    """Rows to stream: all, or those of the split file in its order."""
    if config.split is None:
        return list(range(len(samples)))
    row_of: dict[AveAnnotation, int] = {}
    for row, sample in enumerate(samples):
        row_of.setdefault(sample, row)
    rows = []
    for sample in read_ave_annotations(config.split):
        if sample not in row_of:
            raise AnnotationFileError(
                config.split, sample.line, f"sample {sample.video_id!r} is not in {config.annotations}"
            )
        rows.append(row_of[sample])
    return rows


def _check_layout(config: AveConfig, num_samples: int) -> None:
    audio = _feature_shape(config.audio_features, config.dataset)
    visual = _feature_shape(config.visual_features, config.dataset)
    if len(audio) != 3 or audio[1] != NUM_SEGMENTS:
        raise FeatureFileError(
            config.audio_features, f"{config.dataset!r} has shape {audio}, expected [N, {NUM_SEGMENTS}, D]"
        )
    if len(visual) not in (3, 5) or visual[1] != NUM_SEGMENTS:
        raise FeatureFileError(
            config.visual_features,
            f"{config.dataset!r} has shape {visual}, expected [N, {NUM_SEGMENTS}, H, W, C] or [N, 10, D]",
        )
    for path, shape in ((config.audio_features, audio), (config.visual_features, visual)):
        if shape[0] != num_samples:
            raise FeatureFileError(
                path, f"has {shape[0]} rows but {config.annotations} has {num_samples} samples"
            )


def _pool(visual: np.ndarray, mode: str) -> np.ndarray:
    """``[10, H, W, C]`` → ``[10, C]`` (mean) or ``[10, H*W*C]`` (flatten); ``[10, D]`` unchanged."""
    if visual.ndim == 2:
        return visual
    if mode == "mean":
        return visual.mean(axis=(1, 2), dtype=np.float64).astype(np.float32)
    return visual.reshape(visual.shape[0], -1)


def streams(config: AveConfig) -> list[Stream]:
    """One stream per sample (of the split file, when given)."""
    samples = read_ave_annotations(config.annotations)
    for sample in samples:
        if sample.category not in AVE_CATEGORIES:
            raise AnnotationFileError(
                config.annotations, sample.line, f"unknown AVE category {sample.category!r}"
            )
        if sample.end_s > NUM_SEGMENTS:
            raise AnnotationFileError(
                config.annotations, sample.line, f"EndTime {sample.end_s} is past the {NUM_SEGMENTS} s video"
            )
    rows = _selection(config, samples)
    _check_layout(config, len(samples))
    per_video: dict[str, int] = {}
    for sample in samples:
        per_video[sample.video_id] = per_video.get(sample.video_id, 0) + 1
    out = []
    frame_times = np.arange(1, NUM_SEGMENTS + 1, dtype=np.float64)
    for row in rows:
        sample = samples[row]
        labels = np.zeros((NUM_SEGMENTS, len(AVE_CLASSES)), dtype=bool)
        labels[:, 0] = True
        labels[sample.start_s : sample.end_s, 0] = False
        labels[sample.start_s : sample.end_s, AVE_CLASSES.index(sample.category)] = True
        stream_id = sample.video_id if per_video[sample.video_id] == 1 else f"{sample.video_id}#{row}"
        out.append(
            Stream(
                stream_id=stream_id,
                classes=AVE_CLASSES,
                labels=labels,
                frame_times=frame_times,
                frame_source=_frame_source(config, row, frame_times),
                modalities=("audio", "visual"),
                t0=0.0,
                segment_length_s=1.0,
                meta={
                    "video_id": sample.video_id,
                    "row": row,
                    "category": sample.category,
                    "start_s": sample.start_s,
                    "end_s": sample.end_s,
                    "annotation_line": sample.line,
                    "source": os.fspath(config.annotations),
                },
            )
        )
    return out


def _frame_source(config: AveConfig, row: int, frame_times: np.ndarray) -> Any:
    def frame_source() -> Iterator[Frame]:
        audio = _read_row(config.audio_features, config.dataset, row)
        visual = _pool(_read_row(config.visual_features, config.dataset, row), config.visual_pool)
        for s in range(NUM_SEGMENTS):
            yield Frame(
                index=s,
                t=float(frame_times[s]),
                inputs={"audio": np.ascontiguousarray(audio[s]), "visual": np.ascontiguousarray(visual[s])},
            )

    return frame_source


def concatenated_warmup(scored: Sequence[Stream], num_frames: int, stream_id: str) -> Stream:
    """A warm-up stream of at least ``num_frames`` frames: ``scored`` streams' frames end to end.

    The streams are taken in order, cycling, until ``num_frames`` is reached; times and indices run on
    across them (each stream's ``t0`` shifted to the end of the previous one). Unscored: it only has the
    payloads a real stream has, so the model meets real input shapes and values before timing starts.
    """
    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    if not scored:
        raise ValueError("no streams to build a warm-up stream from")
    chosen: list[Stream] = []
    total = 0
    while total < num_frames:
        chosen.append(scored[len(chosen) % len(scored)])
        total += chosen[-1].num_frames
    offsets = np.cumsum([0.0] + [s.duration_s for s in chosen[:-1]])
    times = np.concatenate([s.frame_times - s.t0 + off for s, off in zip(chosen, offsets, strict=True)])
    labels = np.concatenate([s.labels for s in chosen])

    def frame_source() -> Iterator[Frame]:
        index = 0
        for stream in chosen:
            for frame in stream.frames():
                yield Frame(index=index, t=float(times[index]), inputs=frame.inputs)
                index += 1

    first = chosen[0]
    return Stream(
        stream_id=stream_id,
        classes=first.classes,
        labels=labels,
        frame_times=times,
        frame_source=frame_source,
        modalities=first.modalities,
        t0=0.0,
        segment_length_s=first.segment_length_s,
        meta={"warmup": "concatenated", "streams": [s.stream_id for s in chosen]},
    )


def warmup_stream(config: AveConfig, num_frames: int) -> Stream:
    """``ave-warmup``: the selected samples' frames end to end (see :func:`concatenated_warmup`)."""
    return concatenated_warmup(streams(config), num_frames, "ave-warmup")
