"""Seeded synthetic real/fake utterances for the detection protocol (seed 002).

Every utterance is speech-like audio at ``sample_rate_hz``: a harmonic voice (f0 90-250 Hz with vibrato,
harmonics below 4 kHz, a syllable-rate envelope) plus white channel noise whose level varies from
utterance to utterance. A **fake** also carries the artefact of its (imaginary) vocoder: a faint tone at
``artefact_hz`` switched on in bursts covering about ``artefact_fraction`` of its frames, at an amplitude
``artefact_amplitude * sqrt(u)``, ``u ~ U(0, 1)`` per utterance, so some fakes are nearly clean. One frame
holds too little of the tone to be sure; the evidence accumulates over frames
(:mod:`streambench.adapters.spoof_detector`), so the EER falls as more of the utterance is heard, and stays
above 0.

Then, in the seed's order (seed 002 "Batch Processing Considerations"):

- :func:`cut_length`: shorter audio padded by repeating it, longer audio truncated, to
  ``cut_length_s`` (``None``: every utterance keeps its length);
- :func:`augment`: the augmentations (seeded Gaussian noise at an SNR, a gain) applied to the fakes only,
  or to every utterance with ``manipulation_on_real``.

Streams: classes ``("fake", "real")``; every frame is labelled with its utterance's class (one-hot);
``meta["utterance_label"]`` is 1 for real, 0 for fake (seed 002 "File Format"). Frame ``i`` holds samples
``i*F .. (i+1)*F - 1`` as ``inputs={"audio": float32 [F]}``, the last frame zero-padded; frame times
follow the data contract (``t0 = 0``, frame ``i`` arrives at ``(i+1) F / R`` s). Utterance ``k`` depends
only on ``(seed, k)`` and is rendered when its ``frame_source`` is called. As the synthetic set's
(:mod:`streambench.harness.datasets.synthetic`), the seed is unset by default (a run draws a secret one) and
the warm-up utterance comes from the fixed public :data:`WARMUP_SEED`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, model_validator

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.synthetic import required_seed

__all__ = [
    "CLASSES",
    "Augmentation",
    "GainAugmentation",
    "NoiseAugmentation",
    "SpoofConfig",
    "apply_augmentations",
    "augment",
    "cut_length",
    "render_utterance",
    "streams",
    "warmup_stream",
]

CLASSES: tuple[str, str] = ("fake", "real")
WARMUP_KEY = 2**31 - 1
WARMUP_SEED = 0
"""The warm-up utterance's seed, whatever the data set's: public and fixed (see :func:`warmup_stream`)."""


class NoiseAugmentation(BaseModel):
    """Additive white Gaussian noise at an SNR drawn per utterance from ``U(snr_db_min, snr_db_max)``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["noise"] = "noise"
    snr_db_min: float = 10.0
    snr_db_max: float = 30.0


class GainAugmentation(BaseModel):
    """A gain drawn per utterance from ``U(gain_db_min, gain_db_max)`` dB."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["gain"] = "gain"
    gain_db_min: float = -6.0
    gain_db_max: float = 6.0


Augmentation = Annotated[NoiseAugmentation | GainAugmentation, Field(discriminator="kind")]


class SpoofConfig(BaseModel):
    """The synthetic spoof data set: seeded real and fake utterances, cut, then augmented."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    kind: Literal["synthetic_spoof"] = "synthetic_spoof"
    seed: int | None = Field(
        None,
        ge=0,
        description="seed of the utterances (utterance k depends on seed and k); unset: a secret seed drawn "
        "per run and written to its result after scoring (a seed given here is public)",
    )
    num_utterances: int = Field(200, ge=2, lt=WARMUP_KEY, description="scored utterances (streams)")
    real_fraction: float = Field(0.5, gt=0.0, lt=1.0, description="share of real utterances")
    sample_rate_hz: int = Field(16000, gt=0, description="audio sample rate")
    frame_samples: int = Field(320, gt=0, description="samples per frame (20 ms at 16 kHz)")
    min_duration_s: float = Field(2.0, gt=0.0, description="shortest utterance before cut_length")
    max_duration_s: float = Field(8.0, gt=0.0, description="longest utterance before cut_length")
    cut_length_s: float | None = Field(
        6.0,
        gt=0.0,
        description="cut_length in seconds: shorter audio padded by repetition, longer truncated; None: off",
    )
    noise_std_min: float = Field(0.01, ge=0.0, description="channel noise std, drawn per utterance")
    noise_std_max: float = Field(0.04, ge=0.0, description="largest channel noise std")
    artefact_hz: float = Field(6000.0, gt=0.0, description="frequency of the fakes' artefact tone")
    artefact_amplitude: float = Field(0.01, ge=0.0, description="largest amplitude of the artefact tone")
    artefact_fraction: float = Field(0.4, ge=0.0, le=1.0, description="share of 5-25-frame bursts with it")
    augmentations: tuple[Augmentation, ...] = Field((), description="applied after cut_length, seeded")
    manipulation_on_real: bool = Field(False, description="augment every utterance, not only the fakes")

    @model_validator(mode="after")
    def _consistent(self) -> SpoofConfig:
        if self.max_duration_s < self.min_duration_s:
            raise ValueError(
                f"max_duration_s ({self.max_duration_s}) < min_duration_s ({self.min_duration_s})"
            )
        if self.noise_std_max < self.noise_std_min:
            raise ValueError(f"noise_std_max ({self.noise_std_max}) < noise_std_min ({self.noise_std_min})")
        if self.artefact_hz >= self.sample_rate_hz / 2:
            raise ValueError(
                f"artefact_hz ({self.artefact_hz}) must be below Nyquist ({self.sample_rate_hz / 2})"
            )
        if round(self.min_duration_s * self.sample_rate_hz) < 1:
            raise ValueError("min_duration_s is shorter than one sample")
        return self

    @property
    def cut_samples(self) -> int | None:
        return None if self.cut_length_s is None else max(1, round(self.cut_length_s * self.sample_rate_hz))


