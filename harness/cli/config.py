"""``streambench run --config FILE``: a run configuration from a JSON or TOML file, with the options given
on the command line laid over it; validated by :class:`~streambench.harness.runner.RunConfig`, errors naming
the file and the field (issue 7, "Bad input everywhere").

A file holds the fields of ``RunConfig`` (``adapter``, ``adapter_options``, ``data``, ``protocol``,
``engine``, ``threads``, ``power``, ``on_error``, ...). Without ``--config`` every command-line value is
used (its default included), as before; with it, only the options actually typed override the file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from streambench.harness.execution.config import RunConfig, user_field_path
from streambench.harness.io.config_file import ConfigError, load_config_file

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - Python 3.10
    pass

__all__ = ["CLI_FIELDS", "ConfigError", "RunOptions", "build_run_config", "load_config_file"]

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
    "sealed": ("isolation", "sealed"),
    "frame_timeout": ("isolation", "frame_timeout_s"),
    "stream_timeout": ("isolation", "stream_timeout_s"),
    "memory_limit_mb": ("isolation", "memory_limit_mb"),
    "sandbox": ("isolation", "sandbox"),
}
"""Command-line option (its parameter name) -> the RunConfig field it sets."""

SYNTHETIC_ONLY = frozenset({"seed", "streams", "duration"})
"""Options that only the synthetic data set has."""

ISOLATE_ONLY = ("frame_timeout", "stream_timeout", "memory_limit_mb", "sandbox")
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


class RunOptions(BaseModel):
    """The run options of ``streambench run`` as typed (or defaulted) on the command line, one field per
    option, named as its parameter; :data:`CLI_FIELDS` says which RunConfig field each one sets. The
    values are checked by RunConfig, where the message can name the field."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    adapter: str = "reference"
    option: dict[str, Any] = Field(default_factory=dict, description="adapter options, parsed KEY=VALUE")
    dataset: str = "synthetic"
    seed: int | None = None
    streams: int = 60
    duration: float = 10.0
    warmup_frames: int = 100
    pacing: str = "unpaced"
    paced_policy: str = "queue"
    decision: str = "threshold"
    threshold: float = 0.5
    top_k: int = 1
    output_dir: Path = Path("results")
    run_id: str | None = None
    baseline: Path | None = None
    on_error: str = "continue"
    isolate: bool = True
    sealed: bool = True
    frame_timeout: float = 30.0
    stream_timeout: float = 600.0
    memory_limit_mb: int | None = None
    sandbox: str = "auto"


def build_run_config(options: RunOptions, explicit: set[str], config_file: Path | None = None) -> RunConfig:
    """``options``: the command line's values; ``explicit``: the names typed on the command line (without
    ``config_file`` every value is used, defaults included; with it, only the typed ones override the
    file). Raises :class:`ConfigError` naming the source and each bad field."""
    tree = load_config_file(config_file) if config_file is not None else {}
    data = tree.get("data")
    kind = data.get("kind") if isinstance(data, dict) else None
    if "dataset" in explicit:
        kind = options.dataset
    for name in RunOptions.model_fields:
        value = getattr(options, name)
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
        raise ConfigError(
            f"{flags} apply to an isolated run only (the limits are enforced on the worker process); "
            "leave out --in-process, or leave them out"
        )
    return config
