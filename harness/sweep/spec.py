"""A sweep: adapters × protocols × perturbation points × a parameter grid × seeds × repeats.

A sweep file (TOML, validated by :class:`SweepFile`) is expanded by :func:`expand` into
:class:`RunSpec` s, one per run, each with a **stable id**: a short sha256 of the canonical JSON of the
run's fully validated specification (adapter, options, protocol, its configuration, data, engine,
seed, repeat). The same run in any sweep, on any machine, gets the same id, so a run already in the
store is never run again: resuming a sweep is the default
(:func:`streambench.harness.sweep.state.split_done`).

``[protocols.<name>]`` names any protocol of the registry that is ``sweepable``; the protocol decides how
its entry expands (:meth:`~streambench.harness.runs.contract.ProtocolContract.sweep_points`) and what a
sweep run fixes (:meth:`~streambench.harness.runs.contract.ProtocolContract.sweep_trees`). The built-in
ones:

* ``online``: one run per combination (it has no perturbation points).
* ``robustness``: with ``points`` given, one run per **perturbation point**: a
  :class:`~streambench.protocols.robustness.RobustnessConfig` whose axes hold that single point and nothing
  else (the protocol always adds its clean run, so each run reports the point and its drop). Without
  ``points``: one run over the configuration's own axes (seed 004's default points).
* ``causality``: one run per combination, every check of the configuration.

``seed`` sets ``RunConfig.torch_seed`` and the protocol's own seed (robustness injectors' ``seed``,
causality's ``noise_seed``); the data set's seed is a grid key like any other (``"run.data.seed"``: such
runs are marked ``public seed``); left unset, each run draws its own secret one when it runs.
Grid keys are dotted paths: ``run.<RunConfig field>...`` applies to every run; ``<protocol>.<field>``
to that protocol's configuration only.

:class:`streambench.harness.sweep.state.SweepProgress` counts done / running / failed / remaining and
estimates the time left.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from streambench.adapters.contract import AdapterOptions
from streambench.adapters.registry import AdapterLoadError, resolve
from streambench.harness.execution.config import RunConfig, user_field_path
from streambench.harness.io.config_file import load_config_file
from streambench.harness.runs import registry
from streambench.harness.runs.contract import SweepPoint

__all__ = [
    "ID_SALT",
    "Resources",
    "RunSpec",
    "SweepError",
    "SweepFile",
    "expand",
    "load_sweep",
    "run_id_of",
]

ID_SALT = "streambench-sweep-v1"
"""Part of every hashed run specification: changing how ids are derived changes this, not silently."""
_RESERVED_RUN_FIELDS = ("adapter", "adapter_options", "run_id", "output_dir", "torch_seed", "protocol")


class SweepError(ValueError):
    """A sweep file that cannot be used; the message names the file and the field."""


class Resources(BaseModel):
    """What one run needs. Whole cores and whole GPUs only: a timed run never shares a device."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpus: int = Field(1, ge=1, description="whole CPU cores, pinned for the run (Ray: num_cpus)")
    gpus: int = Field(0, ge=0, description="whole GPUs (Ray: num_gpus): at most one timed run per GPU")
    memory_mb: int | None = Field(None, ge=1, description="memory the scheduler reserves (Ray: memory)")


class AdapterEntry(BaseModel):
    """One ``[[adapters]]`` table."""

    model_config = ConfigDict(extra="forbid")

    adapter: str = Field(description="registry name or importable module:Class")
    label: str | None = Field(None, description="name in reports (default: the adapter)")
    options: dict[str, Any] = Field(default_factory=dict, description="the adapter's own options")
    resources: Resources | None = Field(None, description="overrides [sweep.resources] for this adapter")

    @property
    def name(self) -> str:
        """The label, or the adapter when none is given."""
        return self.label or self.adapter


class ProtocolEntry(BaseModel):
    """``[protocols.<name>]``: the protocol's configuration (its own model's fields) and, for a protocol
    that splits into points (robustness), the points (one run each; empty: one run)."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] = Field(default_factory=dict)
    points: list[dict[str, Any]] = Field(default_factory=list)


class SweepSettings(BaseModel):
    """``[sweep]``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("sweep", pattern=r"^[A-Za-z0-9._-]+$")
    output_dir: Path = Field(Path("results"), description="the run store (relative: to the working dir)")
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    repeats: int = Field(1, ge=1)
    retries: int = Field(2, ge=0, description="attempts after the first, for a failed or lost worker")
    baseline: str | None = Field(None, description="adapter label speed-ups are computed against")
    resources: Resources = Field(default_factory=Resources)


