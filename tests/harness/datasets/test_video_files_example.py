"""End to end (slow tier): docs/data.md's 30 frames/s video example as a reader runs it, from a copy of the
checkout's examples/: ``python examples/video/make_clips.py clips`` (H.264 clips PyAV encodes) then
``streambench run --config examples/video/video.toml`` in the default sealed worker."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support import run_example

pytestmark = pytest.mark.slow


def test_the_video_example_runs_at_30_frames_per_second(tmp_path: Path) -> None:
    make = ["examples/video/make_clips.py", "clips", "--clips", "2"]
    done, run = run_example(tmp_path, make, "examples/video/video.toml", "video")
    assert done.returncode == 0, done.stderr + done.stdout
    result = json.loads((run / "result.json").read_text())
    assert result["execution"]["mode"] == "sealed" and result["adapter_info"]["name"] == "flash-detector"
    assert result["metrics"]["scored_classes"] == ["flash"] and result["scored"]["scored_frames"] == 2 * 120
    with np.load(run / "arrays.npz") as arrays:  # frame i of a 30 frames/s clip arrives at (i + 1) / 30 s
        times = arrays["s0/frame_times_ns"]
    np.testing.assert_allclose(times / 1e9, np.arange(1, 121) / 30, atol=1e-6)
