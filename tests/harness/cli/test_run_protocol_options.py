"""A protocol's own field on ``streambench run`` has one route (harness/cli/options.py ``RETIRED``): ``-p
KEY=VALUE``, laid over the file of ``--protocol-config`` (which is laid over the configuration's defaults),
validated as the configuration is. The flags that once set the capacity protocol's ``deadline_ms`` and
``budget_s`` (``--deadline-ms``, ``--budget-s``) exit 2 with one line saying what to type instead, before
anything runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streambench.harness import api
from streambench.harness.cli import app
from streambench.protocols.capacity import CapacityConfig


class _Captured(Exception):
    """Raised by the stand-in for the run: the configuration was built, nothing runs."""


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What ``streambench run`` hands the Python entry point (``api.run``), instead of running it."""
    seen: dict[str, Any] = {}

    def fake_run(config: Any, protocol: str, settings: Any, progress: Any = None, given: Any = None) -> None:
        seen.update(protocol=protocol, settings=settings)
        raise _Captured

    monkeypatch.setattr(api, "run", fake_run)
    return seen


def _invoke(tmp_path: Path, *args: str, protocol: str = "capacity") -> Any:
    command = ["run", "--protocol", protocol, "--no-progress", "--output-dir", str(tmp_path / "results")]
    return CliRunner().invoke(app, [*command, *args])


def test_p_is_laid_over_the_file_and_the_defaults(tmp_path: Path, captured: dict[str, Any]) -> None:
    filed = tmp_path / "capacity.toml"
    filed.write_text("deadline_ms = 80.0\nbudget_s = 100\nreplicas = 2\n")
    done = _invoke(tmp_path, "--protocol-config", str(filed), "-p", "deadline_ms=40", "-p", "budget_s=12.5")
    assert isinstance(done.exception, _Captured), done.output
    settings = captured["settings"]
    assert isinstance(settings, CapacityConfig) and captured["protocol"] == "capacity"
    assert settings.deadline_ms == 40.0 and settings.budget_s == 12.5  # -p wins over the file
    assert settings.replicas == 2  # the file's other fields stay
    _invoke(tmp_path, "--protocol-config", str(filed))  # the file over the defaults
    assert captured["settings"].deadline_ms == 80.0 and captured["settings"].budget_s == 100.0
    _invoke(tmp_path, "-p", "deadline_ms=25")  # -p over the defaults
    assert captured["settings"].deadline_ms == 25.0
    assert captured["settings"].budget_s == CapacityConfig.model_fields["budget_s"].default
    _invoke(tmp_path, "-p", "deadline_ms=25", "-p", "deadline_ms=30")  # the last of a key wins
    assert captured["settings"].deadline_ms == 30.0


@pytest.mark.parametrize(
    ("args", "instead"),
    [
        (["--deadline-ms", "40"], "-p deadline_ms=40"),
        (["--budget-s", "12.5"], "-p budget_s=12.5"),
        (["--deadline-ms", "0"], "-p deadline_ms=0"),  # the value is not judged: the route is refused
        (["-p", "budget_s=20", "--deadline-ms", "40"], "-p deadline_ms=40"),
    ],
)
@pytest.mark.parametrize("protocol", ["capacity", "online"])
def test_a_retired_flag_exits_2_with_one_line_saying_what_to_type(
    tmp_path: Path, captured: dict[str, Any], args: list[str], instead: str, protocol: str
) -> None:
    done = _invoke(tmp_path, *args, protocol=protocol)
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), done.output
    assert f"{args[-2]} is not an option of run any more: type {instead}" in lines[0]
    assert not captured and not (tmp_path / "results").exists()  # nothing ran, nothing written


def test_a_retired_flag_is_refused_beside_resume_and_absent_from_help(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["run", "--resume", str(tmp_path), "--deadline-ms", "40"])
    assert done.exit_code == 2 and "type -p deadline_ms=40" in done.output, done.output
    shown = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert "--deadline-ms" not in shown and "--budget-s" not in shown and "--protocol-option" in shown


@pytest.mark.parametrize(
    "args", [["-p", "deadline_ms=40"], ["--protocol-config", "capacity.toml"]], ids=["-p", "file"]
)
def test_resume_takes_no_protocol_field_either(tmp_path: Path, args: list[str]) -> None:
    """A run resumes with its own configuration: a field given beside ``--resume`` would be ignored."""
    done = CliRunner().invoke(app, ["run", "--resume", str(tmp_path), *args])
    assert done.exit_code == 2 and "--resume takes no other run options" in done.output, done.output


@pytest.mark.parametrize(
    ("pair", "said"),
    [
        ("deadline_ms=0", "-p deadline_ms=0: Input should be greater than 0"),
        ("deadline_ms=-5", "-p deadline_ms=-5: Input should be greater than 0"),
        ("budget_s=0", "-p budget_s=0: Input should be greater than 0"),
    ],
)
def test_a_bad_value_exits_2_with_one_line_naming_the_pair(
    tmp_path: Path, captured: dict[str, Any], pair: str, said: str
) -> None:
    done = _invoke(tmp_path, "-p", pair)
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and said in lines[0], done.output
    assert not captured and not (tmp_path / "results").exists()


@pytest.mark.processes
def test_a_tiny_capacity_run_records_the_fields_given_by_p(tmp_path: Path) -> None:
    """End to end, in process: N = 1 only, half a second, the null adapter; the result is at the
    deadline given by ``-p`` over the file's and records both fields' values."""
    filed = tmp_path / "capacity.toml"
    filed.write_text(
        "streams = 1\nconfidence = 0.5\ntarget_miss_rate = 0.2\nslack_misses = 0\nmin_point_s = 0.5\n"
        "deadline_ms = 80\nbudget_s = 100\n"
    )
    args = ["--adapter", "null", "--dataset", "synthetic", "--streams", "2", "--duration", "1", "--seed", "1"]
    args += ["--warmup-frames", "5", "--in-process", "--no-report", "--run-id", "cap", "--json"]
    done = _invoke(
        tmp_path, *args, "--protocol-config", str(filed), "-p", "deadline_ms=30", "-p", "budget_s=20"
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["headline"]["figures"][0]["key"] == "capacity@30ms"
    result = json.loads((tmp_path / "results" / "cap" / "capacity.json").read_text())
    assert result["config"]["deadline_ms"] == 30.0 and result["config"]["budget_s"] == 20.0
    assert result["score"]["deadline_ms"] == 30.0 and [p["streams"] for p in result["score"]["curve"]] == [1]
