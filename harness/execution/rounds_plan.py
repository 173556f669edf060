"""When the A/B gate looks at its pairs of rounds, and how long a job may run (harness/execution/rounds.py).

Sequential stopping with a plan fixed in advance: the first look after ``rounds`` pairs, then looks at
growing numbers of pairs (``step`` more each time, or, by default, half as many again as at the last
look: 12, 18, 27, 41, ...) up to the largest number of pairs the job may run. The gate spends its error
rates over the planned looks (Bonferroni: harness/results/gate.py ``per_look_confidence``), so stopping
at the first decided look does not raise them, and fewer looks than planned (the budget ran out) only
lowers them.

The largest number of pairs is ``max_rounds``, or what the wall-time ``budget_s`` allows at the speed of
the job's first pair (measured before any look, so the plan depends on time only, never on what the
pairs showed). Before each look's pairs are started, the job stops if they would not fit in what is left
of the budget at the mean speed of the pairs so far: the gate is then undecided and says so.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GROWTH", "LookPlan", "Stop", "fits", "plan_looks"]

GROWTH = 1.5
"""Default spacing of the looks: each at this many times the pairs of the last (rounded up)."""

Stop = Literal["decided", "budget", "max_rounds", "one look"]


class LookPlan(BaseModel):
    """The pair counts at which the gate looks, and what bounded them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    at: list[int] = Field(description="pairs at each planned look, increasing")
    bound: str = Field(description="what set the last look: max_rounds, the budget at the first pair's speed")

    @property
    def looks(self) -> int:
        return len(self.at)


def plan_looks(
    rounds: int,
    max_rounds: int | None,
    step: int | None,
    budget_s: float | None,
    seconds_per_pair: float | None,
) -> LookPlan:
    """The looks of a job whose first pair took ``seconds_per_pair`` (None: not measured, no budget)."""
    if max_rounds is None and (budget_s is None or seconds_per_pair is None):
        return LookPlan(at=[rounds], bound="one look (no max_rounds, no budget)")
    cap = math.inf if max_rounds is None else max_rounds
    bound = f"max_rounds {max_rounds}"
    if budget_s is not None and seconds_per_pair is not None and seconds_per_pair > 0:
        allowed = max(rounds, math.floor(budget_s / seconds_per_pair))
        if allowed < cap:
            cap = allowed
            bound = f"the {budget_s:g} s budget at {seconds_per_pair:.1f} s per pair (the first pair's speed)"
    at = [rounds]
    while at[-1] < cap:
        following = at[-1] + step if step is not None else max(at[-1] + 1, math.ceil(at[-1] * GROWTH))
        at.append(int(min(following, cap)))
    return LookPlan(at=at, bound=bound)


def fits(budget_s: float | None, elapsed_s: float, pairs_done: int, pairs_more: int) -> bool:
    """Whether ``pairs_more`` pairs still fit in the budget at the mean speed of the ``pairs_done``."""
    if budget_s is None or pairs_done == 0:
        return True
    return elapsed_s + pairs_more * elapsed_s / pairs_done <= budget_s
