"""Seeded synthetic audio-visual event streams shaped like AVE, with LLP-style modality visibility.

Implements the data set streambench runs without downloads. Shape after AVE (seed 004 §6.1.1): 28
event classes plus background, 10 s streams labelled in 1 s segments, one event class per segment,
about 35-40 % background segments, 1-2 events per stream spanning whole segments. Modality-specific
events after LLP (seed 004 §6.1.2): each event span is audio-visual, audio-only or visual-only (default
mix 60/20/20 %); in an audio-only span the visual payload shows the background, in a visual-only span
the audio payload carries the background.

Payload per frame and modality: ``amplitude * class_signature(shown class) + noise_std * N(0, I)``
(signatures from :func:`streambench.adapters.reference.class_signature`, which the reference models use as
their matched filters). During the first ``onset_ramp_s`` of an event the signature fades in from the
background signature. Stream ``k`` depends only on ``(seed, k)``; payloads are rendered when a
stream's ``frame_source`` is called, identically on every call.

The seed decides every scored stream, so a public seed makes the test set public (anyone can rebuild
it with this module). ``seed`` is therefore unset by default: a run draws a secret one
(:func:`streambench.harness.datasets.catalog.seeded`) and writes it to its result after scoring. Building
streams from a configuration whose seed is still unset is an error, never a silent default. The warm-up stream
is drawn from :data:`WARMUP_SEED`, a fixed public seed, so that the frames a model is shown unscored
tell it nothing of the secret one. ``Stream.capture`` renders a frame as
a displaced clock would have captured it (signal displaced, the frame's own noise), for the jitter
injector.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from streambench.adapters.codebook import class_signature, default_classes
from streambench.adapters.contract import Frame, Stream

__all__ = [
    "MODALITIES",
    "VISIBILITY_NAMES",
    "VIS_AUDIO_ONLY",
    "VIS_AUDIO_VISUAL",
    "VIS_BACKGROUND",
    "VIS_VISUAL_ONLY",
    "WARMUP_KEY",
    "WARMUP_SEED",
    "SyntheticConfig",
    "VisibilityMix",
    "classes",
    "make_streams",
    "make_warmup_stream",
]

MODALITIES: tuple[str, str] = ("audio", "visual")

VIS_BACKGROUND, VIS_AUDIO_VISUAL, VIS_AUDIO_ONLY, VIS_VISUAL_ONLY = 0, 1, 2, 3
VISIBILITY_NAMES: tuple[str, ...] = ("background", "audio_visual", "audio_only", "visual_only")
"""Codes of ``Stream.meta["visibility"]`` (int8 per frame), after LLP's annotation (seed 004 §6.1.2)."""

WARMUP_KEY = 2**31 - 1
"""Stream key of the warm-up stream; scored streams use keys ``0 .. num_streams - 1 < WARMUP_KEY``."""

WARMUP_SEED = 0
"""The warm-up stream's seed, whatever the data set's: public and fixed, so the unscored frames a model
sees before the run reveal nothing of a secret seed (its key, :data:`WARMUP_KEY`, keeps it apart from
the scored streams of seed 0)."""

_TOLERANCE = 1e-6


