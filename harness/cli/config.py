"""``streambench run --config FILE``: a run configuration from a JSON or TOML file, with the options given
on the command line laid over it; validated by :class:`~streambench.harness.runner.RunConfig`, errors naming
the file and the field.

A file holds the fields of ``RunConfig`` (``adapter``, ``adapter_options``, ``data``, ``protocol``,
``engine``, ``threads``, ``power``, ``on_error``, ...). Without ``--config`` every command-line value is
used (its default included), as before; with it, only the options actually typed override the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from streambench.harness.cli.options import RUN_OPTIONS, Option
from streambench.harness.execution.config import RunConfig, user_field_path
from streambench.harness.io.config_file import ConfigError, load_config_file

__all__ = [
    "CLI_FIELDS",
    "ConfigError",
    "RunOptions",
    "build_run_config",
    "load_config_file",
    "with_protocol_options",
]

CLI_FIELDS: dict[str, tuple[str, ...]] = {option.name: option.sets for option in RUN_OPTIONS}
"""Command-line option (its parameter name) -> the RunConfig field it sets."""

SYNTHETIC_ONLY = frozenset(option.name for option in RUN_OPTIONS if option.synthetic_only)
"""Options that only the synthetic data set has."""

ISOLATE_ONLY = tuple(option.name for option in RUN_OPTIONS if option.isolate_only)
"""Options that only an isolated run (``--isolate``) enforces: refused without it, never ignored."""


def _set(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


def _field(option: Option) -> tuple[Any, Any]:
    if option.model_type is not None:  # typed otherwise on the command line: parsed before (its default)
        return option.model_type, Field(default_factory=get_origin(option.model_type))  # nothing typed: empty
    return option.type, option.default


_FIELDS: dict[str, Any] = {option.name: _field(option) for option in RUN_OPTIONS}

RunOptions: type[BaseModel] = create_model(
    "RunOptions",
    __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=True),
    __doc__="The run options of ``streambench run`` as typed (or defaulted) on the command line, one field "
    "per option, named as its parameter: built from :data:`~streambench.harness.cli.options.RUN_OPTIONS` "
    "(declared once). The values are checked by RunConfig, where the message can name the field.",
    **_FIELDS,
)


def build_run_config(options: BaseModel, explicit: set[str], config_file: Path | None = None) -> RunConfig:
    """``options``: the command line's values; ``explicit``: the names typed on the command line (without
    ``config_file`` every value is used, defaults included; with it, only the typed ones override the
    file). Raises :class:`ConfigError` naming the source and each bad field."""
    tree = load_config_file(config_file) if config_file is not None else {}
    data = tree.get("data")
    kind = data.get("kind") if isinstance(data, dict) else None
    values = dict(options)
    if "dataset" in explicit:
        kind = values["dataset"]
    for name, value in values.items():
        if name in SYNTHETIC_ONLY and kind not in (None, "synthetic") and name not in explicit:
            continue  # the defaults of --seed/--streams/--duration mean nothing to data read from files
        if config_file is None or name in explicit:
            _set(tree, CLI_FIELDS[name], value)
    try:
        config = RunConfig.model_validate(tree)
    except ValidationError as exc:
        source = str(config_file) if config_file is not None else "command line"
        problems = "\n".join(
            f"  {'.'.join(str(p) for p in user_field_path(error['loc'])) or '(top level)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigError(f"{source}: invalid run configuration:\n{problems}") from None
    typed = [name for name in ISOLATE_ONLY if name in explicit]
    if typed and not config.isolate:
        flags = ", ".join("--" + name.replace("_", "-") for name in typed)
        verb, them = ("applies", "it") if len(typed) == 1 else ("apply", "them")
        raise ConfigError(
            f"{flags} {verb} to an isolated run only (the limits are enforced on the worker process); "
            f"leave out --in-process, or leave {them} out"
        )
    return config


def with_protocol_options(protocol: Any, settings: BaseModel | None, overrides: dict[str, Any]) -> BaseModel:
    """``settings`` (the protocol's own configuration, from ``--protocol-config`` or its defaults) with the
    ``--protocol-option KEY=VALUE`` fields laid over it (a dotted KEY reaches into a nested field), validated
    again; :class:`ConfigError` names each bad field, or says the protocol has no configuration."""
    model: type[BaseModel] | None = protocol.config_model
    if model is None or settings is None or not protocol.config_file:
        raise ConfigError(
            f"--protocol-option: --protocol {protocol.name} has no configuration of its own "
            "(its settings are run options: streambench run --help)"
        )
    tree = settings.model_dump(mode="json", exclude_unset=False)
    for key, value in overrides.items():
        _set(tree, tuple(key.split(".")), value)
    try:
        return model.model_validate(tree)
    except ValidationError as exc:
        errors = exc.errors()
        where = [".".join(str(p) for p in error["loc"]) for error in errors]
        if len(errors) == 1 and where[0] in overrides:  # one line, naming the pair as typed
            value = overrides[where[0]]
            typed = value if isinstance(value, str) else json.dumps(value)
            raise ConfigError(
                f"--protocol-option: invalid {protocol.name} configuration: -p {where[0]}={typed}: "
                f"{errors[0]['msg']}"
            ) from None
        problems = "\n".join(
            f"  {field or '(top level)'}: {error['msg']}" for field, error in zip(where, errors, strict=True)
        )
        raise ConfigError(f"--protocol-option: invalid {protocol.name} configuration:\n{problems}") from None
