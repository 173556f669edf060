"""The interleaved-round latency gate: a three-valued verdict from paired rounds.

The statistical unit is the **pair of rounds**, never the frame: frames of one round share the machine's
load, so they are not independent samples (the reason ``compare``'s per-frame rank test raised false
alarms on a busy machine). Round ``k`` of base and round ``k`` of head ran back to back (or, in duet mode,
at the same time), so a drift in the machine's load hits both alike and cancels in their ratio.

Conventions followed (read, not copied):

* Google Benchmark's ``compare.py`` tests over *repetitions* (not iterations) and warns when there are too
  few of them; asv compares samples gathered from several processes against a noise ``factor``; pyperf's
  ``compare_to`` reports a change only when it is significant and larger than ``--min-speed``. Here: a
  figure of each round (p50, p95, p99, mean of the round's frames), the **log of each pair's ratio**
  head / base, the **Hodges–Lehmann** estimate of its centre (the median of the Walsh averages) with the
  distribution-free confidence bounds from the exact Wilcoxon signed-rank distribution (Hollander &
  Wolfe, *Nonparametric Statistical Methods*, §3.2–3.3). Valid when the pairs are independent and each
  pair's log ratio is symmetric about the true effect (the order within a pair is drawn at random, so the
  machine's noise hits either side alike). Robust to a few outlying rounds. A one-sided bound with error
  ``a`` needs ``n`` pairs with ``1 / 2**n <= a``: fewer is *too few rounds*.
* The interval is **asymmetric in its error rates**, because the two wrong verdicts do not cost the same:
  its low end is the one-sided bound at ``1 - (1 - confidence) / 2`` (97.5 % for the default 0.95: per
  rule, a false alarm on unchanged code at most 2.5 % of the time; 6 pairs with one look), its high end
  the one-sided bound at ``pass_confidence`` (99.5 %: the true ratio lies above it at most 0.5 % of the
  time, so a slowdown as large as the floor passes as "no regression" at most that often — a passed
  regression ships; 8 pairs with one look). The interval as a whole holds the truth with at least
  ``1 - (1 - confidence) / 2 - (1 - pass_confidence)`` (97 %). With several rules the false-alarm rate of
  the job is at most the sum over the rules.
* MLPerf LoadGen's early-stopping idea, simplified: the sequential mode looks at the data after fixed
  numbers of rounds and spends the error rate over the planned looks (Bonferroni), so optional stopping
  does not inflate the false-alarm rate: :func:`per_look_confidence`.

A rule ``p50:+5%`` (:class:`~streambench.harness.results.compare.FailRule`) gets one of three verdicts:

* **regression** — the interval lies wholly on the bad side of 1 (significant) *and* the estimate is past
  the floor (pyperf's "significant and larger than the minimum speed");
* **no regression** — the interval's high end (the strict one) is inside the floor: an effect as large as
  the floor is excluded (an equivalence-style decision); labelled *improvement* when the whole interval is
  below 1;
* **inconclusive** — neither: the noise measured in this job (the spread of the pair ratios, and of the
  rounds of each side) is too large for the floor asked; :attr:`RuleVerdict.more_rounds` says roughly how
  many more rounds would resolve it (the interval narrows as 1/sqrt(n)).

Pure: numpy only; the caller runs the rounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from streambench.harness.results.compare import FailRule

__all__ = [
    "EXIT_CODES",
    "GATE_KEYS",
    "Effect",
    "GateResult",
    "RuleVerdict",
    "Verdict",
    "check_gate",
    "hodges_lehmann",
    "hodges_lehmann_bounds",
    "judge",
    "min_pairs",
    "overall_verdict",
    "per_look_confidence",
    "round_figures",
]

Verdict = Literal["regression", "no regression", "inconclusive"]
EXIT_CODES: dict[str, int] = {"no regression": 0, "regression": 1, "inconclusive": 3}
"""Exit code of each verdict (2 stays the CLI's "bad input")."""
GATE_KEYS = ("p50", "p95", "p99", "mean")
"""The figures computed per round and gated (all lower-is-better latencies)."""
_MIN_FRAMES = {"p50": 1, "p95": 20, "p99": 100, "mean": 1}
"""Frames a round needs before its percentile is more than its largest sample (p99 of fewer than 100
frames is the maximum, i.e. one frame)."""


def round_figures(rounds: Sequence[npt.ArrayLike]) -> dict[str, npt.NDArray[np.float64]]:
    """Each gated figure of every round (one array of per-frame values each), in the rounds' unit."""
    arrays = [np.asarray(r, dtype=np.float64) for r in rounds]
    if any(a.size == 0 for a in arrays):
        raise ValueError("a round has no frames")
    return {
        "p50": np.array([np.percentile(a, 50) for a in arrays]),
        "p95": np.array([np.percentile(a, 95) for a in arrays]),
        "p99": np.array([np.percentile(a, 99) for a in arrays]),
        "mean": np.array([a.mean() for a in arrays]),
    }


def _signed_rank_cdf(n: int) -> npt.NDArray[np.float64]:
    """P(T+ <= t), t = 0 .. n(n+1)/2, of the Wilcoxon signed-rank statistic under the null (exact)."""
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1, dtype=np.float64)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[: top + 1 - rank].copy()
    return np.cumsum(counts) / 2.0**n


