"""``streambench run --config FILE``: a run configuration from a JSON or TOML file, with the options given
on the command line laid over it; validated by :class:`~harness.runner.RunConfig`, errors naming the
file and the field (issue 7, "Bad input everywhere").

A file holds the fields of ``RunConfig`` (``adapter``, ``adapter_options``, ``data``, ``protocol``,
``engine``, ``threads``, ``power``, ``on_error``, ...). Without ``--config`` every command-line value is
used (its default included), as before; with it, only the options actually typed override the file.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from harness.io.json_file import parse_json, read_json_text
from harness.runner import RunConfig

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["CLI_FIELDS", "ConfigError", "build_run_config", "load_config_file", "load_protocol_config"]

CLI_FIELDS: dict[str, tuple[str, ...]] = {
    "adapter": ("adapter",),
    "option": ("adapter_options",),
    "dataset": ("data", "kind"),
    "seed": ("data", "seed"),
    "streams": ("data", "num_streams"),
    "duration": ("data", "duration_s"),
    "warmup_frames": ("engine", "warmup_frames"),
    "pacing": ("engine", "pacing"),
    "paced_policy": ("engine", "paced_policy"),
    "decision": ("protocol", "decision", "kind"),
    "threshold": ("protocol", "decision", "threshold"),
    "top_k": ("protocol", "decision", "k"),
    "output_dir": ("output_dir",),
    "run_id": ("run_id",),
    "baseline": ("baseline",),
    "on_error": ("on_error",),
    "isolate": ("isolate",),
    "frame_timeout": ("isolation", "frame_timeout_s"),
    "stream_timeout": ("isolation", "stream_timeout_s"),
    "memory_limit_mb": ("isolation", "memory_limit_mb"),
}
"""Command-line option (its parameter name) -> the RunConfig field it sets."""

SYNTHETIC_ONLY = frozenset({"seed", "streams", "duration"})
DATA_KINDS = frozenset({"synthetic", "audio_files", "ave", "llp", "synthetic_spoof"})
"""Options that only the synthetic data set has."""


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the file (or the command line) and field."""


def load_config_file(path: Path) -> dict[str, Any]:
    """The mapping in a ``.json`` or ``.toml`` file; syntax errors name the file and line."""
    text = read_json_text(path, ConfigError, missing="no such configuration file")  # UTF-8 (BOM dropped)
    if path.suffix.lower() == ".toml":
        try:
            loaded: object = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, RecursionError) as exc:
            raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    elif path.suffix.lower() == ".json":
        loaded = parse_json(text, path, ConfigError)
    else:
        raise ConfigError(f"{path}: unknown configuration format {path.suffix!r} (use .json or .toml)")
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: the configuration must be a table/object, not {type(loaded).__name__}")
    return loaded


def _set(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = tree
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


def build_run_config(
    values: Mapping[str, Any], explicit: set[str], config_file: Path | None = None
) -> RunConfig:
    """``values``: command-line values by parameter name (see :data:`CLI_FIELDS`); ``explicit``: the
    names typed on the command line. Raises :class:`ConfigError` naming the source and each bad field."""
    tree = load_config_file(config_file) if config_file is not None else {}
    data = tree.get("data")
    kind = data.get("kind") if isinstance(data, dict) else None
    if "dataset" in explicit:
        kind = values["dataset"]
    for name, value in values.items():
        if name not in CLI_FIELDS:
            raise KeyError(f"no RunConfig field for the command-line option {name!r}")
        if name in SYNTHETIC_ONLY and kind not in (None, "synthetic") and name not in explicit:
            continue  # the defaults of --seed/--streams/--duration mean nothing to data read from files
        if config_file is None or name in explicit:
            _set(tree, CLI_FIELDS[name], value)
    try:
        return RunConfig.model_validate(tree)
    except ValidationError as exc:
        source = str(config_file) if config_file is not None else "command line"
        problems = "\n".join(
            f"  {'.'.join(str(p) for p in _field_path(error['loc'])) or '(top level)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigError(f"{source}: invalid run configuration:\n{problems}") from None


def _field_path(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """The field as the user writes it: ``data.num_streams``, not pydantic's ``data.synthetic.num_streams``
    (the tag of the data set union)."""
    if len(loc) > 1 and loc[0] == "data" and loc[1] in DATA_KINDS:
        return (loc[0], *loc[2:])
    return loc


_Config = TypeVar("_Config", bound=BaseModel)


def load_protocol_config(path: Path | None, model: type[_Config], what: str) -> _Config:
    """A protocol's own configuration (``--protocol-config``, .json or .toml), or its defaults when
    ``path`` is None; an invalid one is a ValueError naming the file and the fields."""
    if path is None:
        return model()
    try:
        return model.model_validate(load_config_file(path))
    except ValidationError as exc:
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "(top level)" for e in exc.errors())
        raise ValueError(f"{path}: invalid {what} configuration ({fields}):\n{exc}") from None