# --------------------------------------------------------------------------------------------------
# seed 002 transforms


def cut_length(audio: npt.ArrayLike, length: int | None) -> np.ndarray:
    """Seed 002 "Audio Length Handling", on the last axis: shorter audio is padded by repeating it,
    longer audio truncated; ``None`` or an equal length leaves it as it is.

    The seed's ``repeats = int(cut_length / audio_input.shape[-1]) + 1;
    audio_input = audio_input.repeat(1, repeats)[:, :cut_length]`` (torch's ``repeat`` on the last axis is
    ``numpy.tile``), and ``audio_input[:, :cut_length]``.
    """
    x = np.asarray(audio)
    if length is None:
        return x
    if length < 1:
        raise ValueError(f"cut_length must be >= 1 sample, got {length}")
    n = x.shape[-1]
    if n == 0:
        raise ValueError("cannot pad empty audio by repetition")
    if n < length:
        repeats = int(length / n) + 1
        reps = (1,) * (x.ndim - 1) + (repeats,)
        return np.tile(x, reps)[..., :length]
    if n > length:
        return x[..., :length]
    return x


def apply_augmentations(
    audio: np.ndarray, augmentations: Sequence[NoiseAugmentation | GainAugmentation], rng: np.random.Generator
) -> np.ndarray:
    """The seed's ``augmentations(audio)``: each augmentation in order on every row of ``audio`` ``[B, T]``
    (per-row draws from ``rng``). Noise: ``rms(row) * 10^(-snr/20) * N(0, 1)``; gain: ``10^(g/20) * row``."""
    out = np.array(audio, dtype=np.float64, copy=True)
    for aug in augmentations:
        rows = out.shape[0]
        if isinstance(aug, NoiseAugmentation):
            snr = rng.uniform(aug.snr_db_min, aug.snr_db_max, size=(rows, 1))
            rms = np.sqrt(np.mean(out**2, axis=-1, keepdims=True))
            out += rms * 10.0 ** (-snr / 20.0) * rng.standard_normal(out.shape)
        else:
            out *= 10.0 ** (rng.uniform(aug.gain_db_min, aug.gain_db_max, size=(rows, 1)) / 20.0)
    return out


