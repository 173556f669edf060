"""Audio recordings with label files, framed for a sample-stream adapter.

Input: pairs of an audio file (WAV, or any format libsndfile reads; mono or multi-channel, any sample
rate) and a label file — Audacity labels (``.txt``, or ``.labels`` as Audacity's label export may name
it) or ``onset,offset,label`` CSV (``.csv``), both as read by :mod:`streambench.harness.io.labels`
(:data:`~streambench.harness.datasets.audio_labels.LABEL_SUFFIXES`). Either list the pairs (``files``) or
name a ``directory``: every ``*.wav`` in it (sorted by name) with the one label file of the same stem,
``<stem>.txt``, ``<stem>.labels`` or ``<stem>.csv``.

One stream per recording, id = the audio file's stem:

- **Samples.** Audio is read with ``soundfile`` as float32 in [-1, 1]. ``channels``: ``mix`` (mean of the
  channels, mono), ``first`` (channel 0) or ``all`` (every channel). A file whose rate differs from
  ``sample_rate_hz`` is resampled with :func:`scipy.signal.resample_poly` (polyphase, Kaiser window) when
  ``resample`` is true, and refused with :class:`AudioFileError` naming the file and both rates when it is
  false. After resampling a file of ``n`` samples at rate ``r`` has ``ceil(n * R / r)`` samples at ``R``.
  Neither conversion is silent: each stream's ``meta`` keeps the file's own rate and channels,
  which the run records and names in its warnings (:mod:`streambench.harness.datasets.provenance`).
- **Frames.** Frame ``i`` holds samples ``i*F .. (i+1)*F - 1`` (``F = frame_samples``); its payload is
  ``inputs={"audio": float32 [F]}`` (``[channels, F]`` for ``all``). The trailing partial frame is
  zero-padded to ``F`` samples (``meta["padded_samples"]`` says how many). Frame times follow the data
  contract: ``t0 = 0`` and frame ``i`` arrives at ``(i+1) * F / R`` s, the end of its capture interval.
- **Labels.** Frame ``i`` gets class ``c`` when at least ``min_overlap`` of its audio lies inside the
  spans labelled ``c`` (their union, so two abutting spans count together). The audio of the padded last
  frame is its real part, ``[i*F/R, n/R]``. A frame with no event class gets ``background_class``; a span
  labelled ``background_class`` itself marks nothing. Zero-length (point) labels cover no frame.
  ``classes`` fixes the class list (it must contain ``background_class``; a label outside it is an
  error); left unset, it is ``(background_class, *sorted labels found in all the files)``. The label
  files and this rule live in :mod:`streambench.harness.datasets.audio_labels`.
- **Laziness.** :func:`streams` reads the file headers and the label files; the samples are read when a
  stream's ``frame_source`` is called: block by block at the file's own rate, or the whole file at once
  when it must be resampled (``resample_poly`` filters the whole signal).

Errors: an audio file that cannot be read, holds no samples or has the wrong rate raises
:class:`AudioFileError`; a malformed label file :class:`~streambench.harness.io.labels.LabelFileError`; both
name the file (the latter also the line). The warm-up stream (:func:`warmup_stream`) is seeded low-level
noise, so it needs no file and cannot leak a scored recording into the warm-up.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.audio_labels import (
    LABEL_SUFFIXES,
    check_spans_inside_audio,
    frame_labels_from_file,
    read_labels,
)
from streambench.harness.io.labels import LabelSpan

__all__ = [
    "AudioFileError",
    "AudioFilesConfig",
    "AudioLabelPair",
    "classes",
    "streams",
    "warmup_stream",
]

WARMUP_SEED = 2**31 - 1
WARMUP_NOISE_STD = 0.01  # -40 dBFS: a quiet, non-silent input


class AudioFileError(ValueError):
    """An audio file that cannot be used: unreadable, empty, or at a rate the configuration refuses."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{os.fspath(path)}: {problem}")


