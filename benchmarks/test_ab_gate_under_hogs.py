"""The A/B latency gate as a user's CI runs it, with two CPU hogs: each job is ``pytest`` in the head
checkout of a project whose torch model lives in a package at its root (``kws/models.py``, used through
``--adapter torch-module``), with ``--streambench-base-path`` naming the base checkout, and every gate
setting at its default (the budget, the looks, the rounds, both clocks).

Opt-in (marker ``benchmark``; not collected by ``pytest`` alone)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_ab_gate_under_hogs.py -s

Before the hogs start, the model's cost is calibrated in this process: a ~0.2 ms model and a ~35 µs one,
and for each the extra element-wise steps that make it 1.10 x as slow (the ratio measured is printed).
Then, with a busy loop pinned to each core, ``AB_REPEATS`` jobs (default 20) per case:

* A/A at 0.2 ms (two checkouts of the same code): at most 1 "regression", at least 19 "no regression";
* +10 % at 0.2 ms and at 35 µs: at least 19 "regression", never "no regression".

The table it prints is docs/performance.md's ("The A/B gate under two CPU hogs"). ``AB_CASES`` picks cases
by name (comma-separated: ``aa``, ``slow``, ``fast``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import ab_gate as ab
from benchmarks.ab_gate import two_hogs

pytestmark = pytest.mark.benchmark
__all__ = ["two_hogs"]

REPEATS = int(os.environ.get("AB_REPEATS", "20"))
CASES = os.environ.get("AB_CASES", "aa,slow,fast").split(",")
GATE = "p50:+5%"


@pytest.fixture(scope="module")
def calibrated() -> dict[str, tuple[int, int, float, float]]:
    """Before the hogs: (reps, fine, cost ns, measured ratio) of the 0.2 ms and the 35 µs model."""
    found = {"slow": ab.calibrate(200_000, 1.10), "fast": ab.calibrate(35_000, 1.10)}
    for name, (reps, fine, cost, ratio) in found.items():
        print(f"{name}: reps {reps}, {cost / 1e3:.1f} µs a frame; +{fine} steps: x{ratio:.3f}", flush=True)
    return found


def test_ab_gate_under_two_hogs(
    calibrated: dict[str, tuple[int, int, float, float]], two_hogs: None, tmp_path: Path
) -> None:
    slow, fast = calibrated["slow"], calibrated["fast"]
    cases = {
        "aa": ("A/A", slow[0], 0, slow[2]),
        "slow": ("+10 %", slow[0], slow[1], slow[2]),
        "fast": ("+10 %", fast[0], fast[1], fast[2]),
    }
    rows, outcomes = [], {}
    for key in CASES:
        name, reps, fine, cost = cases[key]
        base = ab.write_checkout(tmp_path / key / "base", reps, 0)
        head = ab.write_checkout(tmp_path / key / "head", reps, fine)
        reports: list[dict[str, Any]] = []
        started = time.monotonic()
        for seed in range(REPEATS):
            report, code = ab.run_job(base, head, seed, GATE)
            assert code == {"regression": 1, "no regression": 0}.get(report["verdict"], 1), (code, report)
            reports.append(report)
            print(ab.line(f"{name} {cost / 1e3:.0f} µs", seed, report, code), flush=True)
        outcomes[key] = reports
        rows.append(ab.row(name, cost / 1e3, reports))
        print(f"{key}: {time.monotonic() - started:.0f} s", flush=True)
    print(f"\ngate {GATE}, pytest route, defaults; two CPU hogs (one pinned to each core)")
    print(ab.HEADER)
    for r in rows:
        print(r)
    misses = []
    for key, reports in outcomes.items():
        verdicts = [r["verdict"] for r in reports]
        if key == "aa":
            if verdicts.count("regression") > max(1, REPEATS // 20):
                misses.append(f"A/A: {verdicts.count('regression')} false regressions")
            if verdicts.count("no regression") < REPEATS - max(1, REPEATS // 20):
                misses.append(f"A/A: {verdicts.count('no regression')} of {REPEATS} decided no regression")
        else:
            if verdicts.count("regression") < REPEATS - max(1, REPEATS // 20):
                misses.append(f"{key}: {verdicts.count('regression')} of {REPEATS} called")
            if "no regression" in verdicts:
                misses.append(f"{key}: a +10 % head passed")
    assert not misses, "; ".join(misses)
