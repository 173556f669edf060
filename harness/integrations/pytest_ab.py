"""The pytest route to the interleaved A/B latency gate: the ``streambench_ab`` fixture
(declared in harness/integrations/pytest_plugin.py, which imports this module only when a test uses it).

A test calls it once; it runs base and head in interleaved rounds exactly as ``streambench ab`` does
(:func:`streambench.harness.runs.ab.run_ab`: each side in its own worker process, fresh workers every pair,
the three-valued gate over pairs of rounds) and fails the test on a *regression*::

    def test_latency_gate(streambench_ab):
        streambench_ab(adapter="my_package.models:MyAdapter", fail_on="p50:+5%")

    def test_vad_latency_gate(streambench_ab):  # real data: the run configuration ab --config takes
        streambench_ab(config="examples/vad.toml", fail_on="p95:+10%")

It takes the same configuration as ``streambench ab --config``: ``config`` is a run
configuration (``.toml`` / ``.json`` file as ``run --config`` reads it, or the same mapping) of which the
fields :data:`AB_CONFIG_FIELDS` are used — the adapter and its options, the data set, the engine, the
thread settings and the torch seed — for both sides; its relative paths are relative to the working
directory, as on the command line. The arguments, all optional but an adapter from somewhere:

- ``adapter`` / ``options``: the head (default: the configuration's adapter, with its options);
  ``base_adapter`` / ``base_options``: the base (default: the head's adapter and options, run from
  ``--streambench-base-path`` when given);
- ``data``, ``engine``, ``threads``, ``torch_seed``: replace the configuration's data set (a complete data
  configuration), and lay their keys over its engine and thread settings;
- ``streams``, ``duration_s``, ``data_seed``: the synthetic data set used without any
  (:class:`~streambench.harness.runs.ab_settings.ABData`'s, a secret seed), or overriding a synthetic
  one; refused for data read from files;
- ``warmup_frames``: each worker's warm-up (default: the configuration's, else the engine's);
- the gate, as ``ab``'s options of those names, with the same defaults (the fields of
  :class:`~streambench.harness.execution.rounds.RoundsConfig` and
  :class:`~streambench.harness.runs.ab_settings.GateConfig`): ``fail_on``, ``rounds``, ``max_rounds``,
  ``step``, ``budget_s``, ``streams_per_round``, ``on`` (``wall`` / ``cpu``), ``mode``, ``restart_every``,
  ``seed`` (the order within pairs: ``ab --order-seed``), ``confidence`` (two-sided: a false alarm at most
  half of 1 - it per rule), ``pass_confidence`` (a slowdown as large as the floor passes at most 1 - it);
  and ``fail_inconclusive``.

In CI the base is the target branch's checkout: ``pytest --streambench-base-path ../base`` puts it first on
the base worker's ``PYTHONPATH`` (the head runs the code under test). Without it both sides run this
checkout (an A/A check of the machine). *Inconclusive* (noise larger than the floor, or an INVALID
measurement) passes with a warning unless ``fail_inconclusive=True`` or ``--streambench-strict``. A
configuration that cannot be used fails the test with one message naming the file and the field.
pytest-benchmark's ``--benchmark-compare-fail`` (the ``streambench_latency`` fixture) stays available but
compares per-frame samples of two separate runs, which a shared machine's drift between runs defeats.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import ValidationError

from streambench.harness.execution.adapter_errors import AdapterError
from streambench.harness.execution.config import RunConfig, user_field_path
from streambench.harness.execution.rounds import RoundsConfig, Side
from streambench.harness.execution.worker_errors import WorkerError
from streambench.harness.execution.worker_process import WorkerCommand
from streambench.harness.io.config_file import ConfigError, load_config_file
from streambench.harness.results.compare import FailOnSpec
from streambench.harness.runs.ab import ABReport, On, run_ab
from streambench.harness.runs.ab_settings import DEFAULT_GATE, ABData
from streambench.harness.runs.ab_text import ab_markdown

__all__ = ["AB_CONFIG_FIELDS", "ab_sides", "load_ab_config", "make_gate"]

AB_CONFIG_FIELDS = ("adapter", "adapter_options", "data", "engine", "threads", "torch_seed")
"""What the fixture takes from a run configuration: what ``streambench ab --config`` takes (a side's
worker runs these; protocol, output and isolation have no part in a latency comparison)."""

ConfigSource = str | os.PathLike[str] | Mapping[str, Any]

_ROUNDS = RoundsConfig()
"""The rounds' defaults (the fixture's, as ``ab``'s)."""


