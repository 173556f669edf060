"""Reference deepfake detector for the detection protocol (seed 002 "Score Extraction").

A causal matched filter, no training: the synthetic spoof data set (``harness/datasets/spoof.py``) marks
its fakes with a faint tone at ``artefact_hz`` in some frames. For each frame the detector takes the
Hann-windowed spectrum and the per-frame evidence

    e_t = log( P(3 bins around artefact_hz) / (3 * mean P(neighbouring bins)) )

which for audio without the tone (white noise in that band) has mean ``clean_mean`` and standard
deviation ``clean_std`` (both measured once on 200 000 frames of white noise, 20 ms at 16 kHz). The
evidence is accumulated over every frame heard so far into a z-score,
``z_n = (mean(e_1..e_n) - clean_mean) * sqrt(n) / clean_std``, so a decision gets better the more of the
utterance has been heard. It answers every frame with two logits, ``fake = z/2`` and ``real = -z/2``:
the softmax of the real class (seed 002's multi-class extraction) is ``sigmoid(-z)``.

Its accuracy on any other data is meaningless; it exists to give the detection protocol a known, honest,
causal model whose EER falls with heard time.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, model_validator

from streambench.adapters.contract import AdapterInfo, AdapterOptions, Frame, Prediction, StreamingAdapter

__all__ = ["SpoofDetectorAdapter", "SpoofDetectorOptions"]


class SpoofDetectorOptions(AdapterOptions):
    """Options of :class:`SpoofDetectorAdapter`. ``classes`` is data-bound."""

    classes: tuple[str, ...] | None = Field(
        None, description="the data set's two classes, 'fake' and 'real' in any order; None: (fake, real)"
    )
    sample_rate_hz: int = Field(16000, gt=0)
    frame_samples: int = Field(320, ge=32)
    artefact_hz: float = Field(6000.0, gt=0.0, description="where the fakes' artefact tone sits")
    clean_mean: float = Field(-0.209, description="mean of e_t without the tone (white noise)")
    clean_std: float = Field(0.842, gt=0.0, description="std of e_t without the tone (white noise)")

    @model_validator(mode="after")
    def _check(self) -> SpoofDetectorOptions:
        if self.classes is not None and sorted(self.classes) != ["fake", "real"]:
            raise ValueError(f"classes must be 'fake' and 'real' (any order), got {list(self.classes)}")
        bins = self.frame_samples // 2
        centre = round(self.artefact_hz * self.frame_samples / self.sample_rate_hz)
        if not 12 <= centre <= bins - 12:
            raise ValueError(
                f"artefact_hz {self.artefact_hz} lies too close to 0 Hz or Nyquist for a frame of "
                f"{self.frame_samples} samples at {self.sample_rate_hz} Hz"
            )
        return self


class SpoofDetectorAdapter(StreamingAdapter):
    """Accumulated artefact evidence -> per-frame [fake, real] logits (see the module docstring)."""

    Options = SpoofDetectorOptions

    def __init__(self, options: SpoofDetectorOptions | None = None) -> None:
        super().__init__(options)
        opts: SpoofDetectorOptions = self.options  # type: ignore[assignment]
        classes = opts.classes or ("fake", "real")
        self._info = AdapterInfo(
            name="reference-detector",
            classes=classes,
            modalities=("audio",),
            sample_rate_hz=opts.sample_rate_hz,
            frame_samples=opts.frame_samples,
        )
        self._fake, self._real = classes.index("fake"), classes.index("real")
        self._window = np.hanning(opts.frame_samples)
        b = round(opts.artefact_hz * opts.frame_samples / opts.sample_rate_hz)
        self._band = np.arange(b - 1, b + 2)
        self._neighbours = np.r_[b - 10 : b - 2, b + 3 : b + 11]
        self._mean, self._std = opts.clean_mean, opts.clean_std
        self.reset_state()

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.total = 0.0
        self.count = 0

    def predict(self, frame: Frame) -> Prediction:
        audio = frame.inputs.get("audio")
        if audio is not None:
            power = np.abs(np.fft.rfft(np.asarray(audio, dtype=np.float64) * self._window)) ** 2
            floor = 3.0 * float(power[self._neighbours].mean())
            band = float(power[self._band].sum())
            if floor > 0.0 and band > 0.0:  # digital silence carries no evidence either way
                self.total += math.log(band / floor)
                self.count += 1
        z = 0.0
        if self.count:
            z = (self.total / self.count - self._mean) * math.sqrt(self.count) / self._std
        scores = np.zeros(2, dtype=np.float32)
        scores[self._fake], scores[self._real] = z / 2.0, -z / 2.0
        return Prediction(scores=scores)
