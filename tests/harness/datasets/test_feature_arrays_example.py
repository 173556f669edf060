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
    assert (run / "report.html").is_file()
