"""The interleaved-round latency gate: a three-valued verdict from paired rounds (issue 16).

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
  distribution-free confidence interval from the exact Wilcoxon signed-rank distribution (Hollander &
  Wolfe, *Nonparametric Statistical Methods*, §3.2–3.3). Robust to a few outlying rounds; needs at least
  6 pairs for a 95 % interval (with 5 or fewer no interval of that level exists: *too few rounds*).
* MLPerf LoadGen's early-stopping idea, simplified: the sequential mode looks at the data after fixed
  numbers of rounds and spends the error rate over the planned looks (Bonferroni), so optional stopping
  does not inflate the false-alarm rate: :func:`per_look_confidence`.

A rule ``p50:+5%`` (:class:`~harness.results.compare.FailRule`) gets one of three verdicts:

* **regression** — the interval lies wholly on the bad side of 1 (significant) *and* the estimate is past
  the floor (pyperf's "significant and larger than the minimum speed");
* **no regression** — the interval's bad end is inside the floor: an effect as large as the floor is
  excluded (an equivalence-style decision); labelled *improvement* when the whole interval is on the good
  side of 1;
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

from harness.results.compare import FailRule

__all__ = [
    "EXIT_CODES",
    "GATE_KEYS",
    "Effect",
    "GateResult",
    "RuleVerdict",
    "Verdict",
    "hodges_lehmann",
    "judge",
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


def hodges_lehmann(values: npt.ArrayLike, confidence: float) -> tuple[float, float, float] | None:
    """The Hodges–Lehmann estimate of the centre of ``values`` (median of the Walsh averages) and its
    distribution-free interval at ``confidence`` (at least that level, from the exact signed-rank
    distribution); ``None`` when there are too few values for an interval of that level."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    n = x.size
    if n == 0:
        return None
    i, j = np.triu_indices(n)
    walsh = np.sort((x[i] + x[j]) / 2.0)
    estimate = float(np.median(walsh))
    cdf = _signed_rank_cdf(n)
    tail = (1.0 - confidence) / 2.0
    # c = number of Walsh averages cut from each end: the largest c with P(T+ <= c - 1) <= tail
    c = int(np.searchsorted(cdf, tail, side="right"))
    if c == 0:
        return None
    return estimate, float(walsh[c - 1]), float(walsh[walsh.size - c])


def min_pairs(confidence: float) -> int:
    """The fewest pairs for which a Hodges–Lehmann interval at ``confidence`` exists."""
    n = 1
    while 2.0 / 2.0**n > 1.0 - confidence:  # the most extreme two-sided level with n pairs
        n += 1
    return n


def per_look_confidence(confidence: float, looks: int) -> float:
    """Sequential stopping: the confidence each of ``looks`` planned looks uses (Bonferroni)."""
    return 1.0 - (1.0 - confidence) / max(looks, 1)


def _spread(values: npt.NDArray[np.float64]) -> float:
    """Robust relative spread of positive values: 1.4826 x MAD of their logs (≈ the CV for small noise)."""
    logs = np.log(values)
    return float(1.4826 * np.median(np.abs(logs - np.median(logs))))


class Effect(BaseModel):
    """Head / base of one figure: the Hodges–Lehmann ratio over pairs of rounds and its interval."""

    key: str
    ratio: float | None = Field(description="head / base; null with fewer pairs than an interval needs")
    low: float | None
    high: float | None
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
    improvement: bool = Field(description="the whole interval lies on the good side of 1")
    more_rounds: int | None = Field(description="inconclusive: about how many more pairs would decide it")
    reason: str


class GateResult(BaseModel):
    """The gate over all rules: regression if any rule regressed, else inconclusive if any rule is, else
    no regression (:data:`EXIT_CODES`)."""

    verdict: Verdict
    exit_code: int
    pairs: int
    confidence: float
    clock: Literal["wall", "cpu"]
    effects: list[Effect]
    rules: list[RuleVerdict]
    reasons: list[str] = Field(default_factory=list, description="why the verdict is what it is")


def _effect(
    key: str, base: npt.NDArray[np.float64], head: npt.NDArray[np.float64], confidence: float
) -> Effect:
    ok = (base > 0) & (head > 0)
    logs = np.log(head[ok] / base[ok])
    hl = hodges_lehmann(logs, confidence)
    est, low, high = (math.exp(v) for v in hl) if hl is not None else (None, None, None)
    return Effect(
        key=key,
        ratio=est,
        low=low,
        high=high,
        base_median=float(np.median(base)),
        head_median=float(np.median(head)),
        base_spread=_spread(base[base > 0]) if (base > 0).any() else 0.0,
        head_spread=_spread(head[head > 0]) if (head > 0).any() else 0.0,
        pair_spread=_spread(np.exp(logs)) if logs.size else 0.0,
    )