class AudioLabelPair(BaseModel):
    """One recording and its label file (``.txt`` / ``.labels``: Audacity labels, ``.csv``:
    onset,offset,label)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    audio: Path
    labels: Path

    @field_validator("labels")
    @classmethod
    def _known_label_format(cls, value: Path) -> Path:
        if value.suffix.lower() not in LABEL_SUFFIXES:
            raise ValueError(
                f"label file {value} must end in .txt or .labels (Audacity labels) or .csv "
                "(onset,offset,label)"
            )
        return value


class AudioFilesConfig(BaseModel):
    """Audio recordings with label files, framed into ``frame_samples`` at ``sample_rate_hz``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["audio_files"] = "audio_files"
    files: tuple[AudioLabelPair, ...] = Field(
        (), description="{audio, labels} pairs: a WAV file and its .txt/.labels (Audacity) or .csv labels"
    )
    directory: Path | None = Field(
        None, description="every *.wav in it with the same-stem .txt/.labels (Audacity) or .csv labels"
    )
    sample_rate_hz: int = Field(16000, gt=0, description="the rate the adapter needs")
    frame_samples: int = Field(512, gt=0, description="samples per frame (the adapter's frame size)")
    resample: bool = Field(True, description="resample other rates (false: a rate mismatch is an error)")
    channels: Literal["mix", "first", "all"] = Field(
        "mix", description="mix: mean of the channels; first: channel 0; all: every channel, [channels, F]"
    )
    min_overlap: float = Field(
        0.5, gt=0.0, le=1.0, description="fraction of a frame inside a span for the frame to get its label"
    )
    classes: tuple[str, ...] | None = Field(None, description="None: (background_class, *sorted labels)")
    background_class: str = Field(
        "background", min_length=1, description="the class of a frame no label covers (class 0)"
    )
    segment_length_s: float = Field(
        1.0, gt=0.0, allow_inf_nan=False, description="unit of the segment-level figures (AVE: 1 s)"
    )

    @model_validator(mode="after")
    def _one_source(self) -> AudioFilesConfig:
        if bool(self.files) == (self.directory is not None):
            raise ValueError("give either files (audio/labels pairs) or directory, not both and not neither")
        if self.classes is not None:
            if self.background_class not in self.classes:
                raise ValueError(
                    f"classes {self.classes} must contain background_class {self.background_class!r}"
                )
            if len(set(self.classes)) != len(self.classes):
                raise ValueError(f"classes {self.classes} has duplicates")
        return self


def _pairs(config: AudioFilesConfig) -> list[AudioLabelPair]:
    if config.directory is None:
        return list(config.files)
    directory = config.directory
    if not directory.is_dir():
        raise AudioFileError(directory, "is not a directory")
    pairs = []
    for audio in sorted(directory.glob("*.wav")):
        found = [p for p in (audio.with_suffix(suffix) for suffix in LABEL_SUFFIXES) if p.is_file()]
        if len(found) != 1:
            problem = (
                f"has no label file ({', '.join(LABEL_SUFFIXES)})"
                if not found
                else f"has {len(found)} label files ({', '.join(p.name for p in found)}); keep one"
            )
            raise AudioFileError(audio, f"{problem} with the same stem")
        pairs.append(AudioLabelPair(audio=audio, labels=found[0]))
    if not pairs:
        raise AudioFileError(directory, "holds no *.wav file")
    return pairs


def _soundfile() -> Any:
    """The ``soundfile`` module (an optional dependency: ``pip install 'streambench[data]'``)."""
    try:
        import soundfile
    except ImportError as exc:  # pragma: no cover - the dev install has it
        raise ImportError("audio files need the soundfile package: pip install 'streambench[data]'") from exc
    return soundfile


def _info(path: Path) -> tuple[int, int, int]:
    """``(sample rate, channels, frames)`` of an audio file, from its header."""
    soundfile = _soundfile()
    try:
        info = soundfile.info(os.fspath(path))
    except Exception as exc:  # libsndfile reports unreadable files as RuntimeError/LibsndfileError/OSError
        raise AudioFileError(path, f"cannot be read as audio ({exc})") from None
    if info.frames <= 0:
        raise AudioFileError(path, "holds no audio samples")
    return int(info.samplerate), int(info.channels), int(info.frames)


