"""Capacity's accuracy check against honest models, with two CPU hogs: the planted capacity cheats' honest
twins (adapters/offenders/capacity_cheats.py), 10 searches each (docs/capacity.md, "Checked against planted
cheats").

Opt-in (marker ``benchmark``; not collected by ``pytest`` alone)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_capacity_twins_under_hogs.py -s

Each search is the command docs/capacity.md shows (``streambench run --protocol capacity``, sealed, the
defaults, the loose 80 % / 5 % bound, 4 synthetic streams of 4 s, seed 1, a 200 s budget). A false alarm is
a search that calls the honest model's answers changed under load (a point whose latency passed and whose
answers disagreed with the model's unloaded ones: ``outputs_changed``). Printed per search: the capacity, the
search's status, what bounded it, and the points that failed on accuracy. ``CAPACITY_TWIN_RUNS`` sets the
searches per model (default 10); ``CAPACITY_TWIN_MODELS`` other adapters, comma-separated (e.g. the
offenders themselves: ``offender-load-shedder,offender-session-cache``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.ab_gate import two_hogs
from benchmarks.cli_runs import run_streambench

pytestmark = pytest.mark.benchmark
__all__ = ["two_hogs"]

RUNS = int(os.environ.get("CAPACITY_TWIN_RUNS", "10"))
MODELS = os.environ.get(
    "CAPACITY_TWIN_MODELS", "offender-load-shedder-twin,offender-session-cache-twin"
).split(",")
SETTINGS = ["confidence=0.8", "target_miss_rate=0.05", "slack_misses=0", "min_point_s=2", "budget_s=200"]


def _search(workdir: Path, adapter: str, run_id: str) -> dict[str, Any]:
    argv = ["run", "--protocol", "capacity", "--adapter", adapter, "--option", "cost_ms=4"]
    for setting in SETTINGS:
        argv += ["-p", setting]
    argv += ["-p", "deadline_ms=40", "--streams", "4", "--duration", "4", "--seed", "1"]
    argv += ["--no-report", "--no-progress", "--output-dir", str(workdir / "store"), "--run-id", run_id]
    return run_streambench(workdir, argv, workdir / "store" / run_id / "capacity.json", timeout_s=900)


def test_capacity_twins_under_two_hogs(two_hogs: None, tmp_path: Path) -> None:
    print(f"\n{RUNS} searches per model, two CPU hogs")
    columns = "model | search | capacity | status | bound by | on accuracy (N: agreement) | others' CPU"
    print(f"| {columns} |")
    print("|---|---:|---:|---|---|---|---|")
    alarms: dict[str, int] = {}
    for adapter in MODELS:
        alarms[adapter] = 0
        for k in range(RUNS):
            score = _search(tmp_path, adapter, f"{adapter}-{k}")["score"]
            curve = score["curve"]
            changed = [p for p in curve if p["outputs_changed"] and p["latency_pass"]]
            alarms[adapter] += bool(changed)
            failed = ", ".join(f"{p['streams']}: {p['agreement']:.3f}" for p in changed) or "none"
            others = [p["others_cpu"] for p in curve if p.get("others_cpu") is not None]
            spread = f"{min(others):.2f}–{max(others):.2f}" if others else "unknown"
            bound = (score.get("interference") or {}).get("bound_by")
            print(
                f"| {adapter} | {k + 1} | {score['capacity']} | {score['status']} | {bound} | {failed} | "
                f"{spread} |",
                flush=True,
            )
    counts = ", ".join(f"{name} {count} of {RUNS}" for name, count in alarms.items())
    print("called (answers changed; a false alarm for a twin):", counts)
