"""The options of ``streambench run`` and ``streambench ab``, declared once.

Each :class:`Option` names the pydantic field it stands for (``"RunConfig.engine.warmup_frames"``): that
field is the one declaration of its default and help. The command line reads them from
:mod:`~streambench.harness.cli.option_fields`, a plain-Python copy generated from the models
(``python -m streambench.harness.cli.generate_options``; a test fails when the copy differs from what the
models generate), so that the command line starts without pydantic, numpy or torch. An option says only
what is the command line's own: its flags, its type on the command line, its completion, what it means
when not typed where that is not the field's default, and how it spells a None.

:data:`RUN_OPTIONS` are ``run``'s (each sets the :class:`~streambench.harness.execution.config.RunConfig`
field it names); :data:`AB_OPTIONS` are ``ab``'s: the same entries for what both commands set (the adapter
and its options, for each side; the data set; the warm-up; sealing), then
:class:`~streambench.harness.execution.rounds.RoundsConfig`'s and
:class:`~streambench.harness.runs.ab_settings.GateConfig`'s fields. :func:`declare` gives a command one
keyword parameter per option, which typer reads.

A field of a protocol's own configuration (the capacity protocol's ``deadline_ms``, ``budget_s``) has one
route on the command line, ``-p KEY=VALUE``, laid over the file of ``--protocol-config``;
:data:`RETIRED` are the flags that once set such a field, each refused with what to type instead.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from streambench.harness.cli import completion
from streambench.harness.cli.option_fields import DEFAULTS, FIELDS

__all__ = [
    "AB_OPTIONS",
    "RETIRED",
    "RUN_OPTIONS",
    "Option",
    "declare",
    "field_values",
    "refuse_retired",
    "retired_flag",
    "retired_parameters",
]


@dataclasses.dataclass(frozen=True)
class Option:
    """One option of a command: the field it stands for, and what only the command line says."""

    name: str
    """The parameter's name (``--name-with-dashes`` on the command line unless ``flags`` says)."""
    field: str
    """``<Model>.<path>``: the pydantic field that declares its default and help."""
    type: Any
    """Its type on the command line."""
    flags: tuple[str, ...] = ()
    model_type: Any = None
    """Its type in the model where the command line types it otherwise (``--option KEY=VALUE`` -> dict):
    nothing typed is None on the command line, the field's default in the model."""
    complete: Callable[..., list[str]] | None = None
    unset: str | None = None
    """What the option means when not typed, where that is not its field's default (its command-line
    default is then None), e.g. ``ab --head-adapter``: the base's."""
    none_as: Any = None
    """How the command line spells the field's None where None cannot be typed (``ab --budget-s 0``)."""
    note: str = ""
    """What the command adds to the field's help (how to type it, what it means to this command)."""
    side: str = ""
    """``ab``'s side it sets (``base``, ``head``), named before the help."""
    synthetic_only: bool = False
    """Only the synthetic data set has it: its default is not laid over data read from files."""
    isolate_only: bool = False
    """Only an isolated run (``--isolate``) enforces it: refused without one, never ignored."""

    @property
    def model(self) -> str:
        """The model whose field it is."""
        return self.field.partition(".")[0]

    @property
    def path(self) -> tuple[str, ...]:
        """The field's path inside its model."""
        return tuple(self.field.partition(".")[2].split("."))

    @property
    def sets(self) -> tuple[str, ...]:
        """The :class:`RunConfig` field it sets (a path into the run's configuration tree)."""
        if self.model != "RunConfig":
            raise ValueError(f"--{self.name} sets {self.field}, not a RunConfig field")
        return self.path

    @property
    def default(self) -> Any:
        """Its default on the command line: its field's (``none_as`` for a None), or None where it is
        typed otherwise or means something else when not typed."""
        if self.model_type is not None or self.unset is not None:
            return None
        value = DEFAULTS.get(self.field)  # missing only until the file is generated again (a test fails)
        return self.none_as if value is None and self.none_as is not None else value

    @property
    def help(self) -> str:
        """Its field's help (with the field's choices where the help does not name them all), then what
        the command line adds."""
        text, choices = FIELDS.get(self.field, (_STALE, ()))
        if choices and not all(choice in text for choice in choices):
            text += f" ({' | '.join(choices)})"
        if self.none_as is not None:
            text += f"; {self.none_as:g} for None"
        if self.unset is not None:
            text += f"; default: {self.unset}"
        if self.note:
            text += f"; {self.note}"
        return f"--isolate: {text}" if self.isolate_only else f"{self.side}: {text}" if self.side else text

    def parameter(self) -> inspect.Parameter:
        """The command's keyword parameter, as typer reads it."""
        info = typer.Option(*self.flags, help=self.help, autocompletion=self.complete)
        return inspect.Parameter(
            self.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=self.default,
            annotation=Annotated[self.type, info],
        )


