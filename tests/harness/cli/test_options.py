"""The options of ``streambench run`` and ``ab`` (harness/cli/options.py) take their defaults and help from
the pydantic fields they stand for: a default on the command line that differs from its field's is a
second source, and fails here (the models are read directly, not through the generated file)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from streambench.harness.cli.options import AB_OPTIONS, RUN_OPTIONS, Option, field_values, retired_flag
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.rounds import RoundsConfig
from streambench.harness.execution.worker_process import WorkerCommand
from streambench.harness.runs.ab_settings import ABData, GateConfig
from streambench.protocols.online import OnlineConfig

MODELS: dict[str, type[BaseModel]] = {
    "RunConfig": RunConfig,
    "RoundsConfig": RoundsConfig,
    "GateConfig": GateConfig,
    "ABData": ABData,
    "WorkerCommand": WorkerCommand,
}


def _model_field(option: Option) -> tuple[Any, str | None]:
    """The default and the description of the field an option stands for, read from a default instance
    of its model (``protocol`` paths: the online protocol's configuration)."""
    node: Any = MODELS[option.model]()
    path = option.path
    if option.model == "RunConfig" and path[0] == "protocol":
        node, path = OnlineConfig(), path[1:]
    for part in path[:-1]:
        node = getattr(node, part)
    assert isinstance(node, BaseModel), option.name
    return getattr(node, path[-1]), type(node).model_fields[path[-1]].description


def expected_default(option: Option) -> Any:
    """What the command line should show as ``option``'s default."""
    value, _ = _model_field(option)
    if option.model_type is not None or option.unset is not None:
        return None  # nothing typed: None on the command line, the field's default (or ``unset``) after
    return option.none_as if value is None and option.none_as is not None else value


@pytest.mark.parametrize("option", RUN_OPTIONS, ids=lambda o: o.name)
def test_each_run_option_defaults_to_its_fields_default(option: Option) -> None:
    expected = _model_field(option)[0]
    if option.name == "option":  # --option KEY=VALUE, none typed: the field's empty mapping
        assert option.default is None and expected == {}
        return
    assert option.default == expected, (
        f"--{option.name.replace('_', '-')}: {option.default!r} != {expected!r}"
    )


@pytest.mark.parametrize("option", AB_OPTIONS, ids=lambda o: o.name)
def test_each_ab_option_defaults_to_its_fields_default(option: Option) -> None:
    assert option.default == expected_default(option), f"ab --{option.name.replace('_', '-')}"


@pytest.mark.parametrize("option", [*RUN_OPTIONS, *AB_OPTIONS], ids=lambda o: o.name)
def test_each_options_help_is_its_fields_description(option: Option) -> None:
    _, description = _model_field(option)
    if description is None:  # the tag of the data set union: the union field's description
        assert option.field == "RunConfig.data.kind"
        description = RunConfig.model_fields["data"].description
    assert description is not None and " ".join(description.split()) in option.help


def test_the_command_lines_own_words_follow_the_fields() -> None:
    ab = {option.name: option for option in AB_OPTIONS}
    run = {option.name: option for option in RUN_OPTIONS}
    assert ab["budget_s"].help.endswith("; 0 for None") and ab["budget_s"].default == 300.0
    assert ab["head_adapter"].help.startswith("head: ") and "default: the base's" in ab["head_adapter"].help
    assert run["on_error"].help.endswith("(continue | stop)")  # the choices its description does not name
    assert run["pacing"].help == EngineConfig.model_fields["pacing"].description  # names both choices
    assert run["frame_timeout"].help.startswith("--isolate: ")
    # the same entry where both commands set the same field
    assert ab["warmup_frames"] is run["warmup_frames"]
    assert ab["seed"].field == run["seed"].field and ab["sealed"].flags == run["sealed"].flags


def test_field_values_builds_the_models_tree_and_reads_none_as_spelled() -> None:
    typed = {"rounds": 4, "budget_s": 0.0, "restart_every": 0, "order_seed": 3, "mode": "duet", "on": "x"}
    assert field_values(AB_OPTIONS, "RoundsConfig", typed) == {
        "rounds": 4, "budget_s": None, "restart_every": None, "seed": 3, "mode": "duet"
    }  # fmt: skip
    assert field_values(RUN_OPTIONS, "RunConfig", {"warmup_frames": 5, "top_k": 2}) == {
        "engine": {"warmup_frames": 5}, "protocol": {"decision": {"k": 2}}
    }  # fmt: skip


def test_a_retired_flag_says_what_to_type_instead() -> None:
    said = retired_flag("--deadline-ms", "40")
    assert "\n" not in said and "type -p deadline_ms=40" in said and said.startswith("--deadline-ms ")
