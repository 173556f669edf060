"""The gate on both clocks (harness/results/gate_clocks.py): a regression on either, a pass on wall time."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.harness.results.compare import FailOnSpec
from streambench.harness.results.gate import judge
from streambench.harness.results.gate_clocks import both_clocks, split_confidence

RULES = FailOnSpec.parse("p50:+5%").rules


def _rounds(ratios: np.ndarray, base_ms: float = 1.0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Pairs of rounds whose p50 ratio head / base is each of ``ratios``."""
    base = [np.full(50, base_ms * 1e6) for _ in ratios]
    head = [np.full(50, base_ms * 1e6 * r) for r in ratios]
    return base, head


def _gate(wall: np.ndarray, cpu: np.ndarray):  # type: ignore[no-untyped-def]
    level = split_confidence(0.95)
    wall_gate = judge(*_rounds(wall), RULES, level, "wall", 0.995)
    cpu_gate = judge(*_rounds(cpu), RULES, level, "cpu", 0.995)
    return both_clocks(wall_gate, cpu_gate)


def test_each_clock_gets_half_the_false_alarm_rate() -> None:
    assert split_confidence(0.95) == pytest.approx(0.975)  # 1.25 % of false alarms per clock


def test_a_regression_on_cpu_time_alone_is_called_and_named() -> None:
    rng = np.random.default_rng(0)
    noisy_wall = 1.10 * np.exp(rng.normal(0, 0.3, 16))  # a 10 % slowdown hidden in wall-time noise
    cpu = np.full(16, 1.10) * np.exp(rng.normal(0, 0.005, 16))
    gate = _gate(noisy_wall, cpu)
    assert gate.verdict == "regression" and gate.clock == "both"
    assert gate.rules[0].clock == "cpu" and gate.rules[0].reason.startswith("on CPU time:")


def test_a_pass_needs_wall_time() -> None:
    rng = np.random.default_rng(1)
    quiet = np.exp(rng.normal(0, 0.005, 16))
    assert _gate(quiet, quiet).verdict == "no regression"
    noisy_wall = np.exp(rng.normal(0, 0.3, 16))
    gate = _gate(noisy_wall, quiet)  # CPU time would pass; wall time cannot tell: no pass
    assert gate.verdict == "inconclusive" and "CPU time" in gate.rules[0].reason


def test_wall_time_regression_stands_whatever_cpu_time_says() -> None:
    rng = np.random.default_rng(2)
    slower = 1.2 * np.exp(rng.normal(0, 0.005, 16))  # e.g. time spent waiting: wall time only
    same = np.exp(rng.normal(0, 0.005, 16))
    gate = _gate(slower, same)
    assert gate.verdict == "regression" and gate.rules[0].clock == "wall"


def test_both_clocks_must_judge_the_same_pairs() -> None:
    level = split_confidence(0.95)
    wall = judge(*_rounds(np.ones(8)), RULES, level, "wall", 0.995)
    cpu = judge(*_rounds(np.ones(9)), RULES, level, "cpu", 0.995)
    with pytest.raises(ValueError, match="same pairs"):
        both_clocks(wall, cpu)