class VisibilityMix(BaseModel):
    """Relative frequency of each visibility among event spans (normalised to sum to 1)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    audio_visual: float = Field(default=0.6, ge=0.0)
    audio_only: float = Field(default=0.2, ge=0.0)
    visual_only: float = Field(default=0.2, ge=0.0)

    @model_validator(mode="after")
    def _positive_total(self) -> VisibilityMix:
        if self.audio_visual + self.audio_only + self.visual_only <= 0:
            raise ValueError("visibility: audio_visual + audio_only + visual_only must be > 0")
        return self

    def probabilities(self) -> np.ndarray:
        """``[audio_visual, audio_only, visual_only]`` normalised to sum to 1."""
        weights = np.array([self.audio_visual, self.audio_only, self.visual_only], dtype=np.float64)
        return weights / weights.sum()


def _is_whole(value: float) -> bool:
    if not math.isfinite(value):  # e.g. segment_length_s * fps overflowing to inf
        return False
    return abs(value - round(value)) <= _TOLERANCE * max(1.0, abs(value))


class SyntheticConfig(BaseModel):
    """Configuration of the synthetic data set. Field order matters: later validators read earlier fields."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: Literal["synthetic"] = "synthetic"
    seed: int | None = Field(
        default=None,
        ge=0,
        description="seed of the streams (stream k depends on seed and k); unset: a secret seed drawn per "
        "run and written to its result after scoring (a seed given here is public)",
    )
    num_streams: int = Field(default=60, ge=1, lt=WARMUP_KEY, description="number of scored streams")
    num_event_classes: int = Field(
        default=28, ge=1, description="event classes besides background (28: AVE's category names)"
    )
    fps: float = Field(default=25.0, gt=0.0, description="frames per second")
    segment_length_s: float = Field(default=1.0, gt=0.0, description="label unit (AVE: 1 s)")
    duration_s: float = Field(default=10.0, gt=0.0, description="seconds per stream (AVE: 10 s)")
    audio_dim: int = Field(default=64, ge=1, description="size of the audio payload, float32 [audio_dim]")
    visual_dim: int = Field(default=128, ge=1, description="size of the visual payload, float32 [visual_dim]")
    amplitude: float = Field(default=1.0, gt=0.0, description="signature amplitude once an event is on")
    noise_std: float = Field(default=0.55, ge=0.0, description="per-element std of the Gaussian noise")
    noise_correlation: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="AR(1) coefficient of the noise from frame to frame (0: independent frames)",
    )
    onset_ramp_s: float = Field(default=0.4, ge=0.0, description="fade-in time of an event's signature")
    background_fraction: float = Field(
        default=0.375, ge=0.0, lt=1.0, description="target share of background segments (AVE: 35-40 %)"
    )
    min_event_segments: int = Field(
        default=2, ge=1, description="shortest event, in segments (default: at most the stream's segments)"
    )
    max_event_segments: int = Field(
        default=5, ge=1, description="longest event, in segments (default: at most the stream's segments)"
    )
    visibility: VisibilityMix = Field(
        default_factory=VisibilityMix,
        description="relative frequency of audio-visual, audio-only and visual-only event spans",
    )

    @field_validator("segment_length_s")
    @classmethod
    def _segment_whole_frames(cls, value: float, info: ValidationInfo) -> float:
        fps = info.data.get("fps")
        if fps is not None and (not _is_whole(value * fps) or round(value * fps) < 1):
            raise ValueError(
                f"segment_length_s must be a whole number (>= 1) of frames: "
                f"segment_length_s * fps = {value} * {fps} = {value * fps:g}"
            )
        return value

    @field_validator("duration_s")
    @classmethod
    def _duration_whole_segments(cls, value: float, info: ValidationInfo) -> float:
        segment = info.data.get("segment_length_s")
        if segment is not None and (not _is_whole(value / segment) or round(value / segment) < 1):
            raise ValueError(
                f"duration_s must be a whole number of segments: "
                f"duration_s / segment_length_s = {value} / {segment} = {value / segment:g}"
            )
        return value

    @field_validator("max_event_segments")
    @classmethod
    def _event_length_range(cls, value: int, info: ValidationInfo) -> int:
        low = info.data.get("min_event_segments")
        if low is not None and value < low:
            raise ValueError(f"max_event_segments ({value}) must be >= min_event_segments ({low})")
        return value

    @model_validator(mode="after")
    def _events_fit(self) -> SyntheticConfig:
        # a model validator, not a field one: it must also see the default max_event_segments. Defaults
        # follow a short stream (--duration 2: events of 1-2 segments); values the user set are checked
        if "max_event_segments" not in self.model_fields_set and self.max_event_segments > self.num_segments:
            self.__dict__["max_event_segments"] = self.num_segments
        if "min_event_segments" not in self.model_fields_set:
            self.__dict__["min_event_segments"] = min(self.min_event_segments, self.max_event_segments)
        if self.max_event_segments > self.num_segments:
            raise ValueError(
                f"max_event_segments ({self.max_event_segments}) exceeds the number of segments per stream "
                f"({self.num_segments} = duration_s / segment_length_s); lower it or lengthen duration_s"
            )
        return self

    @property
    def frames_per_segment(self) -> int:
        return round(self.segment_length_s * self.fps)

    @property
    def num_segments(self) -> int:
        return round(self.duration_s / self.segment_length_s)

    @property
    def num_frames(self) -> int:
        """Frames per scored stream."""
        return self.frames_per_segment * self.num_segments


def required_seed(seed: int | None, what: str) -> int:
    """A generated data set's seed, which a run draws (secret) before it builds anything; a clear error
    where it is unset (shared by the synthetic and spoof sets)."""
    if seed is None:
        raise ValueError(
            f"the {what} data set's seed is unset: a run draws a secret one "
            "(streambench.harness.datasets.catalog.seeded); give one to build it outside a run"
        )
    return seed


def _seed(config: SyntheticConfig) -> int:
    return required_seed(config.seed, "synthetic")


def classes(config: SyntheticConfig) -> tuple[str, ...]:
    """Class names of the data set: ``("background", *event classes)`` (background = class 0)."""
    return default_classes(config.num_event_classes)


