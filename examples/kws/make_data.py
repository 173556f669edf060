"""Keyword-spotting data for examples/kws/kws.toml: log-mel-like feature frames every 10 ms with two
keywords, "yes" and "no", over background (no file ships, nothing is downloaded).

Each stream is one ``.npz`` file: ``mel`` float32 ``[T, 40]`` (40 bands, a frame every 10 ms) and ``labels``
int ``[T]`` (0 background, 1 yes, 2 no: the per-frame labels streambench's feature_arrays kind reads). A
keyword lasts 0.4-0.7 s and lifts its own bands (yes: 4-15, a rising sweep; no: 20-31, a falling one) over
noise whose level drifts from stream to stream, so a frame alone is ambiguous and a short memory helps.

    python examples/kws/make_data.py kws_data            # 20 streams of 3 s: kws_data/kws-000.npz, ...
    python examples/kws/make_data.py kws_data --streams 4
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

BANDS = 40
FRAMES_PER_S = 100  # 10 ms frames
KEYWORDS = {1: (4, 16, +1), 2: (20, 32, -1)}  # class index: (first band, end band, sweep direction)
CLASSES = ("background", "yes", "no")


def stream(rng: np.random.Generator, seconds: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """``(mel [T, 40], labels [T])`` of one stream: one or two keywords at random places."""
    num = int(seconds * FRAMES_PER_S)
    noise = rng.uniform(0.6, 1.0)
    mel = (noise * rng.standard_normal((num, BANDS))).astype(np.float32)
    labels = np.zeros(num, dtype=np.int64)
    start = int(rng.integers(20, 60))
    while start < num - 80:
        word = int(rng.integers(1, 3))
        length = int(rng.integers(40, 71))
        low, high, direction = KEYWORDS[word]
        for k in range(length):
            centre = low + (high - low) * (k / length if direction > 0 else 1 - k / length)
            bands = np.arange(BANDS)
            mel[start + k] += 1.6 * np.exp(-0.5 * ((bands - centre) / 3.0) ** 2) + 0.9 * (
                (bands >= low) & (bands < high)
            )
        labels[start : start + length] = word
        start += length + int(rng.integers(60, 140))
    return mel, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory to write the .npz streams to")
    parser.add_argument("--streams", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    for i in range(args.streams):
        mel, labels = stream(rng)
        np.savez(args.out / f"kws-{i:03d}.npz", mel=mel, labels=labels)
    print(
        f"wrote {args.streams} streams of {BANDS}-band frames every 10 ms to {args.out}/ (classes {CLASSES})"
    )


if __name__ == "__main__":
    main()