def _sided(option: Option, side: str, unset: str | None = None, note: str = "") -> Option:
    """``option`` for one side of ``ab`` (``--base-adapter``, ``--head-option``)."""
    name = f"{side}_{option.name}"
    notes = "; ".join(n for n in (option.note, note) if n)
    return dataclasses.replace(
        option, name=name, flags=(f"--{name.replace('_', '-')}",), unset=unset, note=notes, side=side
    )


RUN_OPTIONS: tuple[Option, ...] = (
    Option("adapter", "RunConfig.adapter", str, ("--adapter", "-a"), complete=completion.adapters),
    Option("option", "RunConfig.adapter_options", list[str] | None, ("--option", "-o"),
           model_type=dict[str, Any], note="KEY=VALUE (repeatable)"),
    Option("dataset", "RunConfig.data.kind", str, complete=completion.datasets, note="their files: --config"),
    Option("seed", "RunConfig.data.seed", int | None, synthetic_only=True),
    Option("streams", "RunConfig.data.num_streams", int, ("--streams", "-n"), synthetic_only=True),
    Option("duration", "RunConfig.data.duration_s", float, synthetic_only=True),
    Option("warmup_frames", "RunConfig.engine.warmup_frames", int),
    Option("pacing", "RunConfig.engine.pacing", str),
    Option("paced_policy", "RunConfig.engine.paced_policy", str),
    Option("decision", "RunConfig.protocol.decision.kind", str),
    Option("threshold", "RunConfig.protocol.decision.threshold", float),
    Option("top_k", "RunConfig.protocol.decision.k", int),
    Option("output_dir", "RunConfig.output_dir", Path, ("--output-dir",)),
    Option("run_id", "RunConfig.run_id", str | None),
    Option("baseline", "RunConfig.baseline", Path | None),
    Option("on_error", "RunConfig.on_error", str),
    Option("isolate", "RunConfig.isolate", bool, ("--isolate/--in-process",)),
    Option("sealed", "RunConfig.isolation.sealed", bool, ("--sealed/--no-sealed",)),
    Option("frame_timeout", "RunConfig.isolation.frame_timeout_s", float, isolate_only=True),
    Option("stream_timeout", "RunConfig.isolation.stream_timeout_s", float, isolate_only=True),
    Option("start_timeout", "RunConfig.isolation.start_timeout_s", float, isolate_only=True),
    Option("memory_limit_mb", "RunConfig.isolation.memory_limit_mb", int | None, isolate_only=True),
    Option("sandbox", "RunConfig.isolation.sandbox", str, isolate_only=True),
)  # fmt: skip
"""Every option of ``run``, in the order ``streambench run --help`` lists them."""

_RUN = {option.name: option for option in RUN_OPTIONS}