@dataclass(frozen=True)
class _Layout:
    """Label structure of one block of ``config.num_frames`` frames."""

    frame_class: np.ndarray  # int64 [T]: class index per frame (0 = background)
    visibility: np.ndarray  # int8 [T]
    ramp: np.ndarray  # float32 [T]: weight of the event signature (1 except during onsets)
    events: tuple[dict[str, Any], ...]


def _layout(config: SyntheticConfig, key: Sequence[int], frame_offset: int) -> _Layout:
    """Draw the events of one block from ``default_rng([seed, *key, 0])``."""
    rng = np.random.default_rng([_seed(config), *key, 0])
    num_segments, low, high = config.num_segments, config.min_event_segments, config.max_event_segments
    # Two events with probability p, so that E[event segments] = (1 - background_fraction) * S.
    p_two = min(1.0, max(0.0, (1.0 - config.background_fraction) * num_segments / ((low + high) / 2) - 1.0))
    lengths = [int(rng.integers(low, high + 1))]
    two = rng.random() < p_two
    if two and num_segments - lengths[0] >= low:
        lengths.append(int(rng.integers(low, min(high, num_segments - lengths[0]) + 1)))
    n_events = len(lengths)
    n_items = num_segments - sum(lengths) + n_events  # background segments and events, in random order
    event_items = set(rng.choice(n_items, size=n_events, replace=False).tolist())
    event_classes = rng.choice(
        config.num_event_classes, size=n_events, replace=config.num_event_classes < n_events
    )
    visibilities = rng.choice(3, size=n_events, p=config.visibility.probabilities()) + VIS_AUDIO_VISUAL

    fps_seg = config.frames_per_segment
    frame_class = np.zeros(config.num_frames, dtype=np.int64)
    visibility = np.zeros(config.num_frames, dtype=np.int8)
    ramp = np.ones(config.num_frames, dtype=np.float32)
    ramp_frames = round(config.onset_ramp_s * config.fps)
    events: list[dict[str, Any]] = []
    segment, event = 0, 0
    for item in range(n_items):
        if item not in event_items:
            segment += 1
            continue
        start, stop = segment * fps_seg, (segment + lengths[event]) * fps_seg
        frame_class[start:stop] = int(event_classes[event]) + 1
        visibility[start:stop] = visibilities[event]
        n_ramp = min(ramp_frames, stop - start)
        ramp[start : start + n_ramp] = np.arange(1, n_ramp + 1, dtype=np.float32) / (ramp_frames + 1)
        events.append(
            {
                "class_index": int(event_classes[event]) + 1,
                "start_frame": frame_offset + start,
                "stop_frame": frame_offset + stop,
                "visibility": VISIBILITY_NAMES[int(visibilities[event])],
            }
        )
        segment += lengths[event]
        event += 1
    return _Layout(frame_class, visibility, ramp, tuple(events))