class SweepFile(BaseModel):
    """The whole sweep file."""

    model_config = ConfigDict(extra="forbid")

    sweep: SweepSettings = Field(default_factory=SweepSettings)
    run: dict[str, Any] = Field(default_factory=dict, description="RunConfig fields shared by every run")
    adapters: list[AdapterEntry] = Field(min_length=1)
    protocols: dict[str, ProtocolEntry] = Field(description="the protocols every adapter runs under")
    grid: dict[str, list[Any]] = Field(default_factory=dict, description="dotted key -> values")

    @model_validator(mode="after")
    def _consistent(self) -> SweepFile:
        for name in _RESERVED_RUN_FIELDS:
            if name in self.run:
                raise ValueError(f"run.{name} is set by the sweep ([[adapters]], seeds, protocols)")
        labels = [a.name for a in self.adapters]
        duplicated = sorted({n for n in labels if labels.count(n) > 1})
        if duplicated:
            raise ValueError(f"adapters: labels must be unique, {duplicated} repeat (set `label`)")
        if self.sweep.baseline is not None and self.sweep.baseline not in labels:
            raise ValueError(f"sweep.baseline {self.sweep.baseline!r} is not one of the adapters {labels}")
        sweepable = [p.name for p in registry.protocols() if p.sweepable]
        if not self.protocols:
            raise ValueError(f"name at least one protocol: [protocols.<name>], one of {', '.join(sweepable)}")
        for name in self.protocols:
            if name not in sweepable:
                raise ValueError(
                    f"protocols.{name}: not a protocol a sweep runs (one of {', '.join(sweepable)})"
                )
        for key, values in self.grid.items():
            head = key.split(".", 1)[0]
            if head not in ("run", *sweepable) or "." not in key:
                raise ValueError(
                    f"grid key {key!r}: expected run.<field> or <protocol>.<field> ({', '.join(sweepable)})"
                )
            if not values:
                raise ValueError(f"grid key {key!r}: give at least one value")
        return self


class RunSpec(BaseModel):
    """One expanded run. ``run_id`` is derived from everything else but ``resources`` and ``label``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: str
    label: str
    protocol: str
    run: RunConfig
    protocol_config: dict[str, Any] | None = Field(
        None, description="the protocol's own configuration, validated (None: it lives in run)"
    )
    point: str | None = Field(None, description="the point of a protocol that splits into points")
    grid: dict[str, Any] = Field(default_factory=dict)
    seed: int
    repeat: int
    resources: Resources

    def describe(self) -> str:
        """One line for listings: label, protocol, point, grid values, seed, repeat."""
        parts = [self.label, self.protocol, *([self.point] if self.point else [])]
        parts += [f"{k}={v}" for k, v in self.grid.items()] + [f"seed={self.seed}", f"repeat={self.repeat}"]
        return " ".join(parts)


def load_sweep(path: Path) -> SweepFile:
    """Read and validate a ``.toml`` (or ``.json``) sweep file; errors name the file and each field."""
    try:
        tree = load_config_file(path)
    except ValueError as exc:
        raise SweepError(str(exc).replace("configuration", "sweep file", 1)) from None
    try:
        return SweepFile.model_validate(tree)
    except ValidationError as exc:
        raise SweepError(f"{path}: invalid sweep file:\n{_problems(exc)}") from None


def _problems(exc: ValidationError) -> str:
    """One line per error, the field as the user writes it (``run.data.num_streams``)."""
    return "\n".join(
        f"  {'.'.join(str(p) for p in user_field_path(e['loc'])) or '(top level)'}: {e['msg']}"
        for e in exc.errors()
    )


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = tree
    for key in parents:
        child = node.get(key)
        node[key] = child = dict(child) if isinstance(child, dict) else {}
        node = child
    node[last] = value


def run_id_of(label_slug: str, protocol: str, payload: Mapping[str, Any]) -> str:
    """``<adapter>-<protocol>-<12 hex>``: sha256 of the canonical JSON (sorted keys, no spaces)."""
    text = json.dumps({"salt": ID_SALT, **payload}, sort_keys=True, separators=(",", ":"), default=str)
    return f"{label_slug}-{protocol}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def _slug(adapter: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", adapter.rsplit(":", 1)[-1]).strip("-").lower()[:32] or "adapter"


def expand(sweep: SweepFile, source: str = "sweep file") -> list[RunSpec]:
    """Every run of the sweep, in a fixed order: adapter, protocol, point, grid, seed, repeat.

    Each run's configuration is validated here (errors name ``source``, the adapter and the field), so a
    bad sweep fails before anything runs."""
    specs: list[RunSpec] = []
    seen: set[str] = set()
    keys = list(sweep.grid)
    for entry in sweep.adapters:
        _check_adapter(entry.adapter, entry.options, source)
        for protocol, points in _protocols(sweep.protocols, source):
            own = [k for k in keys if k.split(".", 1)[0] in ("run", protocol)]
            for values in itertools.product(*(sweep.grid[k] for k in own)):
                combo = dict(zip(own, values, strict=True))
                for seed, repeat in itertools.product(sweep.sweep.seeds, range(sweep.sweep.repeats)):
                    for point in points:
                        spec = _spec(sweep, entry, protocol, point, combo, seed, repeat, source)
                        if spec.run_id not in seen:  # a grid that repeats a value is one run, not two
                            seen.add(spec.run_id)
                            specs.append(spec)
    return specs


def _check_adapter(name: str, options: dict[str, Any], source: str) -> None:
    """The adapter resolves and its options pass its Options model (data-bound fields are filled later):
    a typo fails here, before anything runs, not after every retry of every run."""
    try:
        cls = resolve(name)
    except AdapterLoadError as exc:
        raise SweepError(f"{source}: {exc}") from None
    model = getattr(cls, "Options", None)
    if model is None or not isinstance(model, type) or not issubclass(model, AdapterOptions):
        if options:
            raise SweepError(f"{source}: adapter {name!r} takes no options, got {sorted(options)}")
        return
    unknown = sorted(set(options) - set(model.model_fields))
    if unknown:
        known = sorted(model.model_fields)
        raise SweepError(f"{source}: adapter {name!r}: unknown option(s) {unknown}; its options: {known}")


def _protocols(table: dict[str, ProtocolEntry], source: str) -> list[tuple[str, list[SweepPoint | None]]]:
    """The sweep's protocols in registry order, each with the runs its entry expands into."""
    found: list[tuple[str, list[SweepPoint | None]]] = []
    for protocol in registry.protocols():
        entry = table.get(protocol.name)
        if entry is None or not protocol.sweepable:
            continue
        try:
            found.append((protocol.name, protocol.sweep_points(entry.points)))
        except (ValueError, ValidationError) as exc:
            raise SweepError(f"{source}: [protocols.{protocol.name}] points: {exc}") from None
    return found


