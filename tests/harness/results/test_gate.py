"""The interleaved-round gate (harness/results/gate.py) on synthetic round data: a machine whose load
drifts between rounds, outlying rounds, too few rounds, a real slowdown, and the interval's coverage.
No timing here: every sample is drawn from a seeded generator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import wilcoxon

from streambench.harness.results.compare import FailOnSpec, FailRule
from streambench.harness.results.gate import (
    EXIT_CODES,
    hodges_lehmann,
    hodges_lehmann_bounds,
    judge,
    min_pairs,
    per_look_confidence,
)

RULES = FailOnSpec.parse("p50:+5%,mean:+5%").rules


def rounds(
    rng: np.random.Generator,
    pairs: int,
    effect: float = 1.0,
    drift: float = 0.0,
    load_noise: float = 0.02,
    frames: int = 200,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-frame latencies (ms) of paired rounds: a per-pair machine load (drifting by ``drift`` per pair,
    plus noise) that both sides of a pair share, frame noise within a round, head slower by ``effect``."""
    base: list[np.ndarray] = []
    head: list[np.ndarray] = []
    for k in range(pairs):
        load = (1 + drift * k) * math.exp(rng.normal(0, load_noise * 3))
        for side, factor in ((base, 1.0), (head, effect)):
            own = math.exp(rng.normal(0, load_noise))  # what is not shared within the pair
            side.append(2.0 * load * own * factor * rng.lognormal(0, 0.1, frames))
    return base, head


def test_hodges_lehmann_interval_matches_the_signed_rank_test() -> None:
    # the interval excludes 0 exactly when the two-sided exact signed-rank test rejects at the same level
    rng = np.random.default_rng(1)
    for _ in range(30):
        x = rng.normal(rng.uniform(-1, 1), 1, 12)
        hl = hodges_lehmann(x, 0.95)
        assert hl is not None
        estimate, low, high = hl
        assert low <= estimate <= high
        p = wilcoxon(x, method="exact").pvalue
        assert (low > 0 or high < 0) == (p <= 0.05)


def test_one_sided_bounds_match_the_one_sided_signed_rank_tests() -> None:
    # the low end (error 2.5 %) is above m exactly when the exact one-sided test of "centre > m" rejects
    # at 2.5 %; the high end (error 0.5 %) is below m exactly when "centre < m" rejects at 0.5 %
    rng = np.random.default_rng(12)
    for _ in range(40):
        x = rng.normal(0, 1, int(rng.integers(8, 20)))
        found = hodges_lehmann_bounds(x, 0.025, 0.005)
        assert found is not None
        estimate, low, high = found
        assert low is not None and high is not None and low <= estimate <= high
        for m in rng.normal(0, 1, 5):
            assert (low > m) == (wilcoxon(x - m, alternative="greater", method="exact").pvalue <= 0.025)
            assert (high < m) == (wilcoxon(x - m, alternative="less", method="exact").pvalue <= 0.005)


def test_the_stricter_upper_bound_appears_later_than_the_lower() -> None:
    # a one-sided 0.5 % bound needs 8 values (1/2**8 < 0.005 < 1/2**7), a 2.5 % one 6
    x = np.linspace(0.01, 0.07, 7)
    found = hodges_lehmann_bounds(x, 0.025, 0.005)
    assert found is not None and found[1] is not None and found[2] is None
    assert hodges_lehmann_bounds(np.append(x, 0.08), 0.025, 0.005)[2] is not None  # type: ignore[index]


def test_min_pairs_is_where_an_interval_first_exists() -> None:
    for confidence in (0.9, 0.95, 0.99):
        n = min_pairs(confidence)
        assert hodges_lehmann(np.arange(n, dtype=float), confidence) is not None
        assert hodges_lehmann(np.arange(n - 1, dtype=float), confidence) is None


def test_a_real_ten_percent_slowdown_is_a_regression() -> None:
    base, head = rounds(np.random.default_rng(2), 12, effect=1.10)
    result = judge(base, head, RULES)
    assert result.verdict == "regression"
    assert result.exit_code == EXIT_CODES["regression"] == 1
    p50 = next(e for e in result.effects if e.key == "p50")
    assert p50.low is not None and p50.high is not None and p50.low < 1.10 < p50.high


def test_unchanged_code_on_a_drifting_machine_is_no_regression() -> None:
    # the load rises 8 % per pair (x1.9 over the job): pairs cancel it, the frame would not
    rng = np.random.default_rng(3)
    false_alarms = 0
    for _ in range(40):
        base, head = rounds(rng, 12, drift=0.08)
        result = judge(base, head, RULES)
        false_alarms += result.verdict == "regression"
    assert false_alarms <= 2
    # a pass needs the stricter upper bound (99.5 %): 16 pairs of this noise reach it, 12 did not here
    base, head = rounds(np.random.default_rng(4), 16, drift=0.08)
    assert judge(base, head, RULES).verdict == "no regression"


def test_outlying_rounds_do_not_make_a_regression() -> None:
    base, head = rounds(np.random.default_rng(5), 14)
    head[3] = head[3] * 3.0  # a round hit by a burst of load on one side only
    head[9] = head[9] * 2.0
    result = judge(base, head, RULES)
    assert result.verdict != "regression"
    assert next(e for e in result.effects if e.key == "p50").ratio == pytest.approx(1.0, abs=0.05)


