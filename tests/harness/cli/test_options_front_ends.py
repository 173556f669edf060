"""Every front end's defaults are the models': ``streambench run`` and ``ab`` (the click commands typer
builds from harness/cli/options.py), ``streambench.run`` / ``streambench.ab`` (harness/api) and the pytest
fixtures (harness/integrations). Each parameter with a default is either a field's (and must equal the
field's default, read from the model) or listed here as the front end's own, with what it means: a
parameter added without saying which fails here."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import typer.main

from streambench.harness import api
from streambench.harness.cli import app
from streambench.harness.cli.options import AB_OPTIONS, RUN_OPTIONS
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.rounds import RoundsConfig
from streambench.harness.integrations.pytest_ab import ab_sides, make_gate
from streambench.harness.integrations.pytest_plugin import StreambenchLatency, run_config
from streambench.harness.runs import registry
from streambench.harness.runs.ab_settings import ABData, GateConfig
from tests.harness.cli.test_options import expected_default

GATE, ROUNDS = GateConfig(), RoundsConfig()


def _click_defaults(command: str) -> dict[str, Any]:
    """The defaults of a command's parameters, as the command line parses them."""
    group = typer.main.get_command(app)
    return {p.name: p.default for p in group.commands[command].params}  # type: ignore[attr-defined]


def _defaults(function: Any) -> dict[str, Any]:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


RUN_OWN = {
    "protocol": registry.DEFAULT,  # the registry's default protocol, as streambench.run's
    "protocol_config": None,
    "protocol_option": None,
    "config_file": None,
    "resume": None,
    "progress": True,
    "report": True,
    "as_json": False,
    "retired_deadline_ms": None,  # hidden: refused with what to type instead
    "retired_budget_s": None,
}
AB_OWN = {"config_file": None, "as_json": False, "markdown": False, "progress": True}


@pytest.mark.parametrize(
    ("command", "options", "own"), [("run", RUN_OPTIONS, RUN_OWN), ("ab", AB_OPTIONS, AB_OWN)]
)
def test_each_commands_defaults_are_its_fields(command: str, options: Any, own: dict[str, Any]) -> None:
    shown = _click_defaults(command)
    assert set(shown) == {o.name for o in options} | set(own), "a parameter no table or list here names"
    for option in options:
        assert shown[option.name] == expected_default(option), f"{command} --{option.name.replace('_', '-')}"
    assert {name: shown[name] for name in own} == own


def test_the_python_api_defaults_to_the_models() -> None:
    run, ab, resume = _defaults(api.run), _defaults(api.ab), _defaults(api.resume)
    assert run == {"protocol": registry.DEFAULT, "protocol_config": None, "progress": None, "given": None}
    assert run["protocol"] == _click_defaults("run")["protocol"]
    assert resume == {"progress": None}
    gate = {name: ab.pop(name) for name in GateConfig.model_fields}
    assert gate == GATE.model_dump()
    assert ab.pop("sealed") == IsolationConfig().sealed
    # rounds None: RoundsConfig()'s; the commands None: this interpreter and checkout
    assert ab == {"rounds": None, "base_command": None, "head_command": None, "progress": None}


class _Config:
    def getoption(self, name: str, default: Any = None) -> Any:
        return default


class _Request:
    config = _Config()


def test_the_ab_fixture_defaults_to_the_models() -> None:
    fixture = _defaults(make_gate(_Request()))  # type: ignore[arg-type]  # only config.getoption is read
    assert {name: fixture.pop(name) for name in GateConfig.model_fields if name in fixture} == {
        name: value for name, value in GATE.model_dump().items() if name != "force"
    }
    assert {name: fixture.pop(name) for name in RoundsConfig.model_fields} == ROUNDS.model_dump()
    # None: the configuration's, else the models' (checked by value below); fail_inconclusive: the option's
    assert set(fixture.values()) == {None}, fixture


def test_what_the_ab_fixture_and_the_command_leave_unset_is_the_models() -> None:
    base, head = ab_sides("null")
    for side in (base, head):
        data = side.run.data.model_dump()
        assert data["kind"] == "synthetic" and data | ABData().model_dump() == data  # ABData's fields
        assert side.run.engine.warmup_frames == EngineConfig().warmup_frames
        assert side.run.torch_seed == RunConfig().torch_seed and side.run.threads == RunConfig().threads
    ab = _click_defaults("ab")
    assert (ab["streams"], ab["duration"]) == (ABData().num_streams, ABData().duration_s)


def test_the_latency_fixture_leaves_the_warm_up_to_the_engine(tmp_path: Path) -> None:
    called = _defaults(StreambenchLatency.__call__)
    # the fixture's own small benchmark (docs/ci.md): a null adapter, 4 streams of 2 s
    assert called == {
        "adapter": "null", "options": None, "streams": 4, "duration_s": 2.0, "warmup_frames": None,
        "config": None,
    }  # fmt: skip
    config = run_config("null", None, 4, 2.0, called["warmup_frames"], tmp_path)
    assert config.engine.warmup_frames == EngineConfig().warmup_frames
