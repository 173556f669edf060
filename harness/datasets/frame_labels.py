"""Labels of streams whose frames carry their own times (per-frame feature arrays, video): the options they
share, the two label sources, and the pairing of data files with label files in a directory.

- **Event lists**: an Audacity label track (``.txt``, ``.labels``) or ``onset,offset,label`` CSV
  (``.csv``), read by :func:`~streambench.harness.datasets.audio_labels.read_labels`. Frame ``i`` covers
  its capture interval, from the previous frame's arrival (the stream's start ``t0`` for frame 0) to its
  own, and gets class ``c`` when at least ``min_overlap`` of that interval lies inside the spans labelled
  ``c`` (:func:`~streambench.harness.datasets.audio_labels.interval_labels`: the rule of ``audio_files``,
  for frames of any length); a frame no span covers gets ``background_class``. A span ending after the
  stream is an error naming the label file's line.
- **Per-frame arrays**: ``[T]`` integer class indices (one class per frame) or ``[T, C]`` multi-hot
  (bool, or 0 / 1), columns in the order of ``classes``, which must then be given; ``T`` the stream's
  frame count. Taken as they are (the background column is not recomputed).

Class names (:func:`class_names`): ``classes`` when given (it must contain ``background_class``, unless
that is None); else ``background_class`` followed by every label the event files hold, sorted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.array_files import ArrayFileError
from streambench.harness.datasets.audio_labels import (
    LABEL_SUFFIXES,
    check_spans_inside_audio,
    interval_labels_from_file,
)
from streambench.harness.io.labels import LabelSpan

__all__ = [
    "ARRAY_LABEL_SUFFIX",
    "EVENT_SUFFIXES",
    "FrameLabelOptions",
    "capture_intervals",
    "class_names",
    "events_to_labels",
    "labelled_files",
    "labels_of_array",
    "labels_of_npy",
    "noise_warmup",
    "one_source",
    "typed_label_file",
]

EVENT_SUFFIXES = LABEL_SUFFIXES
"""Event-list label files: Audacity (``.txt``, ``.labels``) and CSV (``.csv``)."""
ARRAY_LABEL_SUFFIX = ".npy"
"""A per-frame label array in a file of its own (numpy's format)."""


class FrameLabelOptions(BaseModel):
    """The label options of the kinds whose frames carry their own times (module docstring)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    classes: tuple[str, ...] | None = Field(
        None,
        description="class names, in the order of a label array's columns or indices (required for label "
        "arrays); None with event files: (background_class, *sorted labels)",
    )
    background_class: str | None = Field(
        "background",
        min_length=1,
        description="the 'no event' class: frames no span covers get it, and F1 leaves it out; None: none",
    )
    min_overlap: float = Field(
        0.5, gt=0.0, le=1.0, description="share of a frame inside a span for the frame to get its label"
    )
    segment_length_s: float = Field(
        1.0,
        gt=0.0,
        allow_inf_nan=False,
        description="unit of the segment-level figures (1 s, AVE's segment, unless set)",
    )

    @model_validator(mode="after")
    def _classes_hold_the_background(self) -> FrameLabelOptions:
        if self.classes is not None:
            if len(set(self.classes)) != len(self.classes):
                raise ValueError(f"classes {self.classes} has duplicates")
            if self.background_class is not None and self.background_class not in self.classes:
                raise ValueError(
                    f"classes {self.classes} must contain background_class {self.background_class!r} "
                    "(or set background_class to null: no background, every class counts in F1)"
                )
        return self


def class_names(options: FrameLabelOptions, spans: Sequence[Sequence[LabelSpan]]) -> tuple[str, ...]:
    """The data's classes (module docstring)."""
    if options.classes is not None:
        return options.classes
    found = sorted({span.label for each in spans for span in each} - {options.background_class})
    names = (options.background_class, *found) if options.background_class is not None else tuple(found)
    if not names:
        raise ValueError("no class: the label files hold no label and background_class is null")
    return names


def capture_intervals(frame_times: np.ndarray, t0: float) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` of every frame's capture interval: from the previous arrival (``t0`` first)."""
    return np.concatenate(([t0], frame_times[:-1])), frame_times


def events_to_labels(
    spans: Sequence[LabelSpan],
    labels: Path,
    recording: Path,
    what: str,
    names: tuple[str, ...],
    options: FrameLabelOptions,
    frame_times: np.ndarray,
    t0: float,
) -> np.ndarray:
    """Multi-hot ``[T, C]`` labels of the frames from the spans of ``labels`` (module docstring); a span
    past the end of ``recording`` (a ``what``: features, video) or outside ``names`` is a
    :class:`~streambench.harness.io.labels.LabelFileError` naming the label file's line."""
    check_spans_inside_audio(spans, labels, recording, float(frame_times[-1]), what)
    starts, ends = capture_intervals(frame_times, t0)
    return interval_labels_from_file(
        spans, labels, names, options.background_class, starts, ends, options.min_overlap
    )


def labels_of_array(
    array: np.ndarray, where: str, key: str, names: tuple[str, ...], num_frames: int
) -> np.ndarray:
    """A per-frame label array as multi-hot ``[T, C]`` (module docstring); an
    :class:`~streambench.harness.datasets.array_files.ArrayFileError` naming ``where`` and ``key`` when its
    shape, values or length do not fit ``names`` and the ``num_frames`` of the stream."""
    array = np.asarray(array)
    if array.shape[:1] != (num_frames,):
        raise ArrayFileError(
            where, f"{array.shape[:1] or 'a scalar'} rows, the stream has {num_frames} frames", key
        )
    if array.ndim == 1:
        if array.dtype.kind not in "iu":
            raise ArrayFileError(where, f"[T] labels must be integer class indices, got {array.dtype}", key)
        bad = (array < 0) | (array >= len(names))
        if bad.any():
            first = int(np.argmax(bad))
            raise ArrayFileError(
                where,
                f"frame {first}: class index {int(array[first])} outside 0..{len(names) - 1} {names}",
                key,
            )
        return np.eye(len(names), dtype=bool)[array]
    if array.ndim == 2 and array.shape[1] == len(names):
        if array.dtype.kind not in "biuf" or not np.isin(array, (0, 1)).all():
            raise ArrayFileError(where, "[T, C] labels must be multi-hot: bool, or 0 and 1 only", key)
        return array.astype(bool)
    raise ArrayFileError(
        where,
        f"shape {list(array.shape)}: labels are [T] class indices or [T, C = {len(names)}] multi-hot",
        key,
    )


def labels_of_npy(path: Path, names: tuple[str, ...], num_frames: int) -> np.ndarray:
    """:func:`labels_of_array` of the array a ``.npy`` file holds, read errors naming the file."""
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ArrayFileError(path, f"cannot be read as a .npy label array ({exc})") from None
    return labels_of_array(array, str(path), "labels", names, num_frames)


def labelled_files(
    directory: Path,
    suffixes: Sequence[str],
    label_suffixes: Sequence[str],
    error: Callable[[Path, str], Exception],
) -> list[tuple[Path, Path | None]]:
    """Every file of ``directory`` ending in one of ``suffixes`` (sorted by name), each with the one file of
    the same stem ending in one of ``label_suffixes`` (None: it has none); two label files for one data
    file, or no data file, is ``error(path, problem)``."""
    if not directory.is_dir():
        raise error(directory, "is not a directory")
    wanted = {s.lower() for s in suffixes}
    found = sorted(p for p in directory.iterdir() if p.is_file() and p.suffix.lower() in wanted)
    if not found:
        raise error(directory, f"holds no {' / '.join(suffixes)} file")
    pairs: list[tuple[Path, Path | None]] = []
    for path in found:
        labels = [q for q in (path.with_suffix(s) for s in label_suffixes) if q.is_file()]
        if len(labels) > 1:
            named = ", ".join(os.fspath(q.name) for q in labels)
            raise error(path, f"has {len(labels)} label files of the same stem ({named}); keep one")
        pairs.append((path, labels[0] if labels else None))
    return pairs


def typed_label_file(value: Path | None) -> Path | None:
    """A pair's label file must be an event list or a ``.npy`` array: a ValueError naming it otherwise."""
    if value is not None and value.suffix.lower() not in (*EVENT_SUFFIXES, ARRAY_LABEL_SUFFIX):
        raise ValueError(
            f"label file {value} must end in .txt or .labels (Audacity labels), .csv (onset,offset,label) or "
            ".npy (a per-frame label array)"
        )
    return value


def one_source(files: Sequence[object], directory: Path | None, pairs: str) -> None:
    """Exactly one of ``files`` (``pairs``, e.g. video/labels) and ``directory``: a ValueError otherwise."""
    if bool(files) == (directory is not None):
        raise ValueError(f"give either files ({pairs} pairs) or directory, not both and not neither")


def noise_warmup(
    first: Stream,
    num_frames: int,
    shapes: dict[str, list[int]],
    draw: Callable[[np.random.Generator, list[int]], np.ndarray],
    seed: int,
    background: str | None,
) -> Stream:
    """``<kind>-warmup``: ``num_frames`` frames of seeded noise (``draw(rng, shape)`` per modality) with
    ``first``'s modalities, the payload ``shapes`` and ``first``'s median frame period; unscored,
    ``background`` (or no class) throughout. No scored frame is read for it."""
    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    period = float(np.median(np.diff(first.frame_times, prepend=first.t0)))
    times = np.arange(1, num_frames + 1, dtype=np.float64) * period
    labels = np.zeros((num_frames, len(first.classes)), dtype=bool)
    if background in first.classes:
        labels[:, first.classes.index(background)] = True
    modalities = first.modalities

    def frame_source() -> Iterator[Frame]:
        rng = np.random.default_rng(seed)
        for i in range(num_frames):
            yield Frame(i, float(times[i]), {m: draw(rng, shapes[m]) for m in modalities})

    return Stream(
        stream_id="warmup",
        classes=first.classes,
        labels=labels,
        frame_times=times,
        frame_source=frame_source,
        modalities=modalities,
        meta={"warmup": "noise"},
    )