def _ratio(source_hz: int, target_hz: int) -> tuple[int, int]:
    g = math.gcd(source_hz, target_hz)
    return target_hz // g, source_hz // g


def _select(data: np.ndarray, mode: str) -> np.ndarray:
    """``[n, channels]`` → ``[n]`` (mix, first) or ``[channels, n]`` (all), float32."""
    if mode == "mix":
        return data.mean(axis=1, dtype=np.float64).astype(np.float32)
    if mode == "first":
        return np.ascontiguousarray(data[:, 0], dtype=np.float32)
    return np.ascontiguousarray(data.T, dtype=np.float32)


def _read_all(path: Path) -> np.ndarray:
    """All samples of ``path`` as float32 ``[n, channels]``, or :class:`AudioFileError`."""
    try:
        data, _ = _soundfile().read(os.fspath(path), dtype="float32", always_2d=True)
    except Exception as exc:  # libsndfile errors (RuntimeError subclasses), OSError
        raise AudioFileError(path, f"cannot be read as audio ({exc})") from None
    return np.asarray(data, dtype=np.float32)


def _blocks(path: Path, frame: int, num_frames: int, mode: str) -> Iterator[np.ndarray]:
    """``num_frames`` blocks of ``frame`` samples read one by one (the last zero-padded)."""
    soundfile = _soundfile()
    try:
        handle = soundfile.SoundFile(os.fspath(path))
    except Exception as exc:
        raise AudioFileError(path, f"cannot be read as audio ({exc})") from None
    with handle:
        for _ in range(num_frames):
            try:
                raw = handle.read(frame, dtype="float32", always_2d=True)
            except Exception as exc:
                raise AudioFileError(path, f"cannot be read as audio ({exc})") from None
            block = _select(raw, mode)
            if block.shape[-1] < frame:
                block = np.pad(block, [(0, 0)] * (block.ndim - 1) + [(0, frame - block.shape[-1])])
            yield block


def _frames_of(samples: np.ndarray, frame: int, num_frames: int) -> Iterator[np.ndarray]:
    """Frames of ``samples`` (time on the last axis), the last one zero-padded."""
    total = num_frames * frame
    short = total - samples.shape[-1]
    if short > 0:
        pad = [(0, 0)] * (samples.ndim - 1) + [(0, short)]
        samples = np.pad(samples, pad)
    for i in range(num_frames):
        yield np.ascontiguousarray(samples[..., i * frame : (i + 1) * frame])


