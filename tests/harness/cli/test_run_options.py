"""``streambench run``'s options (harness/cli/run_options.py) take their defaults from the configuration
models: a default typed on the command line's table that differs from its field's is a second source, and
fails here."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from streambench.harness.cli.run_options import RUN_OPTIONS, RunOption
from streambench.harness.execution.config import RunConfig
from streambench.protocols.online import OnlineConfig


def _model_default(option: RunOption) -> Any:
    """The default of the field an option sets (``protocol`` paths: the online protocol's configuration)."""
    node: Any = OnlineConfig() if option.sets[0] == "protocol" else RunConfig()
    for part in option.sets[1:] if option.sets[0] == "protocol" else option.sets:
        assert isinstance(node, BaseModel), (option.name, part)
        node = getattr(node, part)
    return node


@pytest.mark.parametrize("option", RUN_OPTIONS, ids=lambda o: o.name)
def test_each_run_option_defaults_to_its_fields_default(option: RunOption) -> None:
    expected = _model_default(option)
    if option.name == "option":  # --option KEY=VALUE, none typed: the field's empty mapping
        assert option.default is None and expected == {}
        return
    assert option.default == expected, (
        f"--{option.name.replace('_', '-')}: {option.default!r} != {expected!r}"
    )