def test_too_few_rounds_is_inconclusive_and_says_how_many_are_needed() -> None:
    base, head = rounds(np.random.default_rng(6), 4, effect=1.5)
    result = judge(base, head, RULES)
    assert result.verdict == "inconclusive"
    assert result.exit_code == 3
    assert all(v.more_rounds == min_pairs(0.95) - 4 for v in result.rules)
    assert "too few rounds" in result.reasons[0]


def test_noise_larger_than_the_floor_is_inconclusive_with_more_rounds() -> None:
    # round-to-round noise of ~15 % not shared within a pair against a 5 % floor, a 4 % effect
    base, head = rounds(np.random.default_rng(7), 8, effect=1.04, load_noise=0.15)
    result = judge(base, head, FailOnSpec.parse("p50:+5%").rules)
    assert result.verdict == "inconclusive"
    (verdict,) = result.rules
    assert verdict.more_rounds is not None and verdict.more_rounds > 0
    assert "noise" in verdict.reason


def test_an_improvement_is_no_regression_and_labelled() -> None:
    base, head = rounds(np.random.default_rng(8), 12, effect=0.8)
    result = judge(base, head, RULES)
    assert result.verdict == "no regression"
    assert all(v.improvement for v in result.rules)


def test_small_effect_interval_covers_it() -> None:
    # +2 % against a 5 % floor: never "regression"; a no-regression verdict's interval holds the truth
    rng = np.random.default_rng(9)
    misses = 0
    for _ in range(40):
        base, head = rounds(rng, 12, effect=1.02)
        result = judge(base, head, RULES)
        assert result.verdict != "regression"
        p50 = next(e for e in result.effects if e.key == "p50")
        assert p50.low is not None and p50.high is not None
        misses += not p50.low <= 1.02 <= p50.high
    assert misses <= 4  # an interval of at least 97 %: ~1 of 40 expected


def test_a_small_slowdown_passes_with_an_interval_excluding_it_at_most_at_the_pass_rate() -> None:
    # the bar: +2 % (inside a 5 % floor) must never pass with an interval that excludes +2 %. A
    # pass needs the upper bound at 99.5 %, so over 400 jobs ~2 such passes at most are expected; the same
    # jobs judged with a symmetric 95 % interval (upper bound at 97.5 %) pass with the truth outside ~5 x
    # as often — the check below can fail
    rng = np.random.default_rng(13)
    strict = lenient = 0
    for _ in range(400):
        base, head = rounds(rng, 16, effect=1.02, load_noise=0.03)
        rules = FailOnSpec.parse("p50:+5%").rules
        for level, count in ((0.995, "strict"), (0.975, "lenient")):
            result = judge(base, head, rules, pass_confidence=level)
            p50 = next(e for e in result.effects if e.key == "p50")
            missed = result.verdict == "no regression" and p50.high is not None and p50.high < 1.02
            if count == "strict":
                strict += missed
            else:
                lenient += missed
    assert strict <= 5
    assert lenient > strict


def test_a_pass_needs_the_upper_bound_and_a_regression_only_the_lower() -> None:
    # 7 pairs: the 2.5 % lower bound exists (a +30 % slowdown is called), the 0.5 % upper bound does not
    base, head = rounds(np.random.default_rng(14), 7, effect=1.30)
    assert judge(base, head, RULES).verdict == "regression"
    base, head = rounds(np.random.default_rng(14), 7)
    result = judge(base, head, RULES)
    assert result.verdict == "inconclusive"
    assert all(v.more_rounds == 1 and "a pass needs the upper bound" in v.reason for v in result.rules)


def test_pairs_without_a_positive_figure_are_not_counted() -> None:
    # 10 pairs, 3 of them with a zero base p50 (a coarse CPU clock): 7 are used, and "more rounds" counts
    # from 7, never negative
    base, head = rounds(np.random.default_rng(16), 10)
    for k in (1, 4, 7):
        base[k] = np.zeros_like(base[k])
    result = judge(base, head, FailOnSpec.parse("p50:+5%").rules)
    (verdict,) = result.rules
    assert verdict.effect.pairs == 7 and result.pairs == 10
    assert verdict.verdict == "inconclusive" and verdict.more_rounds == 1
    assert "there are 7" in verdict.reason


def test_a_rule_on_a_falling_latency_is_refused() -> None:
    base, head = rounds(np.random.default_rng(15), 8)
    with pytest.raises(ValueError, match="rising is bad: write p50:\\+5%"):
        judge(base, head, (FailRule(key="p50", direction=-1, floor=0.05, relative=True),))


def test_rules_outside_the_round_figures_and_unpaired_rounds_are_refused() -> None:
    base, head = rounds(np.random.default_rng(10), 6)
    with pytest.raises(ValueError, match="judges p50"):
        judge(base, head, (FailRule(key="f1@100ms", direction=-1, floor=0.01, relative=False),))
    with pytest.raises(ValueError, match="paired"):
        judge(base, head[:-1], RULES)


def test_p99_of_small_rounds_is_not_judged() -> None:
    base, head = rounds(np.random.default_rng(11), 10, effect=1.5, frames=30)
    result = judge(base, head, FailOnSpec.parse("p99:+5%").rules)
    assert result.verdict == "inconclusive"
    assert "at least 100 frames" in result.rules[0].reason


def test_sequential_looks_spend_the_error_rate() -> None:
    assert per_look_confidence(0.95, 1) == 0.95
    assert per_look_confidence(0.95, 5) == pytest.approx(0.99)