def _make_stream(
    config: AudioFilesConfig,
    pair: AudioLabelPair,
    spans: list[LabelSpan],
    names: tuple[str, ...],
    header: tuple[int, int, int],
) -> Stream:
    source_hz, num_channels, source_samples = header
    target_hz, frame = config.sample_rate_hz, config.frame_samples
    up, down = _ratio(source_hz, target_hz)
    num_samples = -(-source_samples * up // down)  # resample_poly's output length
    num_frames = -(-num_samples // frame)
    duration_s = source_samples / source_hz
    check_spans_inside_audio(spans, pair.labels, pair.audio, duration_s)
    labels = frame_labels_from_file(
        spans,
        pair.labels,
        names,
        config.background_class,
        num_frames,
        frame / target_hz,
        num_samples / target_hz,
        config.min_overlap,
    )
    frame_times = np.arange(1, num_frames + 1, dtype=np.float64) * (frame / target_hz)
    mode = config.channels
    audio_path = pair.audio

    def frame_source() -> Iterator[Frame]:
        times = frame_times
        if up == down:  # no resampling: read block by block
            for i, block in enumerate(_blocks(audio_path, frame, num_frames, mode)):
                yield Frame(index=i, t=float(times[i]), inputs={"audio": block})
            return
        from scipy.signal import resample_poly

        samples = _select(_read_all(audio_path), mode)
        resampled = resample_poly(samples, up, down, axis=-1).astype(np.float32)
        for i, block in enumerate(_frames_of(resampled, frame, num_frames)):
            yield Frame(index=i, t=float(times[i]), inputs={"audio": block})

    meta: dict[str, Any] = {
        "source": os.fspath(pair.audio),
        "labels_source": os.fspath(pair.labels),
        "sample_rate_hz": target_hz,
        "frame_samples": frame,
        "source_sample_rate_hz": source_hz,
        "source_channels": num_channels,
        "channels": mode,
        "resampled": up != down,
        "num_samples": num_samples,
        "padded_samples": num_frames * frame - num_samples,
        "spans": [(s.onset_s, s.offset_s, s.label) for s in spans],
    }
    return Stream(
        stream_id=pair.audio.stem,
        classes=names,
        labels=labels,
        frame_times=frame_times,
        frame_source=frame_source,
        modalities=("audio",),
        t0=0.0,
        segment_length_s=config.segment_length_s,
        meta=meta,
    )


def _names(config: AudioFilesConfig, all_spans: Sequence[Sequence[LabelSpan]]) -> tuple[str, ...]:
    if config.classes is not None:
        return config.classes
    found = {span.label for spans in all_spans for span in spans} - {config.background_class}
    return (config.background_class, *sorted(found))


def classes(config: AudioFilesConfig) -> tuple[str, ...]:
    """The class list of the data set (reads the label files when ``config.classes`` is unset)."""
    return _names(
        config, [] if config.classes is not None else [read_labels(p.labels) for p in _pairs(config)]
    )


def streams(config: AudioFilesConfig) -> list[Stream]:
    """One stream per recording, in the order of ``files`` (or of the sorted ``*.wav`` names)."""
    pairs = _pairs(config)
    all_spans = [read_labels(pair.labels) for pair in pairs]
    names = _names(config, all_spans)
    headers = []
    for pair in pairs:
        header = _info(pair.audio)
        if header[0] != config.sample_rate_hz and not config.resample:
            raise AudioFileError(
                pair.audio,
                f"sample rate {header[0]} Hz, but the adapter needs {config.sample_rate_hz} Hz "
                "(set resample = true to resample it, or convert the file)",
            )
        headers.append(header)
    ids = [pair.audio.stem for pair in pairs]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise AudioFileError(
            pairs[ids.index(duplicates[0])].audio, "two recordings share the stem (stream id)"
        )
    return [
        _make_stream(config, pair, spans, names, header)
        for pair, spans, header in zip(pairs, all_spans, headers, strict=True)
    ]


def warmup_stream(config: AudioFilesConfig, num_frames: int) -> Stream:
    """``audio-warmup``: ``num_frames`` frames of seeded Gaussian noise (std 0.01), all background.

    Same payload shape as the scored streams (``[F]``, or ``[channels, F]`` for ``all``, with the
    channel count of the first recording); unscored, and independent of the recordings' content.
    """
    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    names = classes(config)
    frame = config.frame_samples
    shape: tuple[int, ...] = (frame,)
    if config.channels == "all":
        shape = (_info(_pairs(config)[0].audio)[1], frame)
    frame_times = np.arange(1, num_frames + 1, dtype=np.float64) * (frame / config.sample_rate_hz)
    labels = np.zeros((num_frames, len(names)), dtype=bool)
    labels[:, names.index(config.background_class)] = True

    def frame_source() -> Iterator[Frame]:
        rng = np.random.default_rng(WARMUP_SEED)
        for i in range(num_frames):
            noise = (WARMUP_NOISE_STD * rng.standard_normal(shape)).astype(np.float32)
            yield Frame(index=i, t=float(frame_times[i]), inputs={"audio": noise})

    return Stream(
        stream_id="audio-warmup",
        classes=names,
        labels=labels,
        frame_times=frame_times,
        frame_source=frame_source,
        modalities=("audio",),
        meta={"sample_rate_hz": config.sample_rate_hz, "frame_samples": frame, "warmup": "noise"},
    )