AB_OPTIONS: tuple[Option, ...] = (
    _sided(_RUN["adapter"], "base", note="with --config: the file's adapter unless typed"),
    _sided(_RUN["adapter"], "head", unset="the base's"),
    _sided(_RUN["option"], "base"),
    _sided(_RUN["option"], "head"),
    Option("base_path", "WorkerCommand.pythonpath", list[Path] | None, model_type=list[str],
           note="repeatable", side="base"),
    Option("head_path", "WorkerCommand.pythonpath", list[Path] | None, model_type=list[str],
           note="repeatable", side="head"),
    Option("base_python", "WorkerCommand.python", str | None, unset="this one", side="base"),
    Option("head_python", "WorkerCommand.python", str | None, unset="this one", side="head"),
    dataclasses.replace(_RUN["seed"], note="default: one secret seed for both sides"),
    dataclasses.replace(_RUN["streams"], field="ABData.num_streams"),
    dataclasses.replace(_RUN["duration"], field="ABData.duration_s"),
    _RUN["warmup_frames"],
    Option("rounds", "RoundsConfig.rounds", int),
    Option("max_rounds", "RoundsConfig.max_rounds", int | None),
    Option("step", "RoundsConfig.step", int | None),
    Option("budget_s", "RoundsConfig.budget_s", float | None, none_as=0.0),
    Option("streams_per_round", "RoundsConfig.streams_per_round", int),
    Option("mode", "RoundsConfig.mode", str),
    Option("restart_every", "RoundsConfig.restart_every", int | None, none_as=0),
    Option("order_seed", "RoundsConfig.seed", int),
    Option("fail_on", "GateConfig.fail_on", str, ("--fail-on",)),
    Option("on", "GateConfig.on", str),
    Option("confidence", "GateConfig.confidence", float),
    Option("pass_confidence", "GateConfig.pass_confidence", float),
    Option("force", "GateConfig.force", bool, ("--force",)),
    dataclasses.replace(_RUN["sealed"], note="ab: where both sides run this harness"),
)  # fmt: skip
"""Every option of ``ab`` that stands for a field, in the order ``streambench ab --help`` lists them."""

_STALE = "(not in harness/cli/option_fields.py: python -m streambench.harness.cli.generate_options)"

RETIRED: dict[str, str] = {"--deadline-ms": "deadline_ms", "--budget-s": "budget_s"}
"""Flags of ``run`` that once set a field of a protocol's configuration (now ``-p FIELD=VALUE``)."""


def retired_flag(flag: str, value: str) -> str:
    """The one-line refusal of a retired flag, saying what to type instead."""
    field = RETIRED[flag]
    return (
        f"{flag} is not an option of run any more: type -p {field}={value} (a protocol's field is set with "
        f"-p {field}=VALUE, or as {field} in the file of --protocol-config)"
    )


def retired_parameters() -> list[inspect.Parameter]:
    """Hidden parameters that take the :data:`RETIRED` flags (any value, to be refused by name)."""
    return [
        inspect.Parameter(
            _retired(field),
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[str | None, typer.Option(flag, hidden=True)],
        )
        for flag, field in RETIRED.items()
    ]


def refuse_retired(values: dict[str, Any]) -> str | None:
    """Take the hidden parameters of :func:`retired_parameters` out of ``values``; the refusal of the
    first one typed, or None."""
    typed = {flag: values.pop(_retired(field), None) for flag, field in RETIRED.items()}
    return next((retired_flag(flag, value) for flag, value in typed.items() if value is not None), None)


def _retired(field: str) -> str:
    return f"retired_{field}"


def field_values(options: Iterable[Option], model: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``model`` that ``options`` stand for, with the command line's values (``values``:
    parameter name -> value; a ``none_as`` spelling read as None), as a tree for ``model_validate``."""
    tree: dict[str, Any] = {}
    for option in options:
        if option.model != model or option.name not in values:
            continue
        value = values[option.name]
        if option.none_as is not None and value == option.none_as:
            value = None
        node = tree
        for part in option.path[:-1]:
            node = node.setdefault(part, {})
        node[option.path[-1]] = value
    return tree


def declare(
    command: Callable[..., None], options: Iterable[Option], hidden: Iterable[inspect.Parameter] = ()
) -> Callable[..., None]:
    """``command`` with one keyword parameter per option after its first (the typer context) and before
    the rest of its own, then the ``hidden`` ones: typer builds the command line from the signature."""
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    declared = [*(option.parameter() for option in options), *hidden]
    rest = [p.replace(kind=p.KEYWORD_ONLY) for p in own[1:]]
    command.__signature__ = inspect.Signature([*own[:1], *declared, *rest])  # type: ignore[attr-defined]
    command.__annotations__ = {
        **{p.name: p.annotation for p in own},
        **{p.name: p.annotation for p in declared},
        "return": None,
    }
    return command
