"""Issue 18, "What a misbehaving model still costs": what a run refuses before it starts and how it
reports what it cannot do. A run id is a name (never a path out of the store); options that apply to
an isolated run only are refused with ``--in-process``; ``--on-error stop`` ends with exit code 1."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from streambench.harness.cli import app
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


@pytest.mark.parametrize(
    "option", [["--frame-timeout", "5"], ["--stream-timeout", "60"], ["--memory-limit-mb", "512"]]
)
def test_isolation_limits_without_isolate_are_refused(tmp_path: Path, option: list[str]) -> None:
    # isolation is the default (issue 24): the limits are refused when the run is typed --in-process
    res = CliRunner().invoke(app, ["run", "--output-dir", str(tmp_path), "--in-process", *option, *SMALL])
    assert res.exit_code == 2, res.output
    assert option[0] in res.output and "--in-process" in res.output
    assert not any(tmp_path.iterdir())  # refused before anything ran
