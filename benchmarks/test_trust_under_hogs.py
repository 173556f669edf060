"""The parent's clock against work hidden from the worker's, with two CPU hogs: the planted offenders and
their honest twins of the same cost, 10 sealed runs each (docs/trust.md, "Latency the model cannot fake").

Opt-in (marker ``benchmark``; not collected by ``pytest`` alone)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_trust_under_hogs.py -s
    TRUST_BEFORE=/path/to/an/older/checkout python -m pytest ... -s   # the runs by that checkout's harness

Each run is ``streambench run`` (sealed, the defaults) of 2 streams of 4 s of the synthetic data, through the
command line of this checkout, or with ``TRUST_BEFORE`` of the checkout named (its harness and its worker;
the offenders are copied beside it as a ``module:Class`` it imports from the working directory). Printed per
model: how many runs the parent's clock called (``disagree``), how many were INVALID, and the p50 the run
reported against the model's true cost per frame. ``TRUST_RUNS`` sets the runs per model (default 10).
"""

from __future__ import annotations

import os
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from benchmarks.ab_gate import two_hogs
from benchmarks.cli_runs import run_streambench

pytestmark = pytest.mark.benchmark
__all__ = ["two_hogs"]

RUNS = int(os.environ.get("TRUST_RUNS", "10"))
BEFORE = os.environ.get("TRUST_BEFORE")
ROOT = Path(__file__).resolve().parents[1]
WORK_US = 2000.0

MODELS = {  # name: (adapter as module:Class of the copied module, options, honest)
    "busy-wait (honest)": ("streambench.adapters.null:BusyWaitAdapter", {"duration_us": WORK_US}, True),
    "busy-wait 0.2 ms (honest)": ("streambench.adapters.null:BusyWaitAdapter", {"duration_us": 200.0}, True),
    "spinning helper (honest)": ("hidden_work_copy:SpinningHelperAdapter", {"work_us": WORK_US}, True),
    "split work, 40 % late": (
        "hidden_work_copy:SplitWorkAdapter", {"work_us": WORK_US, "late_share": 0.4}, False
    ),
    "thread work": ("hidden_work_copy:ThreadWorkAdapter", {"work_us": WORK_US}, False),
    "late work (all)": ("streambench.adapters.offenders.clock:LateWorkAdapter", {"work_us": WORK_US}, False),
}  # fmt: skip


def _run(workdir: Path, adapter: str, options: dict[str, Any], run_id: str) -> dict[str, Any]:
    argv = ["run", "--adapter", adapter, "--streams", "2", "--duration", "4", "--no-report", "--no-progress"]
    argv += ["--output-dir", str(workdir / "store"), "--run-id", run_id]
    for key, value in options.items():
        argv += ["--option", f"{key}={value}"]
    return run_streambench(workdir, argv, workdir / "store" / run_id / "result.json", BEFORE)


def test_hidden_work_under_two_hogs(two_hogs: None, tmp_path: Path) -> None:
    shutil.copy(ROOT / "adapters" / "offenders" / "hidden_work.py", tmp_path / "hidden_work_copy.py")
    print(f"\nharness: {BEFORE or ROOT}; {RUNS} runs per model, two CPU hogs")
    print("| model | runs | called (disagree) | INVALID | reported p50 ms | parent's p50 ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (adapter, options, _honest) in MODELS.items():
        called = invalid = 0
        reported, parent = [], []
        for k in range(RUNS):
            result = _run(tmp_path, adapter, options, f"{abs(hash(name)) % 10**6}-{k}")
            host = result.get("host_timing") or {}
            called += host.get("verdict") == "disagree"
            invalid += (result.get("measurement_quality") or {}).get("verdict") == "INVALID"
            reported.append(result["metrics"]["overall"]["speed"]["latency"]["p50_ms"])
            parent.append((host.get("host_p50_ns") or 0) / 1e6)
        print(
            f"| {name} | {RUNS} | {called} | {invalid} | {statistics.median(reported):.3f} | "
            f"{statistics.median(parent):.3f} |",
            flush=True,
        )
