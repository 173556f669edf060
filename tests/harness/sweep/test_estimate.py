"""The time estimate of ``streambench sweep --dry-run`` (harness/sweep/estimate.py): the store's cost
per frame, or the reason there is none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.sweep.executors import SWEEP_FILE, SweepRecord
from streambench.harness.sweep.spec import SweepFile, expand
from tests.harness.sweep.sweep_helpers import SMALL_RUN, small_sweep

# --- the time estimate of --dry-run ---------------------------------------------------------------------


def _timed_record(results: Path, spec: Any, measured_s: float, driver_s: float) -> None:
    from datetime import datetime, timezone

    from streambench.harness.sweep.executors import Attempt

    record = SweepRecord(
        run_id=spec.run_id,
        status="done",
        executor="local",
        spec=spec,
        attempts=[Attempt(attempt=1, wall_s=driver_s)],
        measured_wall_s=measured_s,
        finished_at=datetime.now(timezone.utc),
    )
    (results / spec.run_id).mkdir(parents=True)
    (results / spec.run_id / SWEEP_FILE).write_text(record.model_dump_json())


def test_dry_run_estimates_time_from_the_stores_per_frame_cost_or_says_it_cannot(tmp_path: Path) -> None:
    """Issue 17: --dry-run gives the time the missing runs will take: the stored runs' cost per frame of
    the same adapter, options and protocol, scaled to each run's frames, plus the executor's measured
    start-up; a run the store never timed gets no figure, only the reason."""
    from streambench.harness.sweep.estimate import estimate_runs, planned_frames

    results = tmp_path / "results"
    small = SweepFile.model_validate(small_sweep(results, protocols={"online": {}}))
    stored = {s.label: s for s in expand(small)}
    frames = planned_frames(stored["reference"].run)
    assert frames == 3 * 125 + 5  # 3 streams of 5 s at 25 fps, and the warm-up
    _timed_record(results, stored["reference"], measured_s=1.9, driver_s=2.4)
    bigger = small_sweep(results, protocols={"online": {}})
    bigger["run"] = {**SMALL_RUN, "data": {**SMALL_RUN["data"], "num_streams": 6}}
    planned = {s.label: s for s in expand(SweepFile.model_validate(bigger))}
    estimate = estimate_runs(list(planned.values()), results, "local")
    expected = 0.5 + (6 * 125 + 5) * 1.9 / frames
    assert estimate.runs[planned["reference"].run_id].seconds == pytest.approx(expected)
    assert estimate.startup_s == pytest.approx(0.5) and estimate.basis == 1
    faulty = estimate.runs[planned["faulty"].run_id]
    assert faulty.seconds is None and faulty.reason and "faulty under online" in faulty.reason
    # another executor: no start-up measured for it, so none is added (and the CLI says so)
    other = estimate_runs([planned["reference"]], results, "ray")
    assert other.startup_s is None
    assert other.runs[planned["reference"].run_id].seconds == pytest.approx(expected - 0.5)
    # the command line: per-run estimates, a total for what can be estimated, the reason for the rest
    path = tmp_path / "bigger.json"
    path.write_text(json.dumps(bigger))
    out = " ".join(CliRunner().invoke(app, ["sweep", str(path), "--dry-run", "--no-isolate"]).output.split())
    assert "2 runs, 2 to run" in out and "no estimate faulty online" in out
    assert "estimated time of 1 of the 2 runs: about" in out and "faulty under online" in out
    empty = tmp_path / "empty"
    alone = " ".join(
        CliRunner().invoke(app, ["sweep", str(path), "--dry-run", "--output-dir", str(empty)]).output.split()
    )
    assert "no time estimate: the store has no timed run" in alone and "about" not in alone
    # --json: each planned run with its estimate, null with the reason where there is no basis
    done = CliRunner().invoke(app, ["sweep", str(path), "--dry-run", "--no-isolate", "--json"])
    doc = json.loads(done.stdout)
    by_id = {r["run_id"]: r for r in doc["runs"]}
    assert by_id[planned["reference"].run_id]["estimate_s"] == pytest.approx(expected)
    assert by_id[planned["faulty"].run_id]["estimate_s"] is None
    assert "faulty under online" in by_id[planned["faulty"].run_id]["estimate_reason"]
    assert doc["estimated_runs"] == 1 and doc["estimated_s"] == pytest.approx(expected)