def _judge_rule(rule: FailRule, effect: Effect, pairs: int, confidence: float) -> RuleVerdict:
    if effect.ratio is None or effect.low is None or effect.high is None:
        need = min_pairs(confidence)
        return RuleVerdict(
            rule=rule,
            effect=effect,
            verdict="inconclusive",
            improvement=False,
            more_rounds=need - pairs,
            reason=f"too few rounds: a {confidence:.0%} interval over pairs needs at least {need} pairs, "
            f"there are {pairs}",
        )
    floor = (
        rule.floor if rule.relative else rule.floor / effect.base_median if effect.base_median else math.inf
    )
    # d: log effect in the rule's bad direction; f: the floor on that scale
    sign = rule.direction
    d, lo, hi = (sign * math.log(v) for v in (effect.ratio, effect.low, effect.high))
    lo, hi = min(lo, hi), max(lo, hi)
    f = math.log(1 + floor) if sign > 0 else -math.log(max(1 - floor, 1e-12))
    pct = (
        f"{(effect.ratio - 1) * 100:+.1f} % [{(effect.low - 1) * 100:+.1f}, {(effect.high - 1) * 100:+.1f}] "
        f"({confidence:.0%} interval)"
    )
    improvement = hi < 0
    if lo > 0 and d > f:
        return RuleVerdict(
            rule=rule,
            effect=effect,
            verdict="regression",
            improvement=False,
            more_rounds=None,
            reason=f"{effect.key} {pct}: significant and past {rule.describe()}",
        )
    if hi < f:
        what = "improvement" if improvement else "an effect as large as the floor is excluded"
        return RuleVerdict(
            rule=rule,
            effect=effect,
            verdict="no regression",
            improvement=improvement,
            more_rounds=None,
            reason=f"{effect.key} {pct}: within {rule.describe()} ({what})",
        )
    half = (hi - lo) / 2
    margin = (f - d) if d < f else d
    more = None if margin <= 1e-9 else max(1, math.ceil(pairs * (half / margin) ** 2) - pairs)
    noise = (
        f"pair-to-pair noise ±{effect.pair_spread:.1%} (between rounds: base ±{effect.base_spread:.1%}, "
        f"head ±{effect.head_spread:.1%})"
    )
    return RuleVerdict(
        rule=rule,
        effect=effect,
        verdict="inconclusive",
        improvement=False,
        more_rounds=more,
        reason=f"{effect.key} {pct}: the interval straddles {rule.describe()}; {noise}; "
        + (
            f"about {more} more pairs would resolve it"
            if more is not None
            else "the estimate sits on the floor"
        ),
    )


def judge(
    base_rounds: Sequence[npt.ArrayLike],
    head_rounds: Sequence[npt.ArrayLike],
    rules: Sequence[FailRule],
    confidence: float = 0.95,
    clock: Literal["wall", "cpu"] = "wall",
) -> GateResult:
    """Judge paired rounds (``base_rounds[k]`` with ``head_rounds[k]``: per-frame values of round ``k``)."""
    if len(base_rounds) != len(head_rounds):
        raise ValueError(
            f"{len(base_rounds)} base rounds but {len(head_rounds)} head rounds: rounds are paired"
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    for rule in rules:
        if rule.key not in GATE_KEYS:
            raise ValueError(f"{rule.describe()}: the interleaved gate judges {', '.join(GATE_KEYS)} only")
    pairs = len(base_rounds)
    reasons: list[str] = []
    if pairs == 0:
        empty = Effect(key="", ratio=None, low=None, high=None, base_median=0, head_median=0,
                       base_spread=0, head_spread=0, pair_spread=0)  # fmt: skip
        verdicts = [_judge_rule(r, empty.model_copy(update={"key": r.key}), 0, confidence) for r in rules]
        return GateResult(verdict="inconclusive", exit_code=EXIT_CODES["inconclusive"], pairs=0,
                          confidence=confidence, clock=clock, effects=[], rules=verdicts,
                          reasons=["no rounds"])  # fmt: skip
    base, head = round_figures(base_rounds), round_figures(head_rounds)
    effects = {k: _effect(k, base[k], head[k], confidence) for k in GATE_KEYS}
    frames = min(min(np.size(r) for r in base_rounds), min(np.size(r) for r in head_rounds))
    verdicts = []
    for rule in rules:
        verdict = _judge_rule(rule, effects[rule.key], pairs, confidence)
        if frames < _MIN_FRAMES[rule.key] and verdict.verdict != "inconclusive":
            verdict = verdict.model_copy(
                update={
                    "verdict": "inconclusive",
                    "reason": f"{rule.key} of a round needs at least {_MIN_FRAMES[rule.key]} frames; the "
                    f"smallest round has {frames}",
                }
            )
        verdicts.append(verdict)
    kinds = {v.verdict for v in verdicts}
    overall: Verdict = (
        "regression"
        if "regression" in kinds
        else "inconclusive"
        if "inconclusive" in kinds
        else "no regression"
    )
    reasons.extend(v.reason for v in verdicts if v.verdict == overall)
    return GateResult(
        verdict=overall,
        exit_code=EXIT_CODES[overall],
        pairs=pairs,
        confidence=confidence,
        clock=clock,
        effects=list(effects.values()),
        rules=verdicts,
        reasons=reasons,
    )
