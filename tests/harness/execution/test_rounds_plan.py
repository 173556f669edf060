"""The A/B gate's look plan (harness/execution/rounds_plan.py): when it looks, and what bounds the job."""

from __future__ import annotations

import pytest

from streambench.harness.execution.rounds_plan import fits, plan_looks


def test_without_a_cap_or_a_budget_the_gate_looks_once() -> None:
    plan = plan_looks(12, None, None, None, None)
    assert plan.at == [12] and plan.looks == 1
    assert plan_looks(12, None, None, 300.0, None).at == [12]  # no pair measured yet: no budget to plan by


def test_looks_grow_by_half_up_to_what_the_budget_allows_at_the_first_pairs_speed() -> None:
    plan = plan_looks(12, None, None, 300.0, 5.0)  # 60 pairs fit
    assert plan.at == [12, 18, 27, 41, 60]
    assert "300 s budget at 5.0 s per pair" in plan.bound
    assert plan_looks(12, None, None, 30.0, 5.0).at == [12]  # the first look is always made


def test_a_fixed_step_and_max_rounds() -> None:
    assert plan_looks(12, 24, 4, None, 5.0).at == [12, 16, 20, 24]
    assert plan_looks(12, 20, 6, None, None).at == [12, 18, 20]  # the last look at the cap
    capped = plan_looks(12, 30, None, 1000.0, 1.0)  # the budget would allow 1000: max_rounds binds
    assert capped.at[-1] == 30 and capped.bound == "max_rounds 30"


@pytest.mark.parametrize(
    ("elapsed", "done", "more", "expected"),
    [(100.0, 10, 10, True), (100.0, 10, 21, False), (0.0, 0, 99, True)],
)
def test_the_next_look_starts_only_if_it_fits_at_the_mean_speed(
    elapsed: float, done: int, more: int, expected: bool
) -> None:
    assert fits(300.0, elapsed, done, more) is expected
    assert fits(None, elapsed, done, more)
