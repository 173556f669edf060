"""Per-frame feature arrays as streams: log-mel frames, an upstream encoder's embeddings, sensor
rows — any ``[T, ...]`` array a model reads one row per frame.

- **Files** (:mod:`streambench.harness.datasets.array_files`): a ``.npy`` file is one stream of one array,
  fed as the modality ``modality``; an ``.npz`` file is one stream, each of its arrays a modality (its
  key); an HDF5 file is one stream of its top-level datasets, or one stream per top-level group. The arrays
  ``labels_key`` and ``timestamps_key`` are not modalities; ``modalities`` picks and orders the others.
  Give ``files`` (``{features, labels}`` pairs) or a ``directory`` (every ``.npy`` / ``.npz`` / ``.h5`` /
  ``.hdf5`` in it, sorted, each with the label file of its stem, if any). Stream id: the file's stem, or
  the HDF5 group's name.
- **Frames.** Row ``i`` of every modality's array is frame ``i``'s payload, float32 (``[D]`` for ``[T, D]``,
  ``[...]`` for ``[T, ...]``); every modality has the same ``T``. Frame times: the stream's own
  ``timestamps_key`` array (``[T]``, seconds, each frame's arrival — the end of its capture interval — after
  the stream's start at 0, strictly increasing: a variable frame rate), else ``frame_rate_hz`` (frame ``i``
  arrives at ``(i + 1) / frame_rate_hz``); neither is an error naming the file.
- **Labels** (:mod:`streambench.harness.datasets.frame_labels`): exactly one source per stream — the file's
  ``labels_key`` array, or the ``labels`` of the pair (an event list ``.txt`` / ``.labels`` / ``.csv``, or a
  per-frame ``.npy`` array), or in a directory the event list of the same stem.
- **Laziness.** :func:`streams` reads array headers, the timestamps and the labels; the payload arrays are
  read when a stream's ``frame_source`` is called (the engine then seals every frame before the first
  ``predict()`` is timed).

Errors (:class:`~streambench.harness.datasets.array_files.ArrayFileError`, a ValueError) name the file, the
HDF5 group and the array key, and the configuration field to change. The warm-up stream
(:func:`warmup_stream`) is seeded standard-normal noise of the first stream's payload shapes at its frame
period: it reads no scored frame.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.array_files import (
    ARRAY_SUFFIXES,
    ArrayFileError,
    ArrayStream,
    array_streams,
)
from streambench.harness.datasets.audio_labels import read_labels
from streambench.harness.datasets.frame_labels import (
    ARRAY_LABEL_SUFFIX,
    EVENT_SUFFIXES,
    FrameLabelOptions,
    class_names,
    events_to_labels,
    labelled_files,
    labels_of_array,
    labels_of_npy,
    noise_warmup,
    one_source,
    typed_label_file,
)

__all__ = ["FeatureArraysConfig", "FeatureFile", "classes", "streams", "warmup_stream"]

WARMUP_SEED = 2**31 - 3


class FeatureFile(BaseModel):
    """One feature file and, optionally, its labels (an event list, or a per-frame ``.npy`` array)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    features: Path
    labels: Path | None = None

    _labels = field_validator("labels")(typed_label_file)


class FeatureArraysConfig(FrameLabelOptions):
    """Per-frame arrays from ``.npy`` / ``.npz`` / HDF5 files, with labels (module docstring)."""

    kind: Literal["feature_arrays"] = "feature_arrays"
    files: tuple[FeatureFile, ...] = Field(
        (), description="{features, labels} pairs: an array file and its event list or .npy label array"
    )
    directory: Path | None = Field(
        None, description="every .npy/.npz/.h5/.hdf5 in it with the same-stem .txt/.labels/.csv, if any"
    )
    frame_rate_hz: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="frames per second; None: each file's timestamps_key"
    )
    modality: str = Field("features", min_length=1, description="the modality a .npy file's array is fed as")
    modalities: tuple[str, ...] | None = Field(
        None,
        min_length=1,
        description="the arrays fed, in order; None: every array but labels and timestamps",
    )
    labels_key: str = Field("labels", min_length=1, description="the per-frame label array in a file")
    timestamps_key: str = Field("timestamps", min_length=1, description="the frames' arrival times in a file")

    @model_validator(mode="after")
    def _one_source(self) -> FeatureArraysConfig:
        one_source(self.files, self.directory, "features/labels")
        return self


