"""``streambench run --deadline-ms MS --budget-s S`` (harness/cli/run_options.py ``PROTOCOL_FLAGS``; issue 28:
"deadline ... default one frame period, ``--deadline-ms``"): the capacity configuration's ``deadline_ms`` and
``budget_s`` from dedicated flags, laid over ``--protocol-config`` (and ``-p``), validated as the
configuration is (exit 2, one line naming the flag) and refused under any other protocol."""

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


def _invoke(tmp_path: Path, *args: str) -> Any:
    command = ["run", "--protocol", "capacity", "--no-progress", "--output-dir", str(tmp_path / "results")]
    return CliRunner().invoke(app, [*command, *args])


def test_the_flags_set_the_capacity_configuration_over_the_file_and_p(
    tmp_path: Path, captured: dict[str, Any]
) -> None:
    filed = tmp_path / "capacity.toml"
    filed.write_text("deadline_ms = 80.0\nbudget_s = 100\nreplicas = 2\n")
    done = _invoke(
        tmp_path,
        "--protocol-config",
        str(filed),
        "-p",
        "deadline_ms=60",
        "--deadline-ms",
        "40",
        "--budget-s",
        "12.5",
    )
    assert isinstance(done.exception, _Captured), done.output
    settings = captured["settings"]
    assert isinstance(settings, CapacityConfig) and captured["protocol"] == "capacity"
    assert settings.deadline_ms == 40.0 and settings.budget_s == 12.5  # the flags win over file and -p
    assert settings.replicas == 2  # the file's other fields stay
    # without the flags the file (and -p) decide, as before
    _invoke(tmp_path, "--protocol-config", str(filed), "-p", "budget_s=30")
    assert captured["settings"].deadline_ms == 80.0 and captured["settings"].budget_s == 30.0
    _invoke(tmp_path, "--deadline-ms", "25")
    assert captured["settings"].deadline_ms == 25.0 and captured["settings"].budget_s == 300.0  # default


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--deadline-ms", "0"], "--deadline-ms 0: Input should be greater than 0"),
        (["--deadline-ms", "-5"], "--deadline-ms -5: Input should be greater than 0"),
        (["--budget-s", "0"], "--budget-s 0: Input should be greater than 0"),
        (["--deadline-ms", "nan"], "--deadline-ms nan:"),
    ],
)
def test_a_bad_value_exits_2_with_one_line_naming_the_flag(
    tmp_path: Path, captured: dict[str, Any], args: list[str], said: str
) -> None:
    done = _invoke(tmp_path, *args)
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and said in lines[0], done.output
    assert not captured and not (tmp_path / "results").exists()  # nothing ran, nothing written


@pytest.mark.parametrize("protocol", ["online", "detection"])
def test_the_flags_are_refused_under_another_protocol(
    tmp_path: Path, captured: dict[str, Any], protocol: str
) -> None:
    for flag, value in (("--deadline-ms", "40"), ("--budget-s", "10")):
        args = ["run", "--protocol", protocol, flag, value, "--no-progress", "--output-dir", str(tmp_path)]
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 2, done.output
        (line,) = done.output.strip().splitlines()
        assert f"{flag} applies to --protocol capacity only, not to --protocol {protocol}" in line
    assert not captured


def test_resume_takes_no_flag(tmp_path: Path) -> None:
    done = CliRunner().invoke(app, ["run", "--resume", str(tmp_path), "--deadline-ms", "40"])
    assert done.exit_code == 2 and "--resume takes no other run options" in done.output


@pytest.mark.processes
def test_a_tiny_capacity_run_records_the_flags(tmp_path: Path) -> None:
    """End to end, in process: N = 1 only, half a second, the null adapter; the result is at the flag's
    deadline and records both flags' values."""
    filed = tmp_path / "capacity.toml"
    filed.write_text(
        "streams = 1\nconfidence = 0.5\ntarget_miss_rate = 0.2\nslack_misses = 0\nmin_point_s = 0.5\n"
        "deadline_ms = 80\nbudget_s = 100\n"
    )
    args = ["--adapter", "null", "--dataset", "synthetic", "--streams", "2", "--duration", "1", "--seed", "1"]
    args += ["--warmup-frames", "5", "--in-process", "--no-report", "--run-id", "cap", "--json"]
    done = _invoke(
        tmp_path, *args, "--protocol-config", str(filed), "--deadline-ms", "30", "--budget-s", "20"
    )
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["headline"]["figures"][0]["key"] == "capacity@30ms"
    result = json.loads((tmp_path / "results" / "cap" / "capacity.json").read_text())
    assert result["config"]["deadline_ms"] == 30.0 and result["config"]["budget_s"] == 20.0
    assert result["score"]["deadline_ms"] == 30.0 and [p["streams"] for p in result["score"]["curve"]] == [1]
