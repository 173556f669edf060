"""Short video clips the tests encode themselves with PyAV (no file ships): frames of a given brightness,
at a constant frame rate or at given timestamps (a variable frame rate), losslessly (FFV1 in Matroska) so
the decoded pixels can be checked."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import numpy as np

__all__ = ["encode_clip", "levels"]


def levels(brightness: Sequence[int], height: int = 24, width: int = 32) -> np.ndarray:
    """Grey frames ``[T, H, W, 3]`` uint8, frame ``i`` all at ``brightness[i]``."""
    values = np.asarray(brightness, dtype=np.uint8)
    return np.broadcast_to(values[:, None, None, None], (len(values), height, width, 3)).copy()


def encode_clip(
    path: Path, frames: np.ndarray, fps: int = 30, times_ms: Sequence[int] | None = None, codec: str = "ffv1"
) -> Path:
    """Write ``frames`` (``[T, H, W, 3]`` uint8) to ``path``: frame ``i`` at ``i / fps`` s, or at
    ``times_ms[i]`` ms (a 1 ms time base) when given."""
    import av

    container = av.open(str(path), "w")
    stream = container.add_stream(codec, rate=fps)
    stream.width, stream.height = int(frames.shape[2]), int(frames.shape[1])
    stream.pix_fmt = "yuv444p" if codec == "ffv1" else "yuv420p"
    if times_ms is not None:
        stream.codec_context.time_base = stream.time_base = Fraction(1, 1000)
    for i, pixels in enumerate(frames):
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(pixels), format="rgb24")
        if times_ms is not None:
            frame.pts, frame.time_base = int(times_ms[i]), Fraction(1, 1000)
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)
    container.close()
    return path
