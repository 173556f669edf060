"""Issue 18, "What a misbehaving model still costs": what a run refuses before it starts and how it
reports what it cannot do. A run id is a name (never a path out of the store); options that apply to
an isolated run only are refused with ``--in-process``; ``--on-error stop`` ends with exit code 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.cli.config import ISOLATE_ONLY
from streambench.harness.execution.config import RunConfig

SMALL = ["--streams", "2", "--duration", "5", "--warmup-frames", "0", "--no-progress", "--no-report"]


@pytest.mark.parametrize("run_id", ["../x", "a/b", "/tmp/abs", "..", ".", "", "  ", "a\\b", "x\x1b[2J"])
def test_a_run_id_that_is_not_a_name_is_refused(tmp_path: Path, run_id: str) -> None:
    store = tmp_path / "store"
    with pytest.raises(ValidationError, match="run_id"):
        RunConfig.model_validate({"run_id": run_id, "output_dir": store})
    res = CliRunner().invoke(app, ["run", "--output-dir", str(store), "--run-id", run_id, *SMALL])
    assert res.exit_code == 2, res.output
    assert "run_id" in res.output and "Traceback" not in res.output
    assert not any(tmp_path.rglob("events.jsonl"))  # nothing was written, in the store or beside it


def test_a_config_file_run_id_is_checked_too(tmp_path: Path) -> None:
    config = tmp_path / "run.toml"
    config.write_text('run_id = "../escaped"\n')
    res = CliRunner().invoke(app, ["run", "--config", str(config), "--output-dir", str(tmp_path / "s")])
    assert res.exit_code == 2 and "run_id" in res.output and str(config) in res.output


LIMITS = {
    "frame_timeout": "5",
    "stream_timeout": "60",
    "start_timeout": "30",
    "memory_limit_mb": "512",
    "sandbox": "off",
}
"""A value of each option that applies to the worker only (``ISOLATE_ONLY``)."""


def test_every_isolate_only_option_is_tried_here() -> None:
    assert set(LIMITS) == set(ISOLATE_ONLY)


@pytest.mark.parametrize("name", sorted(LIMITS))
def test_isolation_limits_without_isolate_are_refused(tmp_path: Path, name: str) -> None:
    # isolation is the default: the limits are refused when the run is typed --in-process
    option = ["--" + name.replace("_", "-"), LIMITS[name]]
    res = CliRunner().invoke(app, ["run", "--output-dir", str(tmp_path), "--in-process", *option, *SMALL])
    assert res.exit_code == 2, res.output
    flat = " ".join(res.output.split())
    assert f"{option[0]} applies to an isolated run only" in flat and "leave it out" in flat
    assert "--in-process" in res.output
    assert not any(tmp_path.iterdir())  # refused before anything ran


def test_two_isolation_limits_without_isolate_are_named_together(tmp_path: Path) -> None:
    limits = ["--frame-timeout", "5", "--start-timeout", "30"]
    res = CliRunner().invoke(app, ["run", "--output-dir", str(tmp_path), "--in-process", *limits, *SMALL])
    assert res.exit_code == 2, res.output
    flat = " ".join(res.output.split())
    assert "--frame-timeout, --start-timeout apply to an isolated run only" in flat
    assert "leave them out" in flat
