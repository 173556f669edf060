"""``streambench run --config FILE`` (harness/cli/config.py): JSON and TOML files validated by RunConfig,
options typed on the command line laid over them, errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.cli.config import CLI_FIELDS, RunOptions, build_run_config
from streambench.harness.io.config_file import ConfigError, load_config_file
from streambench.harness.results.files import load_result

TOML = """
adapter = "reference"
on_error = "stop"

[data]
num_streams = 2
duration_s = 5.0

[engine]
warmup_frames = 10

[protocol.decision]
kind = "top_k"
k = 2
"""


def defaults() -> dict[str, object]:
    """The command line's values when nothing is typed (as the CLI passes them)."""
    return {
        "adapter": "reference",
        "option": {},
        "dataset": "synthetic",
        "seed": None,
        "streams": 60,
        "duration": 10.0,
        "warmup_frames": 100,
        "pacing": "unpaced",
        "paced_policy": "queue",
        "decision": "threshold",
        "threshold": 0.5,
        "top_k": 1,
        "output_dir": Path("results"),
        "run_id": None,
        "baseline": None,
        "on_error": "continue",
        "isolate": True,
        "sealed": True,
        "frame_timeout": 30.0,
        "stream_timeout": 600.0,
        "start_timeout": 300.0,
        "memory_limit_mb": None,
        "sandbox": "auto",
    }


def test_every_cli_value_is_mapped() -> None:
    assert set(defaults()) == set(CLI_FIELDS) == set(RunOptions.model_fields)
    assert RunOptions(**defaults()) == RunOptions()  # the model's defaults are the command line's


def test_toml_file_then_typed_options_override(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(TOML)
    config = build_run_config(RunOptions(**{**defaults(), "streams": 3}), {"streams"}, path)
    assert config.data.num_streams == 3  # typed on the command line
    assert config.data.duration_s == 5.0 and config.engine.warmup_frames == 10  # from the file
    assert config.protocol.decision.kind == "top_k" and config.protocol.decision.k == 2
    assert config.on_error == "stop"
    # untouched defaults of RunConfig (no seed: the run draws a secret one, issue 24)
    assert config.data.seed is None and config.engine.pacing == "unpaced"


def test_json_equals_toml(tmp_path: Path) -> None:
    toml, json_file = tmp_path / "a.toml", tmp_path / "a.json"
    toml.write_text(TOML)
    json_file.write_text(
        '{"adapter": "reference", "on_error": "stop", "data": {"num_streams": 2, "duration_s": 5.0},'
        ' "engine": {"warmup_frames": 10}, "protocol": {"decision": {"kind": "top_k", "k": 2}}}'
    )
    assert load_config_file(toml) == load_config_file(json_file)


def test_without_a_file_every_cli_value_is_used() -> None:
    config = build_run_config(RunOptions(**defaults()), set())
    assert config.data.num_streams == 60 and config.engine.warmup_frames == 100


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.toml", "[data]\nnum_streams = -1\n", r"bad\.toml: invalid run configuration:\n  data\.num_str"),
        ("bad.toml", "adapter = \n", r"bad\.toml: not valid TOML"),
        ("bad.json", '{"data": {"fps": 0}}', r"bad\.json: invalid run configuration:\n  data\.fps: "),
        ("bad.json", '{"data":\n {"fps": }', r"bad\.json: line 2: not valid JSON"),
        ("bad.json", "[1, 2]", r"bad\.json: the configuration must be a table/object, not list"),
        ("bad.json", '{"engine": {"warmup": 3}}', r"engine\.warmup: Extra inputs are not permitted"),
        ("bad.yaml", "adapter: x", r"unknown configuration format '\.yaml'"),
    ],
)
def test_bad_files_name_the_file_and_field(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        build_run_config(RunOptions(**defaults()), set(), path)


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.toml: no such configuration file"):
        load_config_file(tmp_path / "missing.toml")
    path = tmp_path / "latin.toml"
    path.write_bytes(b'adapter = "reference"\n# caf\xe9\n')
    with pytest.raises(ConfigError, match=r"latin\.toml: line 2: not UTF-8 text"):
        load_config_file(path)


@pytest.mark.processes
def test_cli_run_with_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(TOML.replace('on_error = "stop"', 'on_error = "continue"'))
    args = ["run", "--config", str(path), "--output-dir", str(tmp_path), "--run-id", "cfg", "--no-progress"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    result = load_result(tmp_path / "cfg")
    assert result.scored.planned_streams == 2 and result.warmup is not None and result.warmup.frames == 10
    assert result.protocol_config.decision.kind == "top_k"
    path.write_text("[data]\nnum_streams = 0\n")
    res = CliRunner().invoke(app, ["run", "--config", str(path), "--no-progress"])
    assert res.exit_code == 2 and "data.num_streams" in res.output and "run.toml" in res.output
