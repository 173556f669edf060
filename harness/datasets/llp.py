"""The LLP data set's AVVP evaluation split, per modality (seed 004 §6.1.2; Tian et al., ECCV 2020).

Files, as released with the authors' code (github.com/YapengTian/AVVP-ECCV20):

- ``AVVP_eval_audio.csv`` and ``AVVP_eval_visual.csv``: tab-separated ``filename, onset, offset,
  event_labels`` rows (read by :func:`streambench.harness.io.annotations.read_llp_csv`); the event covers the
  1 s segments ``onset .. offset - 1`` of the 10 s clip ``filename``;
- optional features, one ``.npy`` file per video named by its YouTube id (the first 11 characters of
  ``filename``), one directory per kind, as the authors' loader reads them: ``audio_features``
  (VGGish, ``[10, 128]``), ``visual_features`` (ResNet-152 at 8 frames/s, ``[80, 2048]``) and
  ``st_features`` (R(2+1)D-18, ``[10, 512]``). A feature of shape ``[k * 10, D]`` is averaged over each
  group of ``k`` rows into one vector per segment (the authors' 8-frame average pooling); the visual
  payload is the ResNet vector, followed by the R(2+1)D vector when ``st_features`` is given.

One stream per clip (the union of the clips named in the two files, in order of first appearance), id =
``filename``: 10 frames of 1 s (``segment_length_s = 1``, frame ``s`` arrives at ``s + 1`` s),
``inputs={"audio": float32 [128] | None, "visual": float32 [2048 (+512)] | None}`` — a modality
without features is ``None`` (a missing modality), so a stream without any features carries labels only.
Classes: ``"background"`` (class 0) and the 25 LLP events in the authors' order (:data:`LLP_EVENTS`).
``Stream.labels`` is the union of the audio and visual labels; ``meta["labels_audio"]`` and
``meta["labels_visual"]`` (bool ``[10, 26]``) hold each modality's own, their background column set
where that modality has no event — from them audio-only, visual-only and audio-visual (their
intersection, as the authors' ``GT_av = GT_a * GT_v``) metrics can be computed.

Errors: malformed files, unknown event labels and offsets past 10 s raise
:class:`~streambench.harness.io.annotations.AnnotationFileError` (file and line); a missing, unreadable or
misshapen ``.npy`` file :class:`~streambench.harness.datasets.ave.FeatureFileError`. :func:`streams` checks
every feature file's shape (memory-mapped, without loading it); the data is loaded when a stream's
``frame_source`` is called.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.ave import FeatureFileError, concatenated_warmup
from streambench.harness.io.annotations import AnnotationFileError, LlpEvent, read_llp_csv

__all__ = ["LLP_CLASSES", "LLP_EVENTS", "LlpConfig", "streams", "warmup_stream"]

LLP_EVENTS: tuple[str, ...] = (
    "Speech",
    "Car",
    "Cheering",
    "Dog",
    "Cat",
    "Frying_(food)",
    "Basketball_bounce",
    "Fire_alarm",
    "Chainsaw",
    "Cello",
    "Banjo",
    "Singing",
    "Chicken_rooster",
    "Violin_fiddle",
    "Vacuum_cleaner",
    "Baby_laughter",
    "Accordion",
    "Lawn_mower",
    "Motorcycle",
    "Helicopter",
    "Acoustic_guitar",
    "Telephone_bell_ringing",
    "Baby_cry_infant_cry",
    "Blender",
    "Clapping",
)
"""The 25 LLP event classes in the order of the authors' ``categories`` list (label index 0-24)."""

LLP_CLASSES: tuple[str, ...] = ("background", *LLP_EVENTS)
NUM_SEGMENTS = 10
VIDEO_ID_LENGTH = 11


class LlpConfig(BaseModel):
    """The AVVP evaluation files (audio, visual) and optional per-video ``.npy`` feature directories."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["llp"] = "llp"
    audio_labels: Path = Field(description="AVVP_eval_audio.csv")
    visual_labels: Path = Field(description="AVVP_eval_visual.csv")
    audio_features: Path | None = Field(None, description="directory of <video id>.npy, [10, 128]")
    visual_features: Path | None = Field(None, description="directory of <video id>.npy, [80, 2048]")
    st_features: Path | None = Field(None, description="directory of <video id>.npy, [10, 512]")


def _modality_labels(path: Path, events: list[LlpEvent], clips: dict[str, int]) -> np.ndarray:
    """Bool ``[clips, 10, 26]``: each clip's labels in one modality, background where it has no event."""
    out = np.zeros((len(clips), NUM_SEGMENTS, len(LLP_CLASSES)), dtype=bool)
    for event in events:
        if event.label not in LLP_EVENTS:
            raise AnnotationFileError(path, event.line, f"unknown LLP event class {event.label!r}")
        if event.offset_s > NUM_SEGMENTS:
            raise AnnotationFileError(
                path, event.line, f"offset {event.offset_s} is past the {NUM_SEGMENTS} s clip"
            )
        out[clips[event.filename], event.onset_s : event.offset_s, LLP_CLASSES.index(event.label)] = True
    out[:, :, 0] = ~out[:, :, 1:].any(axis=2)
    return out


