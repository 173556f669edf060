"""The planted cross-stream peeker (adapters/offenders/cross_stream.py) refuses what no batch of an
honest server holds: two frames of one stream, or a frame again."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import Frame
from streambench.adapters.offenders.cross_stream import (
    CrossStreamLeak,
    CrossStreamPeekerAdapter,
    CrossStreamPeekerOptions,
)


def test_the_peeker_refuses_two_frames_of_a_stream_in_a_batch() -> None:
    peeker = CrossStreamPeekerAdapter(CrossStreamPeekerOptions(scan_every=10**9))  # this test holds frames
    frames = [Frame(i, 0.04 * (i + 1), {"audio": np.zeros(2, np.float32)}) for i in range(3)]
    peeker.predict_batch([(1, frames[0])])
    with pytest.raises(CrossStreamLeak, match="two frames of one stream"):
        peeker.predict_batch([(1, frames[1]), (1, frames[2])])
    with pytest.raises(CrossStreamLeak, match="frame 0 after frame 0"):
        peeker.predict_batch([(1, frames[0])])