def _render(
    config: SyntheticConfig, layout: _Layout, key: Sequence[int]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per modality, ``(signal [T, dim], noise [T, dim])`` of one block, float32; the payload is their sum.

    Kept apart so that :meth:`_Sensor.capture` can displace the signal and keep the frame's noise."""
    rng = np.random.default_rng([_seed(config), *key, 1])
    hidden = {"audio": VIS_VISUAL_ONLY, "visual": VIS_AUDIO_ONLY}  # visibility that hides the modality
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for modality, dim in zip(MODALITIES, (config.audio_dim, config.visual_dim), strict=True):
        shown = np.where(layout.visibility == hidden[modality], 0, layout.frame_class)
        used = np.unique(shown)
        table = np.zeros((int(used.max()) + 1, dim), dtype=np.float32)
        for c in used.tolist():
            table[c] = class_signature(c, dim, modality)
        weight = np.where(shown > 0, layout.ramp, np.float32(1.0))[:, None]
        signal = weight * table[shown] + (1.0 - weight) * table[0]
        signal *= np.float32(config.amplitude)
        noise = rng.standard_normal((shown.size, dim), dtype=np.float32)
        if (
            config.noise_correlation > 0
        ):  # stationary AR(1): unit variance, correlation rho from frame to frame
            rho = np.float32(config.noise_correlation)
            innovation = np.float32(np.sqrt(1.0 - config.noise_correlation**2))
            for t in range(1, shown.size):
                noise[t] = rho * noise[t - 1] + innovation * noise[t]
        noise = np.float32(config.noise_std) * noise
        out[modality] = (np.ascontiguousarray(signal, dtype=np.float32), noise)
    return out


class _Sensor:
    """Renders a stream's blocks on demand (the last two cached) for ``frame_source`` and ``capture``."""

    def __init__(
        self, config: SyntheticConfig, layouts: Sequence[_Layout], keys: Sequence[Sequence[int]]
    ) -> None:
        self._config = config
        self._layouts = layouts
        self._keys = keys
        self._cache: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}

    def block(self, j: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        if j not in self._cache:
            if len(self._cache) >= 2:
                self._cache.pop(next(iter(self._cache)))
            self._cache[j] = _render(self._config, self._layouts[j], self._keys[j])
        return self._cache[j]

    def _signal(self, modality: str, k: int) -> np.ndarray:
        n = self._config.num_frames
        return self.block(k // n)[modality][0][k % n]

    def capture(self, modality: str, i: int, s: float) -> np.ndarray:
        """Frame slot ``i``'s payload had its capture interval ended at ``s`` seconds: the signal
        interpolated linearly between the frames whose ends bracket ``s`` (clamped to the stream), plus
        frame ``i``'s own noise. ``capture(m, i, frame_times[i])`` is frame ``i``'s payload exactly."""
        if modality not in MODALITIES:
            raise ValueError(f"synthetic streams have no modality {modality!r} (they have {MODALITIES})")
        n, total = self._config.num_frames, self._config.num_frames * len(self._layouts)
        if not 0 <= i < total:
            raise ValueError(f"frame slot {i} outside the stream's {total} frames")
        position = min(max(s * self._config.fps - 1.0, 0.0), total - 1.0)  # frame k ends at (k + 1) / fps
        k = math.floor(position + 1e-9)
        w = position - k
        signal = self._signal(modality, k)
        if w > 1e-9 and k + 1 < total:
            mixed = (1.0 - w) * signal.astype(np.float64) + w * self._signal(modality, k + 1)
            signal = mixed.astype(np.float32)
        noise = self.block(i // n)[modality][1][i % n]
        return signal + noise


def _make_stream(
    config: SyntheticConfig, keys: Sequence[tuple[int, ...]], stream_id: str, names: tuple[str, ...]
) -> Stream:
    """One stream made of ``len(keys)`` blocks of ``config.num_frames`` frames each."""
    layouts = [_layout(config, key, j * config.num_frames) for j, key in enumerate(keys)]
    frame_class = np.concatenate([layout.frame_class for layout in layouts])
    total = frame_class.size
    labels = np.zeros((total, len(names)), dtype=bool)
    labels[np.arange(total), frame_class] = True
    frame_times = np.arange(1, total + 1, dtype=np.float64) / config.fps

    sensor = _Sensor(config, layouts, keys)

    def frame_source() -> Iterator[Frame]:
        for j in range(len(layouts)):
            (sig_a, noise_a), (sig_v, noise_v) = (sensor.block(j)[m] for m in MODALITIES)
            audio, visual = sig_a + noise_a, sig_v + noise_v
            offset = j * config.num_frames
            for i in range(config.num_frames):
                index = offset + i
                yield Frame(
                    index=index, t=float(frame_times[index]), inputs={"audio": audio[i], "visual": visual[i]}
                )

    return Stream(
        stream_id=stream_id,
        classes=names,
        labels=labels,
        frame_times=frame_times,
        frame_source=frame_source,
        modalities=MODALITIES,
        t0=0.0,
        segment_length_s=config.segment_length_s,
        meta={
            "visibility": np.concatenate([layout.visibility for layout in layouts]),
            "events": [event for layout in layouts for event in layout.events],
            "keys": [list(key) for key in keys],
            "config": config.model_dump(mode="json"),
        },
        capture=sensor.capture,
    )


def make_streams(config: SyntheticConfig) -> list[Stream]:
    """The scored streams ``syn-0000 ..``; stream ``k`` depends on ``(config, k)``, not on ``num_streams``."""
    names = classes(config)
    return [_make_stream(config, [(k,)], f"syn-{k:04d}", names) for k in range(config.num_streams)]


def make_warmup_stream(config: SyntheticConfig, num_frames: int) -> Stream:
    """A warm-up stream ``syn-warmup`` of at least ``num_frames`` frames, disjoint from the scored streams.

    It concatenates blocks drawn with keys ``(WARMUP_KEY, j)``, which no scored stream uses, from the
    fixed public :data:`WARMUP_SEED` (not the data set's seed, which may be secret): the same warm-up
    for every seed, shaped by the rest of ``config``.
    """
    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    blocks = math.ceil(num_frames / config.num_frames)
    keys = [(WARMUP_KEY, j) for j in range(blocks)]
    public = config.model_copy(update={"seed": WARMUP_SEED})
    return _make_stream(public, keys, "syn-warmup", classes(config))
