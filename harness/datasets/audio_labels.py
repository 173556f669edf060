"""The label files of audio recordings and the frame labels they give (the labels of
:mod:`streambench.harness.datasets.audio_files`, whose module docstring states the rule as its user sees it).

- **Files.** Audacity label tracks (``.txt``, or ``.labels`` as Audacity's label export may name it:
  :data:`AUDACITY_SUFFIXES`) or ``onset,offset,label`` CSV (``.csv``), both read by
  :mod:`streambench.harness.io.labels`; :data:`LABEL_SUFFIXES` are all of them. :func:`read_labels` picks
  the reader by suffix.
- **Spans inside the audio.** A span that ends more than 10 ms (label tools round times) after the
  recording's last sample is the wrong file or the wrong unit: :func:`check_spans_inside_audio` refuses it
  with :class:`~streambench.harness.io.labels.LabelFileError` naming the label file's line and the audio.
- **Frame labels by overlap.** :func:`frame_labels`: frame ``i`` covers ``[i * frame_s, min((i + 1) *
  frame_s, duration_s)]`` and gets class ``c`` when at least ``min_overlap`` of it lies inside the union of
  the spans labelled ``c``; a frame with no event class gets ``background_class``, a span labelled
  ``background_class`` marks nothing, a zero-length span covers no frame.
  :func:`frame_labels_from_file` turns a label outside the class list into the file's error, at its line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from streambench.harness.io.labels import LabelFileError, LabelSpan, read_audacity_labels, read_label_csv

__all__ = [
    "AUDACITY_SUFFIXES",
    "LABEL_SUFFIXES",
    "check_spans_inside_audio",
    "frame_labels",
    "frame_labels_from_file",
    "interval_labels",
    "interval_labels_from_file",
    "read_labels",
]

_TOLERANCE = 1e-9
_SPAN_TOLERANCE_S = 0.01  # label tools round times; a span may end this much after the last sample
AUDACITY_SUFFIXES = (".txt", ".labels")
"""Label files read as Audacity label tracks (tab-separated ``onset offset label``)."""
LABEL_SUFFIXES = (*AUDACITY_SUFFIXES, ".csv")
"""Every label file suffix the loader reads; ``.csv`` is ``onset,offset,label``."""


def read_labels(path: Path) -> list[LabelSpan]:
    """The spans of a label file: ``.csv`` as ``onset,offset,label``, any other suffix as Audacity labels."""
    return read_label_csv(path) if path.suffix.lower() == ".csv" else read_audacity_labels(path)


def check_spans_inside_audio(
    spans: Sequence[LabelSpan], labels: Path, audio: Path, duration_s: float, what: str = "audio"
) -> None:
    """Refuse a span that ends after the recording (a label past its end: the wrong file, or the wrong
    unit), naming the label file's line and the recording (``what``: audio, features, video)."""
    for span in spans:
        if span.offset_s > duration_s + _SPAN_TOLERANCE_S:
            raise LabelFileError(
                labels,
                span.line,
                f"span {span.onset_s:g}-{span.offset_s:g} s ({span.label!r}) ends after the {what} "
                f"{os.fspath(audio)} ({duration_s:.3f} s)",
            )


def frame_labels(
    spans: Sequence[LabelSpan],
    classes: Sequence[str],
    background_class: str,
    num_frames: int,
    frame_s: float,
    duration_s: float,
    min_overlap: float,
) -> np.ndarray:
    """Multi-hot ``[num_frames, len(classes)]`` frame labels by overlap (see the module docstring).

    Frame ``i`` covers ``[i * frame_s, min((i + 1) * frame_s, duration_s)]``; a label outside ``classes``
    raises ``KeyError`` (callers turn it into their file's error).
    """
    starts = np.arange(num_frames, dtype=np.float64) * frame_s
    return interval_labels(
        spans, classes, background_class, starts, np.minimum(starts + frame_s, duration_s), min_overlap
    )


def interval_labels(
    spans: Sequence[LabelSpan],
    classes: Sequence[str],
    background_class: str | None,
    starts: np.ndarray,
    ends: np.ndarray,
    min_overlap: float,
) -> np.ndarray:
    """Multi-hot labels of frames whose capture intervals are ``[starts[i], ends[i]]`` (any lengths: a
    variable frame rate): class ``c`` where at least ``min_overlap`` of the interval lies inside the union
    of the spans labelled ``c``; ``background_class`` (None: there is none) where no other class is. A
    label outside ``classes`` raises ``KeyError``."""
    index = {name: k for k, name in enumerate(classes)}
    num_frames = len(starts)
    labels = np.zeros((num_frames, len(classes)), dtype=bool)
    lengths = np.maximum(ends - starts, 0.0)
    by_label: dict[str, list[tuple[float, float]]] = {}
    for span in spans:
        if span.label not in index:
            raise KeyError(span.label)
        if span.label != background_class and span.offset_s > span.onset_s:
            by_label.setdefault(span.label, []).append((span.onset_s, span.offset_s))
    for label, intervals in by_label.items():
        covered = np.zeros(num_frames, dtype=np.float64)
        for onset, offset in _union(intervals):
            covered += np.clip(np.minimum(ends, offset) - np.maximum(starts, onset), 0.0, None)
        hit = (lengths > 0) & (covered >= min_overlap * lengths - _TOLERANCE)
        labels[hit, index[label]] = True
    if background_class in index:
        labels[:, index[background_class]] = ~labels.any(axis=1)
    return labels


def frame_labels_from_file(
    spans: Sequence[LabelSpan],
    labels: Path,
    classes: tuple[str, ...],
    background_class: str,
    num_frames: int,
    frame_s: float,
    duration_s: float,
    min_overlap: float,
) -> np.ndarray:
    """:func:`frame_labels` of the spans read from ``labels``; a label outside ``classes`` is a
    :class:`~streambench.harness.io.labels.LabelFileError` naming the file, the line and the classes."""
    starts = np.arange(num_frames, dtype=np.float64) * frame_s
    ends = np.minimum(starts + frame_s, duration_s)
    return interval_labels_from_file(spans, labels, classes, background_class, starts, ends, min_overlap)


def interval_labels_from_file(
    spans: Sequence[LabelSpan],
    labels: Path,
    classes: tuple[str, ...],
    background_class: str | None,
    starts: np.ndarray,
    ends: np.ndarray,
    min_overlap: float,
) -> np.ndarray:
    """:func:`interval_labels` of the spans read from ``labels``; a label outside ``classes`` is a
    :class:`~streambench.harness.io.labels.LabelFileError` naming the file, the line and the classes."""
    try:
        return interval_labels(spans, classes, background_class, starts, ends, min_overlap)
    except KeyError as missing:
        line = next((s.line for s in spans if s.label == missing.args[0]), None)
        raise LabelFileError(
            labels, line, f"label {missing.args[0]!r} is not one of the classes {classes}"
        ) from None


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for onset, offset in sorted(intervals):
        if merged and onset <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], offset))
        else:
            merged.append((onset, offset))
    return merged