def _invalid(source: str, exc: ValidationError) -> ConfigError:
    problems = "\n".join(
        f"  {'.'.join(str(p) for p in user_field_path(error['loc'])) or '(top level)'}: {error['msg']}"
        for error in exc.errors()
    )
    return ConfigError(f"{source}: invalid run configuration:\n{problems}")


def load_ab_config(config: ConfigSource | None) -> dict[str, Any]:
    """The fields of :data:`AB_CONFIG_FIELDS` that ``config`` sets (a file read as ``run --config`` reads
    it, or a mapping), validated as a whole run configuration; :class:`ConfigError` names the file and
    each bad field."""
    if config is None:
        return {}
    source = "config" if isinstance(config, Mapping) else os.fspath(config)
    tree = dict(config) if isinstance(config, Mapping) else load_config_file(Path(config))
    try:
        validated = RunConfig.model_validate(tree)
    except ValidationError as exc:
        raise _invalid(source, exc) from None
    dumped = validated.model_dump(mode="json", exclude_unset=True)
    return {k: v for k, v in dumped.items() if k in AB_CONFIG_FIELDS}


def _data(
    filed: Mapping[str, Any] | None,
    streams: int | None,
    duration_s: float | None,
    data_seed: int | None,
) -> dict[str, Any]:
    """The data set both sides run (as ``ab``'s ``_data``): the given one, else the synthetic one of
    ``streams`` / ``duration_s`` / ``data_seed``, which also override a given synthetic one."""
    typed = {"num_streams": streams, "duration_s": duration_s, "seed": data_seed}
    given = {k: v for k, v in typed.items() if v is not None}
    if filed is None:
        return {"kind": "synthetic", **ABData().model_dump(), "seed": None, **given}
    if filed.get("kind", "synthetic") == "synthetic":
        return {**filed, **given}
    if given:
        names = {"num_streams": "streams", "duration_s": "duration_s", "seed": "data_seed"}
        wrong = ", ".join(names[k] for k in given)
        raise ConfigError(
            f"{wrong} apply to the synthetic data set, not to the configuration's {filed['kind']}"
        )
    return dict(filed)


def ab_sides(
    adapter: str | None,
    options: Mapping[str, Any] | None = None,
    base_adapter: str | None = None,
    base_options: Mapping[str, Any] | None = None,
    *,
    config: ConfigSource | None = None,
    data: Mapping[str, Any] | None = None,
    engine: Mapping[str, Any] | None = None,
    threads: Mapping[str, Any] | None = None,
    torch_seed: int | None = None,
    streams: int | None = None,
    duration_s: float | None = None,
    data_seed: int | None = None,
    warmup_frames: int | None = None,
    on: On = DEFAULT_GATE.on,
    base_paths: list[str] | None = None,
    head_paths: list[str] | None = None,
) -> tuple[Side, Side]:
    """Base and head as ``streambench ab --config`` builds them (see the module docstring); raises
    :class:`ConfigError` for a configuration that cannot be used."""
    common = load_ab_config(config)
    filed_adapter = common.pop("adapter", None)
    filed_options = common.pop("adapter_options", {})
    common["data"] = _data(data if data is not None else common.get("data"), streams, duration_s, data_seed)
    common["engine"] = {**common.get("engine", {}), **(engine or {})}
    if warmup_frames is not None:  # else the configuration's, else the engine's own default
        common["engine"]["warmup_frames"] = warmup_frames
    if on != "wall":
        common["engine"].setdefault("cpu_time", "thread")
    if threads is not None:
        common["threads"] = {**common.get("threads", {}), **threads}
    if torch_seed is not None:
        common["torch_seed"] = torch_seed
    head_name = adapter or filed_adapter
    if head_name is None:
        raise ConfigError("streambench_ab: give adapter=..., or a config whose run configuration names one")
    base_name = base_adapter or head_name

    def filed_for(name: str) -> dict[str, Any]:
        return dict(filed_options) if name == filed_adapter else {}

    head_options = {**filed_for(head_name), **(options or {})}
    if base_options is not None:
        chosen = {**filed_for(base_name), **base_options}
    else:  # the head's options for the same adapter (an A/A or a checkout against checkout)
        chosen = head_options if base_name == head_name else filed_for(base_name)
    sides = []
    for label, name, chosen_options, paths in (
        ("base", base_name, chosen, base_paths or []),
        ("head", head_name, head_options, head_paths or []),
    ):
        tree = {**common, "adapter": name, "adapter_options": chosen_options}
        try:
            run = RunConfig.model_validate(tree)
        except ValidationError as exc:
            raise _invalid(f"streambench_ab {label}", exc) from None
        sides.append(Side(label=label, run=run, command=WorkerCommand(pythonpath=paths)))
    return sides[0], sides[1]


