"""The run options of ``streambench run``, declared once.

Each :class:`RunOption` says everything about one option: its name, type and default, its flags and help
on the command line, and the :class:`~streambench.harness.execution.config.RunConfig` field it sets. From
this one table come the command's parameters (:func:`parameters`, read by typer),
:class:`~streambench.harness.cli.config.RunOptions` (the pydantic model of the typed values) and the
option -> field map :func:`~streambench.harness.cli.config.build_run_config` lays over a ``--config``
file. Adding an option is one entry here (and its field in ``RunConfig``).

A few flags set a field of one protocol's own configuration instead (:data:`PROTOCOL_FLAGS`:
``--deadline-ms`` and ``--budget-s`` of the capacity protocol): typed, they are laid over
``--protocol-config`` and ``--protocol-option`` (:func:`lay_protocol_flags`), validated as the configuration
is, and refused under any other protocol.

Plain dataclasses and typing only: the command line starts without pydantic, numpy or torch.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from streambench.harness.cli import completion

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["PROTOCOL_FLAGS", "RUN_OPTIONS", "ProtocolFlag", "RunOption", "lay_protocol_flags", "parameters"]


@dataclasses.dataclass(frozen=True)
class RunOption:
    """One option of ``streambench run``."""

    name: str
    """The parameter's name (``--name-with-dashes`` on the command line unless ``flags`` says)."""
    type: Any
    """Its type on the command line and in :class:`RunOptions` (``model_type`` where they differ)."""
    default: Any
    help: str
    sets: tuple[str, ...]
    """The RunConfig field it sets (a path into the configuration tree)."""
    flags: tuple[str, ...] = ()
    model_type: Any = None
    """Its type in RunOptions where the command line types it otherwise (``--option KEY=VALUE`` -> dict)."""
    complete: Callable[..., list[str]] | None = None
    synthetic_only: bool = False
    """Only the synthetic data set has it: its default is not laid over data read from files."""
    isolate_only: bool = False
    """Only an isolated run (``--isolate``) enforces it: refused without one, never ignored."""


def _isolated(text: str) -> str:
    return f"--isolate: {text}"


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption("adapter", str, "reference", "registry name or module:Class", ("adapter",), ("--adapter", "-a"),
              complete=completion.adapters),
    RunOption("option", list[str] | None, None, "adapter option KEY=VALUE (repeatable)", ("adapter_options",),
              ("--option", "-o"), model_type=dict[str, Any]),
    RunOption("dataset", str, "synthetic", "synthetic (embedded) | audio_files | feature_arrays | "
              "video_files | ave | llp (their files: --config)", ("data", "kind"),
              complete=completion.datasets),
    RunOption("seed", int | None, None, "data set seed: the scored streams are public (marked 'public "
              "seed'); default: a secret seed drawn for the run, written to its result after scoring",
              ("data", "seed"), synthetic_only=True),
    RunOption("streams", int, 60, "number of streams", ("data", "num_streams"), ("--streams", "-n"),
              synthetic_only=True),
    RunOption("duration", float, 10.0, "seconds per synthetic stream", ("data", "duration_s"),
              synthetic_only=True),
    RunOption("warmup_frames", int, 100, "warm-up frames before the first scored stream",
              ("engine", "warmup_frames")),
    RunOption("pacing", str, "unpaced", "unpaced | paced (frames released on the wall clock)",
              ("engine", "pacing")),
    RunOption("paced_policy", str, "queue", "paced, when behind: queue | drop (to the newest)",
              ("engine", "paced_policy")),
    RunOption("decision", str, "threshold", "threshold | per_class | top_k",
              ("protocol", "decision", "kind")),
    RunOption("threshold", float, 0.5, "fixed decision threshold", ("protocol", "decision", "threshold")),
    RunOption("top_k", int, 1, "labels per unit for --decision top_k", ("protocol", "decision", "k")),
    RunOption("output_dir", Path, Path("results"), "where run directories go", ("output_dir",),
              ("--output-dir",)),
    RunOption("run_id", str | None, None, "name of the run directory (default: generated)", ("run_id",)),
    RunOption("baseline", Path | None, None, "baseline run directory: speed-up and FLOPs-normalised latency",
              ("baseline",)),
    RunOption("on_error", str, "continue", "adapter failure: continue (skip the rest of that stream) | stop",
              ("on_error",)),
    RunOption("isolate", bool, True, "the adapter in a worker process (default; timeouts, survives "
              "crashes), or in this process (--in-process: for debugging; the model can reach the harness's "
              "clock, data and labels, and the result is marked in-process)", ("isolate",),
              ("--isolate/--in-process",)),
    RunOption("sealed", bool, True, "the worker never holds the data and is told only what the model "
              "needs; each frame is sent after the previous prediction returned and timed by this process "
              "too (default). --no-sealed: the worker builds the data set itself", ("isolation", "sealed"),
              ("--sealed/--no-sealed",)),
    RunOption("frame_timeout", float, 30.0, _isolated("seconds one frame may take"),
              ("isolation", "frame_timeout_s"), isolate_only=True),
    RunOption("stream_timeout", float, 600.0, _isolated("seconds one stream may take"),
              ("isolation", "stream_timeout_s"), isolate_only=True),
    RunOption("memory_limit_mb", int | None, None, _isolated("MiB the adapter may add to the worker "
              "(RLIMIT_AS)"), ("isolation", "memory_limit_mb"), isolate_only=True),
    RunOption("sandbox", str, "auto", "the sealed worker's OS sandbox (Landlock: no reading the data, the "
              "results store or other processes' /proc): auto (where available, else the result says "
              "unsandboxed) | require | off", ("isolation", "sandbox"), isolate_only=True),
)  # fmt: skip
"""Every run option, in the order ``streambench run --help`` lists them."""