def _sources(config: FeatureArraysConfig) -> list[tuple[ArrayStream, Path | None]]:
    """Every stream of the files, with its external label file (None: none)."""
    if config.directory is not None:
        paired = labelled_files(config.directory, ARRAY_SUFFIXES, EVENT_SUFFIXES, ArrayFileError)
    else:
        paired = [(f.features, f.labels) for f in config.files]
    found: list[tuple[ArrayStream, Path | None]] = []
    seen: dict[str, ArrayStream] = {}
    for path, labels in paired:
        inside = array_streams(path, config.modality)
        if labels is not None and len(inside) > 1:
            raise ArrayFileError(
                path,
                f"holds {len(inside)} streams (groups) but one label file {labels}: store each group's "
                f"labels as its {config.labels_key!r} dataset",
            )
        for stream in inside:
            if stream.stream_id in seen:
                raise ArrayFileError(
                    stream.where, f"stream id {stream.stream_id!r} is taken by {seen[stream.stream_id].where}"
                )
            seen[stream.stream_id] = stream
            found.append((stream, labels))
    return found


def _label_source(config: FeatureArraysConfig, stream: ArrayStream, labels: Path | None) -> str:
    """Where a stream's labels are: ``"array"`` (in the file), ``"npy"`` or ``"events"`` (the label file)."""
    inside = config.labels_key in stream.shapes and stream.bare_key is None
    if inside and labels is not None:
        raise ArrayFileError(
            stream.where, f"labels twice: the array {config.labels_key!r} and the file {labels}; keep one"
        )
    if inside:
        return "array"
    if labels is None:
        raise ArrayFileError(
            stream.where,
            f"has no labels: store a per-frame array {config.labels_key!r} (data.labels_key) in it, or give "
            "a label file (.txt/.labels/.csv events, or .npy per frame) as its pair's labels, or put one of "
            "the same stem beside it",
        )
    return "npy" if labels.suffix.lower() == ARRAY_LABEL_SUFFIX else "events"


def _payload_keys(config: FeatureArraysConfig, stream: ArrayStream) -> tuple[list[str], int]:
    """The modalities fed (their array keys) and their common length ``T``."""
    special = {config.labels_key, config.timestamps_key} if stream.bare_key is None else set()
    keys = (
        list(config.modalities)
        if config.modalities is not None
        else [k for k in stream.shapes if k not in special]
    )
    missing = [k for k in keys if k not in stream.shapes]
    if missing or not keys:
        held = ", ".join(f"{k} {list(s)}" for k, s in stream.shapes.items())
        problem = (
            f"no array {missing[0]!r} (data.modalities); it holds: {held}"
            if missing
            else f"holds no feature array besides labels and timestamps (it holds: {held})"
        )
        raise ArrayFileError(stream.where, problem)
    lengths = {k: stream.shapes[k][0] if stream.shapes[k] else 0 for k in keys}
    for key, length in lengths.items():
        if not stream.shapes[key] or length == 0:
            raise ArrayFileError(
                stream.where, f"shape {list(stream.shapes[key])}: no frames ([T, ...], T >= 1)", key
            )
    if len(set(lengths.values())) > 1:
        raise ArrayFileError(
            stream.where, f"modalities of different lengths {lengths}: one row per frame in each"
        )
    return keys, next(iter(lengths.values()))


def _frame_times(config: FeatureArraysConfig, stream: ArrayStream, num_frames: int) -> tuple[np.ndarray, str]:
    """The arrival times of the stream's frames and where they came from (module docstring)."""
    key = config.timestamps_key
    if key in stream.shapes and stream.bare_key is None:
        times = np.asarray(stream.load(key), dtype=np.float64)
        if times.shape != (num_frames,):
            raise ArrayFileError(
                stream.where, f"shape {list(times.shape)}, expected [{num_frames}] (one per frame)", key
            )
        if not np.all(np.isfinite(times)) or np.any(np.diff(times) <= 0) or times[0] <= 0:
            raise ArrayFileError(
                stream.where,
                "timestamps must be finite, strictly increasing and after 0: each frame's arrival (the end "
                f"of its capture interval) in seconds from the stream's start (first: {times[0]:g} s; if "
                "these are start times, add one frame period)",
                key,
            )
        return times, f"timestamps ({key})"
    if config.frame_rate_hz is None:
        raise ArrayFileError(
            stream.where,
            f"no frame times: set data.frame_rate_hz, or store each frame's arrival time (s) as {key!r} "
            "(data.timestamps_key)",
        )
    return np.arange(1, num_frames + 1, dtype=np.float64) / config.frame_rate_hz, "frame_rate_hz"


