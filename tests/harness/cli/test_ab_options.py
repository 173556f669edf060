"""``streambench ab``'s defaults, the Python ``streambench.ab``'s and the ``streambench_ab`` fixture's are
one set: each gate setting's default is :class:`RoundsConfig`'s field (the rounds), the engine's (warm-up)
or ``streambench.ab``'s parameter (the rule, the clocks, the levels). A front end whose default differs is
a second source of it, and fails here."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from streambench.harness import api
from streambench.harness.cli.ab import ab as ab_command
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.rounds import RoundsConfig
from streambench.harness.integrations.pytest_ab import make_gate


def _defaults(function: Any) -> dict[str, Any]:
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


class _Config:
    def getoption(self, name: str, default: Any = None) -> Any:
        return default


class _Request:
    config = _Config()


CLI, API = _defaults(ab_command), _defaults(api.ab)
FIXTURE = _defaults(make_gate(_Request()))  # type: ignore[arg-type]  # only config.getoption is read
ROUNDS = RoundsConfig()

# the command line spells "none" as 0 where the field's None means "no limit"
CLI_ROUNDS = {
    "rounds": ("rounds", lambda v: v),
    "max_rounds": ("max_rounds", lambda v: v),
    "step": ("step", lambda v: v),
    "budget_s": ("budget_s", lambda v: v),
    "streams_per_round": ("streams_per_round", lambda v: v),
    "mode": ("mode", lambda v: v),
    "order_seed": ("seed", lambda v: v),
    "restart_every": ("restart_every", lambda v: None if v == 0 else v),
}


@pytest.mark.parametrize("option", sorted(CLI_ROUNDS))
def test_each_round_option_of_the_command_defaults_to_its_field(option: str) -> None:
    field, read = CLI_ROUNDS[option]
    assert read(CLI[option]) == getattr(ROUNDS, field), f"ab --{option.replace('_', '-')}"


@pytest.mark.parametrize("field", sorted(set(RoundsConfig.model_fields) & set(FIXTURE)))
def test_each_round_setting_of_the_fixture_defaults_to_its_field(field: str) -> None:
    assert FIXTURE[field] == getattr(ROUNDS, field), f"streambench_ab({field}=...)"


@pytest.mark.parametrize("name", ["fail_on", "on", "confidence", "pass_confidence"])
def test_the_rule_clocks_and_levels_are_the_python_apis_everywhere(name: str) -> None:
    assert CLI[name] == API[name], f"ab --{name.replace('_', '-')}"
    assert FIXTURE[name] == API[name], f"streambench_ab({name}=...)"


def test_force_and_sealing_default_as_in_python() -> None:
    assert (CLI["force"], CLI["sealed"]) == (API["force"], API["sealed"])


def test_warm_up_is_the_engines_unless_a_front_end_leaves_it_to_the_configuration() -> None:
    assert CLI["warmup_frames"] == EngineConfig().warmup_frames
    assert FIXTURE["warmup_frames"] is None  # the configuration's, else the engine's