@dataclasses.dataclass(frozen=True)
class ProtocolFlag:
    """A flag of ``streambench run`` that sets one field of the chosen protocol's own configuration: it
    applies to every protocol whose configuration has that field (so the command line names no protocol;
    today the capacity protocol's) and is refused under any other."""

    name: str
    """The parameter's name (``--name-with-dashes`` on the command line), also the field it sets."""
    type: Any
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


PROTOCOL_FLAGS: tuple[ProtocolFlag, ...] = (
    ProtocolFlag("deadline_ms", float | None, "a frame is late when answered after this many ms (> 0; "
                 "default one frame period; --protocol capacity); over --protocol-config and -p"),
    ProtocolFlag("budget_s", float | None, "wall time of the whole search in s (> 0; default 300; "
                 "--protocol capacity); over --protocol-config and -p"),
)  # fmt: skip
"""Flags that set a field of a protocol's configuration, listed after the run options."""


def _takers(field: str) -> list[str]:
    """The registered protocols whose configuration has ``field``."""
    from streambench.harness.runs import registry

    return [p.name for p in registry.protocols() if p.config_model and field in p.config_model.model_fields]


def lay_protocol_flags(
    protocol: Any, settings: BaseModel | None, values: Mapping[str, Any]
) -> BaseModel | None:
    """``settings`` (the protocol's configuration from ``--protocol-config`` and ``-p``) with the typed
    :data:`PROTOCOL_FLAGS` (``values``: name -> value, None where not typed) laid over it and validated
    again. ValueError, one line naming the flag: a flag the protocol's configuration has no field for, or
    a value the configuration refuses (``--deadline-ms 0: Input should be greater than 0``)."""
    typed = [flag for flag in PROTOCOL_FLAGS if values.get(flag.name) is not None]
    model = protocol.config_model
    for flag in typed:
        if settings is None or model is None or flag.name not in model.model_fields:
            takers = " or ".join(f"--protocol {name}" for name in _takers(flag.name)) or "no protocol"
            raise ValueError(f"{flag.flag} applies to {takers} only, not to --protocol {protocol.name}")
    if not typed:
        return settings
    assert settings is not None
    from pydantic import ValidationError

    tree = settings.model_dump(mode="json") | {flag.name: values[flag.name] for flag in typed}
    try:
        return type(settings).model_validate(tree)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        named = next((flag for flag in typed if flag.name == field), None)
        if named is None:
            raise ValueError(
                f"invalid {protocol.name} configuration: {field or '(top level)'}: {error['msg']}"
            ) from None
        raise ValueError(f"{named.flag} {values[named.name]:g}: {error['msg']}") from None


def parameters() -> list[inspect.Parameter]:
    """The command's keyword parameters, one per :data:`RUN_OPTIONS` entry, then one per
    :data:`PROTOCOL_FLAGS` entry (default None: not typed), as typer reads them."""
    made = []
    for option in RUN_OPTIONS:
        info = typer.Option(*option.flags, help=option.help, autocompletion=option.complete)
        made.append(
            inspect.Parameter(
                option.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=option.default,
                annotation=Annotated[option.type, info],
            )
        )
    for flag in PROTOCOL_FLAGS:
        info = typer.Option(flag.flag, help=flag.help)
        made.append(
            inspect.Parameter(
                flag.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[flag.type, info]
            )
        )
    return made
