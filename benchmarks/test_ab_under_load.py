"""The interleaved A/B gate under load (issue 16): false alarms and power with a CPU hog on one core.

Opt-in (marker ``benchmark``; not collected by ``pytest`` alone)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_ab_under_load.py -s

Starts a CPU hog (a Python busy loop pinned to core 0), then runs ``streambench ab --json`` (the CLI, in
process through typer's runner) for three cases of the ``work`` adapter (fixed work per frame: matrix
products, so its time grows when the core is taken from it), ``AB_REPEATS`` comparisons each (default 20):

* A/A: the same adapter both sides -> at most 1 "regression";
* +10 %: head runs 1.10 x the blocks -> at least 19 "regression";
* +2 %: never "no regression" (or an improvement) with an interval that excludes +2 %.

Every comparison gates ``p50:+5%`` with sequential stopping (12 pairs, then 6 more per look up to 30; fresh
worker processes every pair). The
table it prints is docs/performance.md's ("The A/B gate under load"). ``AB_REPEATS``, ``AB_BLOCKS`` size it;
``AB_BURSTS=1`` adds bursts of load that come and go on any core (a runner whose other jobs start and stop).
The same cases through the pytest fixture: ``benchmarks/test_ab_pytest_under_load.py``; what both share
(hog, cases, settings, table) is ``benchmarks/ab_load.py``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from typer.testing import CliRunner

from benchmarks import ab_load as ab
from benchmarks.ab_load import hog
from streambench.harness.cli import app

pytestmark = pytest.mark.benchmark
__all__ = ["hog"]


def compare(factor: float, seed: int) -> dict[str, Any]:
    args = [
        "ab", "--base-adapter", "work", "--base-option", f"blocks={ab.BLOCKS}",
        "--head-option", f"blocks={round(ab.BLOCKS * factor)}",
        "--streams", str(ab.STREAMS), "--duration", str(ab.DURATION_S), "--warmup-frames", str(ab.WARMUP),
        "--streams-per-round", str(ab.STREAMS_PER_ROUND), "--rounds", str(ab.ROUNDS),
        "--max-rounds", str(ab.MAX_ROUNDS), "--step", str(ab.STEP), "--order-seed", str(seed),
        "--fail-on", ab.GATE, "--json", "--no-progress",
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1, 3), result.output
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_ab_gate_under_a_cpu_hog(hog: None) -> None:
    rows = []
    outcomes: dict[str, list[dict[str, Any]]] = {}
    for name, factor in ab.CASES.items():
        started = time.monotonic()
        outcomes[name] = []
        for seed in range(ab.REPEATS):
            began = time.monotonic()
            outcomes[name].append(compare(factor, seed))
            print(ab.line(name, seed, outcomes[name][-1], time.monotonic() - began), flush=True)
        rows.append(ab.row(name, factor, outcomes[name], time.monotonic() - started))
    ab.print_table("CLI (streambench ab)", outcomes, rows)
    ab.check(outcomes)
