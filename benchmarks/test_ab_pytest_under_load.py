"""The interleaved A/B gate under load through the pytest route (issue 16: "both for the CLI and for the
pytest route").

Opt-in (marker ``benchmark``; not collected by ``pytest`` alone)::

    python -m pytest -q -p no:cacheprovider benchmarks/test_ab_pytest_under_load.py -s

The cases, settings and CPU hog of ``benchmarks/test_ab_under_load.py`` (the CLI route; shared in
``benchmarks/ab_load.py``), run as a CI user runs the gate: for every comparison a test file that calls the
``streambench_ab`` fixture is written and run by ``python -m pytest`` in a subprocess (the plugin found
through its entry point, this checkout first on ``PYTHONPATH``), with ``--junitxml``; the verdict and
interval are read back from the report the fixture records in the test's properties, and pytest's exit
code must agree with the verdict (1 for a regression: the test failed; 0 otherwise, inconclusive passing
with a warning). ``AB_REPEATS``, ``AB_BLOCKS`` and ``AB_BURSTS`` as for the CLI route.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from benchmarks import ab_load as ab
from benchmarks.ab_load import hog

pytestmark = pytest.mark.benchmark
__all__ = ["hog"]

ROOT = Path(__file__).resolve().parents[1]

# What a CI user writes (docs/ci.md, "Latency regression tests in your own CI"), with this benchmark's
# settings; the warm-up is the fixture's (50 frames, as the CLI route's --warmup-frames 50).
GATE_TEST = """
def test_latency_gate(streambench_ab):
    streambench_ab(
        adapter="work",
        options={{"blocks": {head}}},
        base_options={{"blocks": {base}}},
        fail_on="{gate}",
        rounds={rounds},
        max_rounds={max_rounds},
        step={step},
        streams={streams},
        duration_s={duration},
        streams_per_round={per_round},
        seed={seed},
    )
"""


def compare(factor: float, seed: int, where: Path) -> dict[str, Any]:
    where.mkdir()
    settings = {
        "head": round(ab.BLOCKS * factor), "base": ab.BLOCKS, "gate": ab.GATE, "rounds": ab.ROUNDS,
        "max_rounds": ab.MAX_ROUNDS, "step": ab.STEP, "streams": ab.STREAMS, "duration": ab.DURATION_S,
        "per_round": ab.STREAMS_PER_ROUND, "seed": seed,
    }  # fmt: skip
    (where / "test_latency_gate.py").write_text(GATE_TEST.format(**settings))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=junit.xml",
         "test_latency_gate.py"],
        cwd=where, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    properties = ET.parse(where / "junit.xml").getroot().iter("property")
    recorded = [p.get("value") for p in properties if p.get("name") == "streambench_ab"]
    assert len(recorded) == 1, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(recorded[0] or "")
    expected = 1 if report["verdict"] == "regression" else 0
    assert done.returncode == expected, (report["verdict"], done.returncode, done.stdout, done.stderr)
    if report["verdict"] == "inconclusive":
        assert "streambench ab: inconclusive" in done.stdout, done.stdout  # the warning pytest shows
    return report


def test_ab_gate_through_pytest_under_a_cpu_hog(hog: None, tmp_path: Path) -> None:
    rows = []
    outcomes: dict[str, list[dict[str, Any]]] = {}
    for k, (name, factor) in enumerate(ab.CASES.items()):
        started = time.monotonic()
        outcomes[name] = []
        for seed in range(ab.REPEATS):
            began = time.monotonic()
            outcomes[name].append(compare(factor, seed, tmp_path / f"case{k}-seed{seed}"))
            print(ab.line(name, seed, outcomes[name][-1], time.monotonic() - began), flush=True)
        rows.append(ab.row(name, factor, outcomes[name], time.monotonic() - started))
    ab.print_table("pytest route (streambench_ab fixture)", outcomes, rows)
    ab.check(outcomes)