def _feature_path(directory: Path, filename: str) -> Path:
    return directory / f"{filename[:VIDEO_ID_LENGTH]}.npy"


def _check_feature(path: Path) -> int:
    """The segment-pooling factor ``k`` of a ``[k * 10, D]`` feature file, or :class:`FeatureFileError`."""
    try:
        array = np.load(os.fspath(path), mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise FeatureFileError(path, "is missing") from None
    except Exception as exc:  # a corrupt .npy raises ValueError, OSError, EOFError, ...
        raise FeatureFileError(path, f"cannot be read as a .npy array ({exc})") from None
    shape = tuple(int(n) for n in array.shape)
    if len(shape) != 2 or shape[0] == 0 or shape[0] % NUM_SEGMENTS or shape[1] == 0:
        raise FeatureFileError(path, f"has shape {shape}, expected [k * {NUM_SEGMENTS}, D]")
    if not np.issubdtype(array.dtype, np.number):
        raise FeatureFileError(path, f"has dtype {array.dtype}, expected numbers")
    return shape[0] // NUM_SEGMENTS


def _load_segments(path: Path) -> np.ndarray:
    """``[10, D]`` float32: the file's rows averaged per segment."""
    try:
        array = np.load(os.fspath(path), allow_pickle=False)
    except Exception as exc:
        raise FeatureFileError(path, f"cannot be read as a .npy array ({exc})") from None
    grouped = np.asarray(array, dtype=np.float64).reshape(NUM_SEGMENTS, -1, array.shape[-1])
    return grouped.mean(axis=1).astype(np.float32)


def _frame_source(paths: dict[str, list[Path]], frame_times: np.ndarray) -> Any:
    def frame_source() -> Iterator[Frame]:
        payload: dict[str, np.ndarray | None] = {}
        for modality in ("audio", "visual"):
            parts = [_load_segments(p) for p in paths[modality]]
            payload[modality] = np.concatenate(parts, axis=1) if parts else None
        for s in range(NUM_SEGMENTS):
            inputs = {m: (None if v is None else np.ascontiguousarray(v[s])) for m, v in payload.items()}
            yield Frame(index=s, t=float(frame_times[s]), inputs=inputs)

    return frame_source


def streams(config: LlpConfig) -> list[Stream]:
    """One stream per clip named in either evaluation file."""
    audio_events = read_llp_csv(config.audio_labels)
    visual_events = read_llp_csv(config.visual_labels)
    clips: dict[str, int] = {}
    for event in [*audio_events, *visual_events]:
        clips.setdefault(event.filename, len(clips))
    labels_audio = _modality_labels(config.audio_labels, audio_events, clips)
    labels_visual = _modality_labels(config.visual_labels, visual_events, clips)
    directories = {
        "audio": [config.audio_features],
        "visual": [config.visual_features, config.st_features],
    }
    frame_times = np.arange(1, NUM_SEGMENTS + 1, dtype=np.float64)
    out = []
    for filename, k in clips.items():
        paths = {
            modality: [_feature_path(d, filename) for d in dirs if d is not None]
            for modality, dirs in directories.items()
        }
        for path in [*paths["audio"], *paths["visual"]]:
            _check_feature(path)
        union = labels_audio[k] | labels_visual[k]
        union[:, 0] = ~union[:, 1:].any(axis=1)
        out.append(
            Stream(
                stream_id=filename,
                classes=LLP_CLASSES,
                labels=union,
                frame_times=frame_times,
                frame_source=_frame_source(paths, frame_times),
                modalities=("audio", "visual"),
                t0=0.0,
                segment_length_s=1.0,
                meta={
                    "labels_audio": labels_audio[k],
                    "labels_visual": labels_visual[k],
                    "video_id": filename[:VIDEO_ID_LENGTH],
                    "features": {m: [os.fspath(p) for p in ps] for m, ps in paths.items()},
                },
            )
        )
    return out


def warmup_stream(config: LlpConfig, num_frames: int) -> Stream:
    """``llp-warmup``: the clips' frames end to end (see
    :func:`streambench.harness.datasets.ave.concatenated_warmup`)."""
    return concatenated_warmup(streams(config), num_frames, "llp-warmup")