def _make_stream(
    config: FeatureArraysConfig,
    stream: ArrayStream,
    label_file: Path | None,
    names: tuple[str, ...],
    spans: list[Any] | None,
) -> Stream:
    keys, num_frames = _payload_keys(config, stream)
    times, timing = _frame_times(config, stream, num_frames)
    source = _label_source(config, stream, label_file)
    if source == "events":
        assert label_file is not None and spans is not None
        labels = events_to_labels(spans, label_file, stream.path, "features", names, config, times, 0.0)
    elif source == "array":
        labels = labels_of_array(
            stream.load(config.labels_key), stream.where, config.labels_key, names, num_frames
        )
    else:
        assert label_file is not None
        labels = labels_of_npy(label_file, names, num_frames)
    shapes = {k: list(stream.shapes[k][1:]) for k in keys}

    def frame_source() -> Iterator[Frame]:
        arrays = [_numbers(stream, k) for k in keys]
        for i in range(num_frames):
            yield Frame(
                index=i, t=float(times[i]), inputs={k: a[i] for k, a in zip(keys, arrays, strict=True)}
            )

    labels_source = str(label_file) if label_file is not None else f"{stream.where}:{config.labels_key}"
    meta: dict[str, Any] = {"source": stream.where, "labels_source": labels_source, "timing": timing}
    meta["payload_shapes"] = shapes
    return Stream(
        stream_id=stream.stream_id,
        classes=names,
        labels=labels,
        frame_times=times,
        frame_source=frame_source,
        modalities=tuple(keys),
        t0=0.0,
        segment_length_s=config.segment_length_s,
        meta=meta,
    )


def _read(
    config: FeatureArraysConfig,
) -> tuple[list[tuple[ArrayStream, Path | None]], tuple[str, ...], list[Any]]:
    """The streams' sources, the class names and each stream's spans (None: its labels are an array)."""
    sources = _sources(config)
    kinds = [_label_source(config, stream, labels) for stream, labels in sources]
    spans = [
        read_labels(labels) if kind == "events" and labels is not None else None
        for (_, labels), kind in zip(sources, kinds, strict=True)
    ]
    if config.classes is None and any(each is None for each in spans):
        first = next(s for (s, _), each in zip(sources, spans, strict=True) if each is None)
        raise ArrayFileError(
            first.where, "per-frame label arrays need data.classes (the names of their columns or indices)"
        )
    names = class_names(config, [each for each in spans if each is not None])
    return sources, names, spans


def classes(config: FeatureArraysConfig) -> tuple[str, ...]:
    """The class list of the data set (reads the label files when ``config.classes`` is unset)."""
    return config.classes if config.classes is not None else _read(config)[1]


def streams(config: FeatureArraysConfig) -> list[Stream]:
    """One stream per file (per HDF5 group), in the order of ``files`` (or of the sorted names)."""
    sources, names, spans = _read(config)
    return [
        _make_stream(config, stream, labels, names, each)
        for (stream, labels), each in zip(sources, spans, strict=True)
    ]


def warmup_stream(config: FeatureArraysConfig, num_frames: int) -> Stream:
    """Seeded standard-normal noise of the first stream's payload shapes at its frame period (module
    docstring), as ``features-warmup``."""
    first = streams(config)[0]

    def draw(rng: np.random.Generator, shape: list[int]) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    shapes = first.meta["payload_shapes"]
    warm = noise_warmup(first, num_frames, shapes, draw, WARMUP_SEED, config.background_class)
    warm.stream_id = "features-warmup"
    return warm


def _numbers(stream: ArrayStream, key: str) -> np.ndarray:
    """The array ``key`` of ``stream``'s file as float32 frames; an array of text or objects is an
    :class:`ArrayFileError` naming the file and the array."""
    raw = stream.load(key)
    try:
        return np.asarray(raw, dtype=np.float32)
    except (ValueError, TypeError) as exc:
        raise ArrayFileError(stream.where, f"holds {raw.dtype}, not numbers ({exc})", key) from None