def augment(
    audio: npt.ArrayLike,
    labels: npt.ArrayLike,
    augmentations: Sequence[NoiseAugmentation | GainAugmentation],
    manipulation_on_real: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    """Seed 002 "Augmentation Application" on a batch ``audio`` ``[B, T]`` with ``labels`` ``[B]``
    (1 real, 0 fake): without ``manipulation_on_real`` only the rows with label 0 are augmented
    (``audio_input[fake_mask] = augmentations(audio_input[fake_mask])``), with it every row. Returns a
    new float64 array; untouched rows are equal to the input."""
    out = np.array(audio, dtype=np.float64, copy=True)
    if not augmentations:
        return out
    if manipulation_on_real:
        return apply_augmentations(out, augmentations, rng)
    fake_mask = np.asarray(labels) == 0
    if fake_mask.any():
        out[fake_mask] = apply_augmentations(out[fake_mask], augmentations, rng)
    return out


# --------------------------------------------------------------------------------------------------
# rendering


def _voice(rng: np.random.Generator, n: int, sr: int) -> np.ndarray:
    t = np.arange(n) / sr
    f0 = rng.uniform(90.0, 250.0) * (1.0 + 0.05 * np.sin(2 * np.pi * rng.uniform(2.0, 5.0) * t))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    x = np.zeros(n)
    base = np.exp(1j * phase)
    harmonic = base.copy()
    for k in range(1, 17):  # harmonics of f0 <= 250 Hz stay below ~4 kHz; sin(k phase + phi) / k
        x += (harmonic * np.exp(1j * rng.uniform(0, 2 * np.pi))).imag / k
        harmonic *= base
    envelope = np.abs(np.sin(2 * np.pi * rng.uniform(2.5, 5.0) * t + rng.uniform(0, np.pi)))
    return 0.3 * envelope * x


def _seed(config: SpoofConfig) -> int:
    return required_seed(config.seed, "synthetic spoof")


def _is_real(config: SpoofConfig) -> np.ndarray:
    n_real = min(config.num_utterances - 1, max(1, round(config.num_utterances * config.real_fraction)))
    real = np.zeros(config.num_utterances, dtype=bool)
    real[:n_real] = True
    return np.random.default_rng([_seed(config), 1]).permutation(real)


def render_utterance(config: SpoofConfig, key: int, real: bool, num_samples: int | None = None) -> np.ndarray:
    """float32 audio of utterance ``key`` (raw length drawn, or ``num_samples``), cut and augmented."""
    rng = np.random.default_rng([_seed(config), 2, key])
    sr = config.sample_rate_hz
    lo, hi = round(config.min_duration_s * sr), round(config.max_duration_s * sr)
    n = int(rng.integers(lo, hi + 1)) if num_samples is None else num_samples
    x = _voice(rng, n, sr) + rng.uniform(config.noise_std_min, config.noise_std_max) * rng.standard_normal(n)
    amplitude = config.artefact_amplitude * np.sqrt(rng.random())
    if not real and amplitude > 0:
        on = np.zeros(n, dtype=bool)
        start, fs = 0, config.frame_samples
        while start < n:
            burst = int(rng.integers(5, 26)) * fs
            if rng.random() < config.artefact_fraction:
                on[start : start + burst] = True
            start += burst
        t = np.arange(n) / sr
        x += on * amplitude * np.sin(2 * np.pi * config.artefact_hz * t + rng.uniform(0, 2 * np.pi))
    if num_samples is None:
        x = cut_length(x[None, :], config.cut_samples)[0]
    label = np.array([1 if real else 0])
    aug_rng = np.random.default_rng([_seed(config), 3, key])
    x = augment(x[None, :], label, config.augmentations, config.manipulation_on_real, aug_rng)[0]
    return x.astype(np.float32)


def _stream(config: SpoofConfig, key: int, real: bool, stream_id: str, num_samples: int | None) -> Stream:
    fs, sr = config.frame_samples, config.sample_rate_hz
    raw = num_samples
    if raw is None:  # the raw length: drawn first from the utterance's generator, as render_utterance does
        rng = np.random.default_rng([_seed(config), 2, key])
        raw = int(rng.integers(round(config.min_duration_s * sr), round(config.max_duration_s * sr) + 1))
    n = raw if num_samples is not None or config.cut_samples is None else config.cut_samples
    num_frames = -(-n // fs)
    times = np.arange(1, num_frames + 1) * fs / sr
    labels = np.zeros((num_frames, 2), dtype=bool)
    labels[:, 1 if real else 0] = True

    def frames() -> list[Frame]:
        audio = render_utterance(config, key, real, num_samples)
        padded = np.zeros(num_frames * fs, dtype=np.float32)
        padded[: audio.size] = audio
        blocks = padded.reshape(num_frames, fs)
        return [Frame(index=i, t=float(times[i]), inputs={"audio": blocks[i]}) for i in range(num_frames)]

    augmented = bool(config.augmentations) and (config.manipulation_on_real or not real)
    return Stream(
        stream_id=stream_id,
        classes=CLASSES,
        labels=labels,
        frame_times=times,
        frame_source=frames,
        modalities=("audio",),
        segment_length_s=1.0,  # for the online protocol's segment figures; detection scores utterances
        meta={
            "utterance_label": 1 if real else 0,
            "sample_rate_hz": sr,
            "frame_samples": fs,
            "raw_samples": raw,
            "padded_samples": num_frames * fs - n,
            "augmented": augmented,
        },
    )


def streams(config: SpoofConfig) -> list[Stream]:
    """The scored utterances, ``spoof-0000``, ``spoof-0001``, ... (labels shuffled by the seed)."""
    return [_stream(config, k, bool(real), f"spoof-{k:04d}", None) for k, real in enumerate(_is_real(config))]


def warmup_stream(config: SpoofConfig, num_frames: int) -> Stream:
    """An unscored real utterance of at least ``num_frames`` frames (no cut_length), from its own key and
    the fixed public :data:`WARMUP_SEED` (never the data set's seed, which may be secret)."""
    public = config.model_copy(update={"seed": WARMUP_SEED})
    return _stream(public, WARMUP_KEY, True, "spoof-warmup", max(1, num_frames) * config.frame_samples)
