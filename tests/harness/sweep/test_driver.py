"""The sweep driver (issue 10; harness/sweep/driver.py) with the local executor: every run into the
store with its manifest, resume, retries (in process and of a killed worker process), the report
grouped by fingerprint, the CLI resuming a finished sweep."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.instruments.manifest import collect_manifest, fingerprint
from streambench.harness.results.headline import LATENCY_KEYS
from streambench.harness.runs.catalog import list_runs, load_headline
from streambench.harness.runs.session import execute_run
from streambench.harness.sweep.driver import run_sweep
from streambench.harness.sweep.executors import SWEEP_FILE, LocalExecutor, SweepRecord
from streambench.harness.sweep.report import build_sweep_report, sweep_markdown
from streambench.harness.sweep.report_html import write_sweep_html
from streambench.harness.sweep.spec import SweepFile, expand
from tests.harness.sweep.sweep_helpers import SMALL_RUN, small_sweep

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)


HELPERS = "tests.harness.sweep.sweep_helpers"


def _record(results: Path, run_id: str) -> SweepRecord:
    return SweepRecord.model_validate_json((results / run_id / SWEEP_FILE).read_text())


# --- the local executor ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SweepFile, Any]:
    results = tmp_path_factory.mktemp("local") / "results"
    sweep = SweepFile.model_validate(small_sweep(results))
    outcome = run_sweep(sweep, LocalExecutor(retries=1))
    return results, sweep, outcome


def test_local_sweep_runs_every_run_into_the_store_with_its_manifest(local_store: Any) -> None:
    results, sweep, outcome = local_store
    specs = expand(sweep)
    assert outcome.total == 8 and outcome.skipped == [] and outcome.failed == []
    assert [r.run_id for r in outcome.records] == [s.run_id for s in specs]
    assert {h.run for h in list_runs(results)} == {s.run_id for s in specs}
    here = fingerprint(collect_manifest({}, requested_threads=specs[0].run.threads))  # the runs' setting
    for spec in specs:
        record = _record(results, spec.run_id)
        assert record.status == "done" and len(record.attempts) == 1 and record.attempts[0].error is None
        assert record.fingerprint == here and record.environment is not None
        assert record.spec == spec and record.executor == "local"
    assert not list((results / ".sweep-staging").iterdir())  # every staged directory was renamed


def test_a_sweep_run_measures_what_a_plain_run_measures(local_store: Any, tmp_path: Path) -> None:
    results, sweep, _ = local_store
    spec = next(s for s in expand(sweep) if s.label == "reference" and s.protocol == "online")
    _, _, plain_dir = execute_run(RunConfig.model_validate({**SMALL_RUN, "output_dir": tmp_path}))
    swept, plain_head = load_headline(results / spec.run_id), load_headline(plain_dir)
    quality = [f.key for f in swept.figures if f.key not in LATENCY_KEYS and f.key != "energy"]
    assert quality and all(swept.figure(k).value == plain_head.figure(k).value for k in quality)  # type: ignore[union-attr]
    ours, theirs = np.load(results / spec.run_id / "arrays.npz"), np.load(plain_dir / "arrays.npz")
    assert all(np.array_equal(ours[k], theirs[k]) for k in theirs.files if k.endswith("/scores"))


def test_rerunning_a_finished_sweep_runs_nothing(local_store: Any) -> None:
    results, sweep, first = local_store
    mtimes = {r.run_id: (results / r.run_id / SWEEP_FILE).stat().st_mtime_ns for r in first.records}
    again = run_sweep(sweep, LocalExecutor())
    assert again.records == [] and again.skipped == [r.run_id for r in first.records]
    assert mtimes == {r: (results / r / SWEEP_FILE).stat().st_mtime_ns for r in mtimes}


def test_an_incomplete_run_in_the_store_is_run_again(local_store: Any, tmp_path: Path) -> None:
    """An online run marked incomplete (interrupted, --on-error stop) is not a finished run of the sweep."""
    from streambench.harness.sweep.state import split_done

    results, sweep, first = local_store
    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    online = next(r.run_id for r in first.records if (copy / r.run_id / "result.json").is_file())
    raw = json.loads((copy / online / "result.json").read_text())
    raw.update(status="incomplete", incomplete_reason="interrupted (signal SIGTERM)")
    (copy / online / "result.json").write_text(json.dumps(raw))
    todo, done = split_done(expand(sweep), copy)
    assert [s.run_id for s in todo] == [online] and len(done) == len(first.records) - 1


def test_a_failed_attempt_is_retried_and_a_run_failing_every_attempt_is_recorded(tmp_path: Path) -> None:
    results = tmp_path / "results"
    tree = small_sweep(
        results,
        adapters=[
            {
                "adapter": f"{HELPERS}:RaiseOnceAdapter",
                "label": "once",
                "options": {"marker": str(tmp_path / "once")},
            },
            {"adapter": f"{HELPERS}:AlwaysBrokenAdapter", "label": "never"},
        ],
        protocols={"online": {}},
    )
    tree["sweep"]["baseline"] = None
    # in process: the once-failing adapter's marker file is outside what a sealed worker's sandbox may write
    tree["run"] = {**tree["run"], "isolate": False}
    sweep = SweepFile.model_validate(tree)
    outcome = run_sweep(sweep, LocalExecutor(retries=2))
    once, never = outcome.records
    assert once.status == "done" and [a.attempt for a in once.attempts] == [1, 2]
    assert "planted failure of the first attempt" in (once.attempts[0].error or "")
    assert once.attempts[1].error is None
    assert never.status == "failed" and len(never.attempts) == 3
    assert all("planted failure of every attempt" in (a.error or "") for a in never.attempts)
    assert _record(results, never.run_id).status == "failed"
    assert [h.run for h in list_runs(results)] == [once.run_id]  # the store lists finished runs only
    report = build_sweep_report(sweep, results)
    assert [(r.label, r.status, r.attempts) for r in report.rows] == [
        ("once", "done", 2),
        ("never", "failed", 3),
    ]
    assert "### Failed runs" in sweep_markdown(report)
    # resuming runs the failed run again (and only it)
    again = run_sweep(sweep, LocalExecutor(retries=0))
    assert [r.run_id for r in again.records] == [never.run_id] and again.skipped == [once.run_id]


def test_a_worker_killed_mid_run_is_retried_in_a_fresh_process(tmp_path: Path) -> None:
    results = tmp_path / "results"
    marker = tmp_path / "exited"
    tree = small_sweep(
        results,
        adapters=[
            {"adapter": f"{HELPERS}:ExitOnceAdapter", "label": "exit", "options": {"marker": str(marker)}}
        ],
        protocols={"online": {}},
    )
    tree["sweep"]["baseline"] = None
    # the adapter in process: its os._exit must end the sweep's worker process (in a sealed worker it would
    # end that worker only, a crashed stream of a run that goes on; and its sandbox refuses the marker)
    tree["run"] = {**tree["run"], "isolate": False}
    outcome = run_sweep(SweepFile.model_validate(tree), LocalExecutor(retries=1, isolate=True))
    (record,) = outcome.records
    assert marker.exists() and record.status == "done"
    assert [a.attempt for a in record.attempts] == [1, 2]
    assert "worker process lost" in (record.attempts[0].error or "")
    assert record.executor == "local-isolated" and record.cores is not None and len(record.cores) == 1
    worker_pid = int((record.attempts[1].worker or ":0").rsplit(":", 1)[1])
    assert worker_pid != os.getpid()  # measured in the worker, written here
    head = load_headline(results / record.run_id)
    assert head.figure("f1@0ms") is not None and head.figure("f1@0ms").value is not None  # type: ignore[union-attr]


# --- the report -----------------------------------------------------------------------------------------


def test_report_keeps_timings_per_fingerprint_and_compares_only_speed_ups(
    local_store: Any, tmp_path: Path
) -> None:
    results, sweep, _ = local_store
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    specs = {(s.label, s.protocol, s.point): s for s in expand(sweep)}
    ref, faulty = specs[("reference", "online", None)], specs[("faulty", "online", None)]
    same = build_sweep_report(sweep, copy)
    rows = {r.run_id: r for r in same.rows}
    base_mean = load_headline(copy / ref.run_id).figure("mean").value  # type: ignore[union-attr]
    mine_mean = load_headline(copy / faulty.run_id).figure("mean").value  # type: ignore[union-attr]
    assert rows[faulty.run_id].speedup == pytest.approx(base_mean / mine_mean)
    assert rows[ref.run_id].speedup == pytest.approx(1.0)
    assert len(same.fingerprints()) == 1
    # the faulty adapter's online run measured on another machine: its own table, no speed-up
    record = _record(copy, faulty.run_id).model_copy(update={"fingerprint": "ffffffffffffffff"})
    (copy / faulty.run_id / SWEEP_FILE).write_text(record.model_dump_json())
    split = build_sweep_report(sweep, copy)
    here = split.fingerprints()[0]
    rows = {r.run_id: r for r in split.rows}
    assert split.fingerprints()[1] == "ffffffffffffffff" and len(split.fingerprints()) == 2
    assert rows[faulty.run_id].speedup is None and "another environment" in (
        rows[faulty.run_id].speedup_reason or ""
    )
    markdown = sweep_markdown(split)
    tables = [t.split("###")[0] for t in markdown.split("### Timings on environment ")[1:]]
    assert len(tables) == 2
    assert "| reference |" in tables[0] and "| faulty |" not in tables[0]
    assert "| faulty |" in tables[1] and "| reference |" not in tables[1]
    written = write_sweep_html(split, copy / "sweep.html", copy)
    assert [p.name for p in written] == ["sweep.html"]
    page = written[0].read_text()
    assert "Timings on environment ffffffffffffffff" in page and f"Timings on environment {here}" in page
    assert page.count('<svg class="plot"') == 2  # the latency distributions of each environment
    # a configuration whose runs never finished shows its figures as missing, with the reason
    assert ref.run_id in page and '<details class="group">' in page  # every run, collapsed


# --- the command line -----------------------------------------------------------------------------------


def test_cli_resumes_a_finished_sweep_and_writes_the_report(local_store: Any, tmp_path: Path) -> None:
    results, sweep, _ = local_store
    path = tmp_path / "sweep.json"
    path.write_text(sweep.model_dump_json())
    runner = CliRunner()
    result = runner.invoke(app, ["sweep", str(path), "--report", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "8 runs, 8 already in the store, 0 run now, 0 failed" in result.output
    assert "### Quality: online (hardware-independent)" in result.output
    assert (results / "sweep-small.html").is_file()
    dry = runner.invoke(app, ["sweep", str(path), "--dry-run"])
    assert dry.exit_code == 0 and "8 runs, 0 to run" in dry.output