def _spec(
    sweep: SweepFile,
    entry: AdapterEntry,
    protocol: str,
    point: SweepPoint | None,
    combo: dict[str, Any],
    seed: int,
    repeat: int,
    source: str,
) -> RunSpec:
    run_tree: dict[str, Any] = json.loads(json.dumps(sweep.run))  # a deep copy
    run_tree.update(adapter=entry.adapter, adapter_options=entry.options, torch_seed=seed)
    proto_tree: dict[str, Any] = json.loads(json.dumps(sweep.protocols[protocol].config))
    for key, value in combo.items():
        head, rest = key.split(".", 1)
        _set(run_tree if head == "run" else proto_tree, rest, value)
    chosen = registry.get(protocol)
    if not chosen.sweepable:  # the sweep file's validation refused it already
        raise SweepError(f"{source}: protocols.{protocol}: not a protocol a sweep runs")
    chosen.sweep_trees(run_tree, proto_tree, seed, point)
    where = f"{source}: adapter {entry.name!r}, protocol {protocol}"
    try:
        run = RunConfig.model_validate(run_tree)
    except ValidationError as exc:
        raise SweepError(
            f"{where}: invalid run configuration ([run], grid run.*):\n{_problems(exc)}"
        ) from None
    try:
        config = chosen.sweep_config(proto_tree, run)
    except ValidationError as exc:
        what = f"[protocols.{protocol}] config, grid {protocol}.*"
        raise SweepError(f"{where}: invalid {protocol} configuration ({what}):\n{_problems(exc)}") from None
    payload = {
        "adapter": run.adapter,
        "options": run.adapter_options,
        "protocol": protocol,
        "run": run.model_dump(mode="json", exclude={"output_dir", "run_id"}),
        "protocol_config": config.model_dump(mode="json") if config is not None else None,
        "seed": seed,
        "repeat": repeat,
    }
    return RunSpec(
        run_id=run_id_of(_slug(entry.adapter), protocol, payload),
        label=entry.name,
        protocol=protocol,
        run=run,
        protocol_config=config.model_dump(mode="json") if config is not None else None,
        point=point.name if point is not None else None,
        grid=combo,
        seed=seed,
        repeat=repeat,
        resources=entry.resources or sweep.sweep.resources,
    )
