"""``streambench run --protocol-option KEY=VALUE`` (``-p``): one field of a protocol's own configuration
from the command line, laid over ``--protocol-config`` and validated again (issue 28: ``deadline_ms``,
``budget_s``, ``serving``... of the capacity protocol without a file)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.cli.config import ConfigError, with_protocol_options
from streambench.harness.runs import registry


def test_options_are_laid_over_the_file_and_validated(tmp_path: Path) -> None:
    capacity = registry.get("capacity")
    filed = tmp_path / "capacity.toml"
    filed.write_text("deadline_ms = 80.0\nreplicas = 2\n")
    settings = with_protocol_options(
        capacity, capacity.load_config(filed), {"deadline_ms": 40, "serving": "batched"}
    )
    assert settings.deadline_ms == 40.0 and settings.serving == "batched" and settings.replicas == 2  # type: ignore[attr-defined]


def test_a_bad_value_exits_2_naming_the_field_before_anything_runs(tmp_path: Path) -> None:
    args = [
        "run",
        "--protocol",
        "capacity",
        "-p",
        "deadline_ms=-5",
        "--output-dir",
        str(tmp_path),
        "--no-progress",
    ]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2, done.output
    assert "--protocol-option: invalid capacity configuration" in done.output and "deadline_ms" in done.output
    assert not any(tmp_path.iterdir())  # nothing ran, nothing written


def test_an_unknown_field_and_a_protocol_without_a_configuration_are_refused() -> None:
    for args, said in (
        (["-p", "deadline=40", "--protocol", "capacity"], "deadline"),
        (["-p", "x=1"], "--protocol online has no configuration of its own"),
        (["-p", "novalue"], "--protocol-option 'novalue': expected KEY=VALUE"),
    ):
        done = CliRunner().invoke(app, ["run", *args, "--no-progress"])
        assert done.exit_code == 2 and said in done.output, done.output


def test_the_function_refuses_a_protocol_without_a_configuration() -> None:
    online = registry.get("online")
    try:
        with_protocol_options(online, None, {"x": 1})
    except ConfigError as exc:
        assert "no configuration of its own" in str(exc)
    else:
        raise AssertionError("refused nothing")
