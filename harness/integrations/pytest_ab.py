"""The pytest route to the interleaved A/B latency gate (issue 16): the ``streambench_ab`` fixture
(declared in harness/integrations/pytest_plugin.py, which imports this module only when a test uses it).

A test calls it once; it runs base and head in interleaved rounds exactly as ``streambench ab`` does
(:func:`streambench.harness.runs.ab.run_ab`: each side in its own worker process, fresh workers every pair,
the three-valued gate over pairs of rounds) and fails the test on a *regression*::

    def test_latency_gate(streambench_ab):
        streambench_ab(adapter="my_package.models:MyAdapter", fail_on="p50:+5%")

In CI the base is the target branch's checkout: ``pytest --streambench-base-path ../base`` puts it first on
the base worker's ``PYTHONPATH`` (the head runs the code under test). Without it both sides run this
checkout (an A/A check of the machine). *Inconclusive* (noise larger than the floor, or an INVALID
measurement) passes with a warning unless ``fail_inconclusive=True`` or ``--streambench-strict``.
``confidence`` (0.95: a false alarm at most 2.5 % per rule) and ``pass_confidence`` (0.995: a slowdown as
large as the floor passes at most 0.5 %) are the gate's two error rates, as ``ab``'s options of those
names; the other arguments are ``ab``'s options too (``rounds``, ``max_rounds``, ``step``, ``on``, ...).
pytest-benchmark's ``--benchmark-compare-fail`` (the ``streambench_latency`` fixture) stays available but
compares per-frame samples of two separate runs, which a shared machine's drift between runs defeats.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.rounds import RoundsConfig, Side
from streambench.harness.execution.worker_process import WorkerCommand, default_pythonpath
from streambench.harness.results.compare import FailOnSpec
from streambench.harness.runs.ab import ABReport, ab_markdown, run_ab

__all__ = ["make_gate"]


def _side(
    label: str, adapter: str, options: dict[str, Any], paths: list[str], data: dict[str, Any], on: str
) -> Side:
    engine: dict[str, Any] = {"warmup_frames": 50}
    if on == "cpu":
        engine["cpu_time"] = "thread"
    run = RunConfig.model_validate(
        {"adapter": adapter, "adapter_options": options, "data": data, "engine": engine}
    )
    return Side(label=label, run=run, command=WorkerCommand(pythonpath=paths))


def make_gate(request: pytest.FixtureRequest) -> Callable[..., ABReport]:
    """Call with the head's adapter (and options); the base is the same adapter in the base checkout
    (``--streambench-base-path``) unless ``base_adapter`` / ``base_options`` say otherwise."""
    base_path = request.config.getoption("--streambench-base-path", None)
    strict = bool(request.config.getoption("--streambench-strict", False))

    def gate(
        adapter: str,
        options: dict[str, Any] | None = None,
        base_adapter: str | None = None,
        base_options: dict[str, Any] | None = None,
        fail_on: str = "p50:+5%",
        rounds: int = 12,
        max_rounds: int | None = 24,
        step: int = 4,
        streams: int = 6,
        duration_s: float = 5.0,
        streams_per_round: int = 2,
        on: Literal["wall", "cpu"] = "wall",
        mode: Literal["auto", "interleaved", "duet"] = "auto",
        restart_every: int | None = 1,
        seed: int = 0,
        fail_inconclusive: bool | None = None,
        confidence: float = 0.95,
        pass_confidence: float = 0.995,
    ) -> ABReport:
        here = default_pythonpath()
        data = {"kind": "synthetic", "num_streams": streams, "duration_s": duration_s}
        base_paths = [str(Path(base_path).resolve()), *here] if base_path else here
        chosen = base_options if base_options is not None else options or {}
        base = _side("base", base_adapter or adapter, chosen, base_paths, data, on)
        head = _side("head", adapter, options or {}, here, data, on)
        config = RoundsConfig(
            rounds=rounds, max_rounds=max_rounds, step=step, streams_per_round=streams_per_round, mode=mode,
            restart_every=restart_every, seed=seed,
        )  # fmt: skip
        rules = FailOnSpec.parse(fail_on).rules
        report = run_ab(base, head, config, rules, on, confidence, pass_confidence=pass_confidence)
        request.node.user_properties.append(("streambench_ab", report.model_dump_json()))
        if report.verdict == "regression":
            pytest.fail("streambench ab: latency regression\n" + ab_markdown(report), pytrace=False)
        if report.verdict == "inconclusive":
            if fail_inconclusive if fail_inconclusive is not None else strict:
                pytest.fail("streambench ab: inconclusive\n" + ab_markdown(report), pytrace=False)
            warnings.warn("streambench ab: inconclusive: " + "; ".join(report.gate.reasons), stacklevel=2)
        return report

    return gate