def make_gate(request: pytest.FixtureRequest) -> Callable[..., ABReport]:
    """Call with the head's adapter (and options) or a configuration; the base is the same adapter in the
    base checkout (``--streambench-base-path``) unless ``base_adapter`` / ``base_options`` say otherwise.
    An undecided gate fails the test unless ``fail_inconclusive=False`` or
    ``--streambench-allow-inconclusive``."""
    base_path = request.config.getoption("--streambench-base-path", None)
    head_path = request.config.getoption("--streambench-head-path", None)
    allow = bool(request.config.getoption("--streambench-allow-inconclusive", False))

    def gate(
        adapter: str | None = None,
        options: dict[str, Any] | None = None,
        base_adapter: str | None = None,
        base_options: dict[str, Any] | None = None,
        fail_on: str = DEFAULT_GATE.fail_on,
        rounds: int = _ROUNDS.rounds,
        max_rounds: int | None = _ROUNDS.max_rounds,
        step: int | None = _ROUNDS.step,
        budget_s: float | None = _ROUNDS.budget_s,
        streams: int | None = None,
        duration_s: float | None = None,
        streams_per_round: int = _ROUNDS.streams_per_round,
        on: On = DEFAULT_GATE.on,
        mode: Literal["auto", "alternate", "interleaved", "duet"] = _ROUNDS.mode,
        restart_every: int | None = _ROUNDS.restart_every,
        seed: int = _ROUNDS.seed,
        fail_inconclusive: bool | None = None,
        confidence: float = DEFAULT_GATE.confidence,
        pass_confidence: float = DEFAULT_GATE.pass_confidence,
        config: ConfigSource | None = None,
        data: Mapping[str, Any] | None = None,
        engine: Mapping[str, Any] | None = None,
        threads: Mapping[str, Any] | None = None,
        torch_seed: int | None = None,
        data_seed: int | None = None,
        warmup_frames: int | None = None,
    ) -> ABReport:
        base_paths = [str(Path(base_path).resolve())] if base_path else None
        head_paths = [str(Path(head_path).resolve())] if head_path else None
        failure: str | None = None
        try:
            base, head = ab_sides(
                adapter, options, base_adapter, base_options, config=config, data=data, engine=engine,
                threads=threads, torch_seed=torch_seed, streams=streams, duration_s=duration_s,
                data_seed=data_seed, warmup_frames=warmup_frames, on=on, base_paths=base_paths,
                head_paths=head_paths,
            )  # fmt: skip
            rounds_config = RoundsConfig(
                rounds=rounds, max_rounds=max_rounds, step=step, budget_s=budget_s,
                streams_per_round=streams_per_round, mode=mode, restart_every=restart_every, seed=seed,
            )  # fmt: skip
            rules = FailOnSpec.parse(fail_on).rules
            report = run_ab(base, head, rounds_config, rules, on, confidence, pass_confidence=pass_confidence)
        except (ConfigError, ValidationError, ValueError, AdapterError, WorkerError) as exc:
            failure = f"streambench_ab: {exc}"  # a FailOnSpecError, refused sides, a side's adapter failing
        if failure is not None:  # outside the except: no chained traceback through the harness
            pytest.fail(failure, pytrace=False)
        request.node.user_properties.append(("streambench_ab", report.model_dump_json()))
        if report.verdict == "regression":
            pytest.fail("streambench ab: latency regression\n" + ab_markdown(report), pytrace=False)
        if report.verdict == "inconclusive":
            if fail_inconclusive if fail_inconclusive is not None else not allow:
                pytest.fail(
                    "streambench ab: inconclusive (the gate does not pass what it could not decide; "
                    "fail_inconclusive=False or --streambench-allow-inconclusive lets it pass with a "
                    "warning)\n" + ab_markdown(report),
                    pytrace=False,
                )
            warnings.warn("streambench ab: inconclusive: " + "; ".join(report.gate.reasons), stacklevel=2)
        return report

    return gate
