"""End to end (slow tier): docs/data.md's keyword example as a reader runs it, from a copy of the checkout's
examples/: ``python examples/kws/make_data.py kws_data`` then ``streambench run --config
examples/kws/kws.toml`` in the default sealed worker, the factory found in the working directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import run_example

pytestmark = pytest.mark.slow


def test_the_keyword_example_runs_from_its_files(tmp_path: Path) -> None:
    make = ["examples/kws/make_data.py", "kws_data", "--streams", "4"]
    done, run = run_example(tmp_path, make, "examples/kws/kws.toml", "kws")
    assert done.returncode == 0, done.stderr + done.stdout
    result = json.loads((run / "result.json").read_text())
    assert result["execution"]["mode"] == "sealed" and result["adapter_info"]["name"] == "kws-spotter"
    metrics = result["metrics"]
    assert metrics["classes"] == ["background", "yes", "no"] and metrics["scored_classes"] == ["yes", "no"]
    assert result["scored"]["scored_frames"] == 4 * 300  # 3 s of 10 ms frames per stream
    assert "F1 counts: the classes ['yes', 'no'], micro and macro" in done.stdout
    # the figures that would look broken alone say why: a 1 s segment of 10 ms frames, compute-aware F1@0
    output = " ".join(done.stdout.split())  # rich wraps long lines at the terminal's width
    assert (
        "why: segment F1: 1 s segments of 100 frames of 10 ms (data.segment_length_s = 1 s, the default"
        in output
    )
    assert "why: F1 compute-aware at 0 ms is 0 by construction" in output
    report = (run / "report.html").read_text()
    assert "Why: segment F1: 1 s segments of 100 frames of 10 ms" in report
    assert "streambench report: kws-spotter (torch-module) · kws" in report  # the model's name, then the id
