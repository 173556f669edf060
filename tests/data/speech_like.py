"""Speech-like test audio, generated (no file ships, nothing is downloaded): for the Silero VAD tests and
the README's end-to-end example.

A *speech-like* segment is a chain of syllables of 160-300 ms (about 4 per second): each a harmonic
series on a fundamental of 100-200 Hz (slow pitch movement, a declination over the segment, a little
shimmer), shaped by three formant resonators set to one of seven vowels (Peterson & Barney's average
formants), with 30 ms on/off ramps. Between segments there is only faint white noise.

    python -m tests.data.speech_like speech     # writes speech/speech-0.wav + speech-0.txt (Audacity), ...
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.signal import lfilter

SR = 16_000
SEGMENTS = ((0.5, 1.7), (2.4, 3.4), (4.2, 5.6))  # seconds of speech in each 6.5 s recording
DURATION_S = 6.5
VOWEL_FORMANTS = (  # F1, F2, F3 in Hz (Peterson & Barney 1952, male averages)
    (730, 1090, 2440), (270, 2290, 3010), (300, 870, 2240), (530, 1840, 2480),
    (570, 840, 2410), (440, 1020, 2240), (660, 1720, 2410),
)  # fmt: skip


def _resonator(x: np.ndarray, freq: float, bandwidth: float) -> np.ndarray:
    """Two-pole resonance at ``freq`` Hz with ``bandwidth`` Hz (a formant)."""
    r = np.exp(-np.pi * bandwidth / SR)
    theta = 2 * np.pi * freq / SR
    return np.asarray(lfilter([1 - r], [1, -2 * r * np.cos(theta), r * r], x))


def speech_like(n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples of syllables at ~4 Hz: voiced harmonic source through vowel formants."""
    f0_base = rng.uniform(100, 200)
    out = np.zeros(n)
    start = 0
    while start < n:
        m = min(int(SR * rng.uniform(0.16, 0.30)), n - start)
        t = np.arange(m) / SR
        f0 = f0_base * (1 - 0.15 * start / n) * (1 + 0.08 * np.sin(2 * np.pi * rng.uniform(2, 5) * t))
        phase = 2 * np.pi * np.cumsum(f0) / SR
        harmonics = np.arange(1, 60)[:, None]
        audible = harmonics * f0[None, :] < SR / 2 - 1000
        source = (np.sin(harmonics * phase + 0.3 * harmonics) / harmonics * audible).sum(axis=0)
        source *= (1 + 0.05 * rng.standard_normal(m)).clip(0)
        formants = VOWEL_FORMANTS[rng.integers(len(VOWEL_FORMANTS))]
        vowel = sum(
            gain * _resonator(source, f, 60 + 30 * i)
            for i, (f, gain) in enumerate(zip(formants, (1.0, 0.5, 0.25), strict=True))
        )
        ramp = np.minimum(1.0, np.minimum(np.arange(m), np.arange(m)[::-1]) / (0.03 * SR))
        syllable = vowel * ramp
        out[start : start + m] = syllable / (np.abs(syllable).max() + 1e-9) * rng.uniform(0.6, 1.0)
        start += m
    return out


def recording(seed: int) -> np.ndarray:
    """A 6.5 s, 16 kHz float32 recording: faint noise, with speech-like audio during :data:`SEGMENTS`."""
    rng = np.random.default_rng(seed)
    audio = 0.002 * rng.standard_normal(int(DURATION_S * SR))
    for begin, end in SEGMENTS:
        i, j = int(begin * SR), int(end * SR)
        voiced = speech_like(j - i, rng)
        audio[i:j] += 0.5 * voiced / np.abs(voiced).max()
    return audio.astype(np.float32)


def write_example(directory: Path, seeds: tuple[int, ...] = (0, 1, 2)) -> list[Path]:
    """``speech-<seed>.wav`` (16 kHz, float) with its Audacity label track ``speech-<seed>.txt``."""
    import soundfile

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for seed in seeds:
        wav = directory / f"speech-{seed}.wav"
        soundfile.write(str(wav), recording(seed), SR, subtype="FLOAT")
        (directory / f"speech-{seed}.txt").write_text(
            "".join(f"{begin}\t{end}\tspeech\n" for begin, end in SEGMENTS)
        )
        written.append(wav)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "speech")
    for path in write_example(target):
        print(path)
