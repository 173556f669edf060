"""What the two A/B-gate-under-load benchmarks share (issue 16): the CPU hog, the three cases, the table.

``benchmarks/test_ab_under_load.py`` runs the comparisons through the CLI (``streambench ab --json``),
``benchmarks/test_ab_pytest_under_load.py`` through the pytest fixture ``streambench_ab``; both run the same
cases with the same settings and print the same table (docs/performance.md, "The A/B gate under load").
Not a test module (no ``test_`` prefix): pytest does not collect it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

REPEATS = int(os.environ.get("AB_REPEATS", "20"))
BLOCKS = int(os.environ.get("AB_BLOCKS", "100"))
GATE = "p50:+5%"
CASES = {"A/A": 1.0, "+10 %": 1.10, "+2 %": 1.02}
# the settings of every comparison: 6 streams of 5 s, 2 per round, 50 warm-up frames; 12 pairs, then 6 more
# per look up to 30 (4 looks); fresh worker processes every pair (the default)
ROUNDS, MAX_ROUNDS, STEP = 12, 30, 6
STREAMS, DURATION_S, STREAMS_PER_ROUND, WARMUP = 6, 5.0, 2, 50

HEADER = (
    "| case | comparisons | regression | no regression | inconclusive | p50 interval holds the truth | "
    "no regression with the truth outside the interval | pairs | time |\n"
    "|---|---:|---:|---:|---:|---:|---:|---|---:|"
)


BURSTS = os.environ.get("AB_BURSTS", "") not in ("", "0")
"""``AB_BURSTS=1``: besides the hog, a second load that is not pinned and comes and goes (busy, then idle,
each for 0.1–2 s drawn at random, seeded): a runner whose other jobs start and stop while the comparison
runs, so the load drifts between rounds and the two sides of a pair do not always see the same."""

_BURSTS = """
import random, time
rng = random.Random(1)
while True:
    end = time.monotonic() + rng.uniform(0.1, 2.0)
    while time.monotonic() < end:
        pass
    time.sleep(rng.uniform(0.1, 2.0))
"""


@pytest.fixture(scope="module")
def hog() -> Iterator[None]:
    """A Python busy loop pinned to core 0 for the whole module (and, with ``AB_BURSTS=1``, bursts of load
    on any core)."""
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", "import os\nos.sched_setaffinity(0, {0})\nwhile True:\n    pass\n"]
        )
    ]
    if BURSTS:
        processes.append(subprocess.Popen([sys.executable, "-c", _BURSTS]))
    time.sleep(0.5)
    yield
    for process in processes:
        process.kill()
        process.wait()


def load() -> str:
    """The load the benchmark put on the machine, as the table's title says it."""
    return "CPU hog pinned to core 0" + (" and bursts of load on any core (AB_BURSTS=1)" if BURSTS else "")


def p50_effect(report: Mapping[str, Any]) -> dict[str, Any]:
    """The gate's p50 effect of one ``ABReport`` (as JSON): ratio (Hodges–Lehmann), low, high."""
    effect: dict[str, Any] = next(e for e in report["gate"]["effects"] if e["key"] == "p50")
    return effect


def holds(effect: Mapping[str, Any], truth: float) -> bool:
    """Whether the effect's interval has both ends and holds ``truth``."""
    low, high = effect["low"], effect["high"]
    return low is not None and high is not None and bool(low <= truth <= high)


def line(name: str, seed: int, report: Mapping[str, Any], seconds: float) -> str:
    """One comparison as it finishes (so a partial run can be read)."""
    e = p50_effect(report)
    ratio = "none" if e["ratio"] is None else f"{e['ratio']:.3f}"
    low, high = ("none" if e[end] is None else f"{e[end]:.3f}" for end in ("low", "high"))
    interval = f"[{low}, {high}]"
    return (
        f"{name} seed {seed:2d}: {report['verdict']}, p50 ratio {ratio} {interval}, "
        f"{report['pairs']} pairs, {seconds:.0f} s"
    )


def row(name: str, factor: float, reports: Sequence[Mapping[str, Any]], seconds: float) -> str:
    """The table's row of one case: verdict counts, interval coverage of the true ratio, pairs, time."""
    n = len(reports)
    verdicts = [str(r["verdict"]) for r in reports]
    effects = [p50_effect(r) for r in reports]
    covered = sum(1 for e in effects if holds(e, factor))
    excluded_pass = sum(
        1
        for r, e in zip(reports, effects, strict=True)
        if r["verdict"] == "no regression" and not holds(e, factor)
    )
    pairs = sorted(int(r["pairs"]) for r in reports)
    return (
        f"| {name} | {n} | {verdicts.count('regression')} | {verdicts.count('no regression')} | "
        f"{verdicts.count('inconclusive')} | {covered}/{n} | {excluded_pass} | "
        f"{pairs[0]}–{pairs[-1]} (median {pairs[len(pairs) // 2]}) | {seconds:.0f} s |"
    )


def print_table(route: str, outcomes: Mapping[str, Sequence[Mapping[str, Any]]], rows: Sequence[str]) -> None:
    first = next(iter(outcomes.values()))[0]
    print()
    print(f"{route}: gate {GATE}, work adapter {BLOCKS} blocks per frame, {load()}, mode {first['mode']}")
    print(HEADER)
    for r in rows:
        print(r)


def check(outcomes: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
    """Issue 16's bar: A/A at most 1 regression in 20; +10 % at least 19 of 20; +2 % never a pass (no
    regression or improvement) with an interval that excludes +2 %. Every miss is named, not the first."""
    repeats = len(outcomes["A/A"])
    regressions = {name: [str(r["verdict"]) for r in rs].count("regression") for name, rs in outcomes.items()}
    misses = []
    if regressions["A/A"] > max(1, repeats // 20):
        misses.append(f"A/A: {regressions['A/A']} false regressions in {repeats}")
    if regressions["+10 %"] < repeats - max(1, repeats // 20):
        misses.append(f"+10 %: {regressions['+10 %']} of {repeats} called")
    for seed, r in enumerate(outcomes["+2 %"]):
        e = p50_effect(r)
        if r["verdict"] == "no regression" and not holds(e, CASES["+2 %"]):
            misses.append(f"+2 % seed {seed}: no regression with the interval [{e['low']}, {e['high']}]")
    assert not misses, "; ".join(misses)