def _cut(n: int, tail: float) -> int:
    """Walsh averages cut from one end for a one-sided bound with error ``tail``: the largest c with
    P(T+ <= c - 1) <= tail under the exact signed-rank null (0: no bound of that level with n values)."""
    return int(np.searchsorted(_signed_rank_cdf(n), tail, side="right"))


def hodges_lehmann_bounds(
    values: npt.ArrayLike, low_tail: float, high_tail: float
) -> tuple[float, float | None, float | None] | None:
    """The Hodges–Lehmann estimate of the centre of ``values`` (median of the Walsh averages), its lower
    bound at one-sided error ``low_tail`` and its upper bound at ``high_tail`` (distribution-free, from the
    exact signed-rank distribution; each at least its level). A bound is ``None`` when there are too few
    values for it; the whole is ``None`` with no values."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = x.size
    if n == 0:
        return None
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2.0)
    estimate = float(np.median(walsh))
    low_cut, high_cut = _cut(n, low_tail), _cut(n, high_tail)
    low = float(walsh[low_cut - 1]) if low_cut else None
    high = float(walsh[walsh.size - high_cut]) if high_cut else None
    return estimate, low, high


def hodges_lehmann(values: npt.ArrayLike, confidence: float) -> tuple[float, float, float] | None:
    """The Hodges–Lehmann estimate and its two-sided interval at ``confidence``; ``None`` when there are
    too few values for an interval of that level."""
    tail = (1.0 - confidence) / 2.0
    found = hodges_lehmann_bounds(values, tail, tail)
    if found is None or found[1] is None or found[2] is None:
        return None
    return found[0], found[1], found[2]


def _min_pairs_for(tail: float) -> int:
    """The fewest pairs for which a one-sided bound with error ``tail`` exists (the most extreme signed-rank
    outcome has probability 1 / 2**n)."""
    n = 1
    while 1.0 / 2.0**n > tail:
        n += 1
    return n


def min_pairs(confidence: float) -> int:
    """The fewest pairs for which a two-sided Hodges–Lehmann interval at ``confidence`` exists."""
    return _min_pairs_for((1.0 - confidence) / 2.0)


def per_look_confidence(confidence: float, looks: int) -> float:
    """Sequential stopping: the confidence each of ``looks`` planned looks uses (Bonferroni)."""
    return 1.0 - (1.0 - confidence) / max(looks, 1)


def _spread(values: npt.NDArray[np.float64]) -> float:
    """Robust relative spread of positive values: 1.4826 x MAD of their logs (≈ the CV for small noise)."""
    logs = np.log(values)
    return float(1.4826 * np.median(np.abs(logs - np.median(logs))))


class Effect(BaseModel):
    """Head / base of one figure: the Hodges–Lehmann ratio over pairs of rounds and its interval (low end
    at the gate's lower level, high end at its stricter upper level)."""

    key: str
    pairs: int = Field(0, description="pairs used: those whose figure is positive on both sides")
    ratio: float | None = Field(description="head / base; null with no pairs")
    low: float | None = Field(description="lower bound; null with fewer pairs than its level needs")
    high: float | None = Field(description="upper bound (the stricter level); null with too few pairs")
    base_median: float = Field(description="median over the base's rounds of the round figure")
    head_median: float
    base_spread: float = Field(description="relative spread between the base's rounds (1.4826 MAD of logs)")
    head_spread: float
    pair_spread: float = Field(description="relative spread of the pair ratios: the noise the gate sees")


class RuleVerdict(BaseModel):
    """One ``--fail-on`` rule judged on its figure's effect."""

    rule: FailRule
    effect: Effect
    verdict: Verdict
    improvement: bool = Field(description="the whole interval lies below 1")
    more_rounds: int | None = Field(description="inconclusive: about how many more pairs would decide it")
    reason: str
    clock: Literal["wall", "cpu"] = Field("wall", description="the clock whose pairs decided the verdict")


class GateResult(BaseModel):
    """The gate over all rules: regression if any rule regressed, else inconclusive if any rule is, else
    no regression (:data:`EXIT_CODES`)."""

    verdict: Verdict
    exit_code: int
    pairs: int
    confidence: float = Field(description="two-sided level whose lower half gives the interval's low end")
    pass_confidence: float = Field(description="one-sided level of the interval's high end (a pass needs it)")
    clock: Literal["wall", "cpu", "both"]
    effects: list[Effect]
    rules: list[RuleVerdict]
    reasons: list[str] = Field(default_factory=list, description="why the verdict is what it is")


def _effect(
    key: str, base: npt.NDArray[np.float64], head: npt.NDArray[np.float64], low_tail: float, high_tail: float
) -> Effect:
    ok = (base > 0) & (head > 0)
    logs = np.log(head[ok] / base[ok])
    hl = hodges_lehmann_bounds(logs, low_tail, high_tail)
    est, low, high = (None if v is None else math.exp(v) for v in hl) if hl is not None else (None,) * 3
    return Effect(
        key=key,
        pairs=int(logs.size),
        ratio=est,
        low=low,
        high=high,
        base_median=float(np.median(base)),
        head_median=float(np.median(head)),
        base_spread=_spread(base[base > 0]) if (base > 0).any() else 0.0,
        head_spread=_spread(head[head > 0]) if (head > 0).any() else 0.0,
        pair_spread=_spread(np.exp(logs)) if logs.size else 0.0,
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{(value - 1) * 100:+.1f}"


def _inconclusive(rule: FailRule, effect: Effect, more: int | None, reason: str) -> RuleVerdict:
    return RuleVerdict(
        rule=rule, effect=effect, verdict="inconclusive", improvement=False, more_rounds=more, reason=reason
    )


def _judge_rule(rule: FailRule, effect: Effect, confidence: float, pass_confidence: float) -> RuleVerdict:
    pairs = effect.pairs
    levels = f"(lower bound {1 - (1 - confidence) / 2:.4g}, upper {pass_confidence:.4g}, one-sided)"
    if effect.ratio is None or (effect.low is None and effect.high is None):
        need = _min_pairs_for(max((1 - confidence) / 2, 1 - pass_confidence))  # the first bound
        return _inconclusive(
            rule,
            effect,
            need - pairs,
            f"too few rounds: the interval {levels} needs at least {need} pairs, there are {pairs}",
        )
    floor = (
        rule.floor if rule.relative else rule.floor / effect.base_median if effect.base_median else math.inf
    )
    # on the log scale: d the estimate, lo / hi the bounds (None: too few pairs for that level), f the floor
    d = math.log(effect.ratio)
    lo = None if effect.low is None else math.log(effect.low)
    hi = None if effect.high is None else math.log(effect.high)
    f = math.log(1 + floor)
    pct = f"{effect.key} {_pct(effect.ratio)} % [{_pct(effect.low)}, {_pct(effect.high)}] {levels}"
    if lo is not None and lo > 0 and d > f:
        return RuleVerdict(
            rule=rule,
            effect=effect,
            verdict="regression",
            improvement=False,
            more_rounds=None,
            reason=f"{pct}: significant and past {rule.describe()}",
        )
    if hi is not None and hi < f:
        improvement = hi < 0
        what = "improvement" if improvement else "an effect as large as the floor is excluded"
        return RuleVerdict(
            rule=rule,
            effect=effect,
            verdict="no regression",
            improvement=improvement,
            more_rounds=None,
            reason=f"{pct}: within {rule.describe()} ({what})",
        )
    if hi is None:  # a regression could have been called; a pass needs the stricter upper bound
        need = _min_pairs_for(1 - pass_confidence)
        return _inconclusive(
            rule,
            effect,
            need - pairs,
            f"{pct}: not called a regression; a pass needs the upper bound, which needs at least {need} "
            f"pairs, there are {pairs}",
        )
    # the distance the interval must move, against how far its deciding end is from the estimate
    if d < f:
        margin, half = f - d, hi - d
    else:
        margin, half = d, d - (lo if lo is not None else d - (hi - d))
    more = None if margin <= 1e-9 else max(1, math.ceil(pairs * (half / margin) ** 2) - pairs)
    if lo is None:  # a regression cannot be called before its bound exists (a pass_confidence below it)
        more = max(more or 1, _min_pairs_for((1 - confidence) / 2) - pairs)
    noise = (
        f"pair-to-pair noise ±{effect.pair_spread:.1%} (between rounds: base ±{effect.base_spread:.1%}, "
        f"head ±{effect.head_spread:.1%})"
    )
    return _inconclusive(
        rule,
        effect,
        more,
        f"{pct}: the interval straddles {rule.describe()}; {noise}; "
        + (
            f"about {more} more pairs would resolve it"
            if more is not None
            else "the estimate sits on the floor"
        ),
    )


def overall_verdict(rules: Sequence[RuleVerdict]) -> Verdict:
    """The gate over its rules: regression if any rule regressed, else inconclusive if any rule is, else
    no regression."""
    kinds = {v.verdict for v in rules}
    if "regression" in kinds:
        return "regression"
    return "inconclusive" if "inconclusive" in kinds else "no regression"


def check_gate(rules: Sequence[FailRule], confidence: float, pass_confidence: float) -> None:
    """Refuse what the gate cannot judge — before any round is measured
    (:func:`streambench.harness.runs.ab.run_ab` calls it first, for ``ab`` and the pytest fixture alike): a
    figure other than :data:`GATE_KEYS`, a floor in percentage points (those are for shares), a rule on a
    falling latency, a level outside (0, 1)."""
    for name, level in (("confidence", confidence), ("pass_confidence", pass_confidence)):
        if not 0 < level < 1:
            raise ValueError(f"{name} must be in (0, 1), got {level}")
    for rule in rules:
        if rule.key not in GATE_KEYS:
            raise ValueError(f"--fail-on {rule.describe()}: ab judges {', '.join(GATE_KEYS)} only")
        if rule.points:
            raise ValueError(f"--fail-on {rule.describe()}: pp is for shares (F1, accuracy): write +5%")
        if rule.direction < 0:
            raise ValueError(
                f"{rule.describe()}: the gate's figures are latencies, where rising is bad: write "
                f"{rule.key}:+{rule.floor * 100:g}%"
            )


def judge(
    base_rounds: Sequence[npt.ArrayLike],
    head_rounds: Sequence[npt.ArrayLike],
    rules: Sequence[FailRule],
    confidence: float = 0.95,
    clock: Literal["wall", "cpu"] = "wall",
    pass_confidence: float = 0.995,
) -> GateResult:
    """Judge paired rounds (``base_rounds[k]`` with ``head_rounds[k]``: per-frame values of round ``k``).

    ``confidence``: two-sided level whose lower half bounds the false alarms ("regression" on unchanged
    code at most ``(1 - confidence) / 2``); ``pass_confidence``: one-sided level of the upper bound a
    "no regression" needs (a slowdown past that bound passes at most ``1 - pass_confidence``)."""
    if len(base_rounds) != len(head_rounds):
        raise ValueError(
            f"{len(base_rounds)} base rounds but {len(head_rounds)} head rounds: rounds are paired"
        )
    check_gate(rules, confidence, pass_confidence)
    pairs = len(base_rounds)
    low_tail, high_tail = (1 - confidence) / 2, 1 - pass_confidence
    if pairs == 0:
        empty = Effect(key="", ratio=None, low=None, high=None, base_median=0, head_median=0,
                       base_spread=0, head_spread=0, pair_spread=0)  # fmt: skip
        verdicts = [
            _judge_rule(r, empty.model_copy(update={"key": r.key}), confidence, pass_confidence)
            for r in rules
        ]
        return GateResult(verdict="inconclusive", exit_code=EXIT_CODES["inconclusive"], pairs=0,
                          confidence=confidence, pass_confidence=pass_confidence, clock=clock, effects=[],
                          rules=verdicts, reasons=["no rounds"])  # fmt: skip
    base, head = round_figures(base_rounds), round_figures(head_rounds)
    effects = {k: _effect(k, base[k], head[k], low_tail, high_tail) for k in GATE_KEYS}
    frames = min(min(np.size(r) for r in base_rounds), min(np.size(r) for r in head_rounds))
    verdicts = []
    for rule in rules:
        verdict = _judge_rule(rule, effects[rule.key], confidence, pass_confidence)
        if frames < _MIN_FRAMES[rule.key] and verdict.verdict != "inconclusive":
            verdict = verdict.model_copy(
                update={
                    "verdict": "inconclusive",
                    "reason": f"{rule.key} of a round needs at least {_MIN_FRAMES[rule.key]} frames; the "
                    f"smallest round has {frames}",
                }
            )
        verdicts.append(verdict)
    overall = overall_verdict(verdicts)
    return GateResult(
        verdict=overall,
        exit_code=EXIT_CODES[overall],
        pairs=pairs,
        confidence=confidence,
        pass_confidence=pass_confidence,
        clock=clock,
        effects=list(effects.values()),
        rules=verdicts,
        reasons=[v.reason for v in verdicts if v.verdict == overall],
    )
