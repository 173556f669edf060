"""Configuration files: a mapping from a ``.json`` or ``.toml`` file, and a protocol's own configuration
validated by its pydantic model; errors name the file, the line (syntax) or the fields."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from streambench.harness.io.json_file import parse_json, read_json_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["ConfigError", "load_config_file", "load_protocol_config"]


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
