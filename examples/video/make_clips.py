"""Video clips for examples/video/video.toml: 30 frames/s H.264 clips in which a bright square sometimes
moves across a dim, noisy scene, with an Audacity label track per clip (written with PyAV; nothing is
downloaded).

    python examples/video/make_clips.py clips             # 6 clips of 4 s, 64 x 48: clips/clip-0.mp4 + .txt
    python examples/video/make_clips.py clips --clips 2
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

FPS, WIDTH, HEIGHT, SECONDS = 30, 64, 48, 4.0


def frames(rng: np.random.Generator) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """``[T, H, W, 3]`` uint8 frames of one clip and its flash spans ``(onset, offset)`` in seconds."""
    num = int(SECONDS * FPS)
    video = rng.normal(40, 12, size=(num, HEIGHT, WIDTH, 3)).clip(0, 255)
    spans = []
    start = int(rng.integers(10, 30))
    while start < num - 30:
        length = int(rng.integers(15, 31))  # 0.5-1 s
        for k in range(length):
            x = int((WIDTH - 16) * k / length)
            video[start + k, 16:32, x : x + 16] = 230
        spans.append((start / FPS, (start + length) / FPS))
        start += length + int(rng.integers(20, 45))
    return video.astype(np.uint8), spans


def write(path: Path, video: np.ndarray) -> None:
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        for pixels in video:
            for packet in stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory to write the clips and their label tracks to")
    parser.add_argument("--clips", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    for i in range(args.clips):
        video, spans = frames(rng)
        write(args.out / f"clip-{i}.mp4", video)
        lines = "".join(f"{onset:.4f}\t{offset:.4f}\tflash\n" for onset, offset in spans)
        (args.out / f"clip-{i}.txt").write_text(lines)
    print(f"wrote {args.clips} clips of {SECONDS:g} s at {FPS} frames/s ({WIDTH} x {HEIGHT}) to {args.out}/")


if __name__ == "__main__":
    main()
