"""The sweep (issue 10) with the local executor: file validation, expansion and stable ids, progress,
resume, retries (in process and of a killed worker process), the report grouped by fingerprint, the CLI."""

from __future__ import annotations

import json
import os
import re
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
from streambench.harness.sweep.executors import SWEEP_FILE, LocalExecutor, SweepRecord, pinned_cores
from streambench.harness.sweep.report import build_sweep_report, sweep_markdown
from streambench.harness.sweep.report_html import write_sweep_html
from streambench.harness.sweep.spec import SweepError, SweepFile, expand, load_sweep
from streambench.harness.sweep.state import SweepProgress
from streambench.protocols.robustness import RobustnessConfig
from tests.harness.sweep_helpers import SMALL_RUN, small_sweep

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)

HELPERS = "tests.harness.sweep_helpers"


def _write_toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _record(results: Path, run_id: str) -> SweepRecord:
    return SweepRecord.model_validate_json((results / run_id / SWEEP_FILE).read_text())


# --- the sweep file -------------------------------------------------------------------------------------


def test_example_sweep_file_expands_to_eight_runs() -> None:
    sweep = load_sweep(Path(__file__).parents[2] / "examples" / "sweep.toml")
    specs = expand(sweep)
    assert [(s.label, s.protocol, s.point) for s in specs] == [
        ("reference", "online", None),
        ("reference", "robustness", "missing=30"),
        ("reference", "robustness", "audio_delay=100"),
        ("reference", "robustness", "jitter=20"),
        ("null", "online", None),
        ("null", "robustness", "missing=30"),
        ("null", "robustness", "audio_delay=100"),
        ("null", "robustness", "jitter=20"),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[adapters]]\nadapter = 'null'\n[protocols.online]\nbogus = 1\n", "protocols.online.bogus"),
        ("[[adapters]]\nadapter = 'null'\n", "protocols: Field required"),
        (
            "[run]\nadapter = 'x'\n[[adapters]]\nadapter = 'null'\n[protocols.online]\n",
            "run.adapter is set by",
        ),
        ("[[adapters]]\nadapter = 'null'\n[protocols.online]\n[grid]\nseed = [1]\n", "grid key 'seed'"),
        (
            "[sweep]\nbaseline = 'ref'\n[[adapters]]\nadapter = 'null'\n[protocols.online]\n",
            "sweep.baseline 'ref' is not one of the adapters ['null']",
        ),
        ("[[adapters]]\nadapter = 'null'\n[[adapters]]\nadapter = 'null'\n[protocols.online]\n", "repeat"),
        ("[[adapters]]\nadapter = 'null'\n[protocols.online]\n[sweep.resources]\ncpus = 0.5\n", "cpus"),
        ("[[adapters]\n", "not valid TOML"),
    ],
)
def test_a_bad_sweep_file_is_refused_naming_the_file_and_field(
    tmp_path: Path, text: str, expected: str
) -> None:
    path = _write_toml(tmp_path / "bad.toml", text)
    with pytest.raises(SweepError) as caught:
        load_sweep(path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_a_bad_run_configuration_is_refused_before_anything_runs(tmp_path: Path) -> None:
    tree = small_sweep(tmp_path, run={"data": {"kind": "synthetic", "num_streams": 0}})
    with pytest.raises(
        SweepError, match=r"(?s)s\.toml: adapter 'reference', protocol online.*\n  data\.num_streams: "
    ):
        expand(SweepFile.model_validate(tree), "s.toml")


# --- expansion and stable ids ---------------------------------------------------------------------------


def test_expansion_maps_each_perturbation_point_to_a_single_point_robustness_run(tmp_path: Path) -> None:
    specs = expand(SweepFile.model_validate(small_sweep(tmp_path)))
    assert len(specs) == 2 * (1 + 3)
    robust = {
        s.point: RobustnessConfig.model_validate(s.protocol_config)
        for s in specs
        if s.label == "faulty" and s.protocol == "robustness"
    }
    assert robust["missing=30"] is not None and robust["missing=30"].missing_rates_pct == (30.0,)
    assert robust["missing=30"].audio_delays_ms == () and robust["missing=30"].jitters_ms == ()
    assert robust["audio_delay=100"] is not None and robust["audio_delay=100"].audio_delays_ms == (100.0,)
    assert robust["jitter=20"] is not None and robust["jitter=20"].jitters_ms == (20.0,)
    assert robust["jitter=20"].missing_rates_pct == ()
    online = next(s for s in specs if s.protocol == "online")
    assert online.protocol_config is None and online.run.data.num_streams == 3  # type: ignore[union-attr]


def test_run_ids_are_stable_and_depend_only_on_what_is_measured(tmp_path: Path) -> None:
    tree = small_sweep(tmp_path)
    ids = [s.run_id for s in expand(SweepFile.model_validate(tree))]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"(reference|faulty)-(online|robustness)-[0-9a-f]{12}", i) for i in ids)
    assert ids == [s.run_id for s in expand(SweepFile.model_validate(json.loads(json.dumps(tree))))]
    # the sweep's name, the output directory, the resources and the adapters' order change no id
    other = small_sweep(tmp_path / "elsewhere", adapters=[{"adapter": "faulty"}, {"adapter": "reference"}])
    other["sweep"] = {"name": "other", "output_dir": "x", "resources": {"cpus": 2}}
    assert sorted(s.run_id for s in expand(SweepFile.model_validate(other))) == sorted(ids)
    # a default written out is the same run: ids hash the validated configuration
    explicit = small_sweep(tmp_path, run={**SMALL_RUN, "on_error": "continue"})
    assert [s.run_id for s in expand(SweepFile.model_validate(explicit))] == ids
    # what changes the measurement changes the id
    seeded = small_sweep(tmp_path)
    seeded["sweep"]["seeds"] = [1]
    assert not set(ids) & {s.run_id for s in expand(SweepFile.model_validate(seeded))}


def test_grid_seeds_and_repeats_multiply_and_protocol_keys_stay_in_their_protocol(tmp_path: Path) -> None:
    tree = small_sweep(
        tmp_path,
        grid={"run.data.seed": [0, 1], "robustness.missing_mode": ["zero", "none"]},
    )
    tree["sweep"]["repeats"] = 2
    specs = expand(SweepFile.model_validate(tree))
    # per adapter: online 2 data seeds x 2 repeats; robustness 3 points x 2 x 2 modes x 2 repeats
    assert len(specs) == 2 * (2 * 2 + 3 * 2 * 2 * 2)
    assert len({s.run_id for s in specs}) == len(specs)
    online = [s for s in specs if s.protocol == "online"]
    assert all("robustness.missing_mode" not in s.grid for s in online)
    modes = {
        s.protocol_config["missing_mode"] for s in specs if s.protocol_config and s.protocol == "robustness"
    }
    assert modes == {"zero", "none"}
    assert {s.run.data.seed for s in online} == {0, 1}  # type: ignore[union-attr]
    assert {s.repeat for s in specs} == {0, 1}


# --- progress -------------------------------------------------------------------------------------------


def test_progress_counts_and_estimates_the_time_left_from_the_throughput() -> None:
    now = [100.0]
    seen: list[str] = []
    progress = SweepProgress(10, skipped=2, listener=lambda snap, msg: seen.append(msg), clock=lambda: now[0])
    assert progress.snapshot().eta_s is None
    progress.started("a")
    progress.started("b")
    now[0] = 104.0
    progress.finished("a", ok=True)
    snap = progress.snapshot()
    assert (snap.done, snap.skipped, snap.running, snap.failed, snap.remaining) == (3, 2, 1, 0, 6)
    assert snap.eta_s == pytest.approx(7 * 4.0)  # 6 remaining + 1 running, one run ended per 4 s
    progress.retrying("b", "boom")
    progress.started("b", 2)
    now[0] = 110.0
    progress.finished("b", ok=False)
    snap = progress.snapshot()
    assert (snap.done, snap.running, snap.failed, snap.remaining) == (3, 0, 1, 6)
    assert snap.eta_s == pytest.approx(6 * 10.0 / 2)
    assert seen == [
        "started a",
        "started b",
        "done a",
        "retrying b: boom",
        "started b (attempt 2)",
        "FAILED b",
    ]


def test_pinned_cores_hands_out_distinct_cores_and_restores_the_affinity() -> None:
    before = os.sched_getaffinity(0)
    if len(before) < 2:
        pytest.skip("needs two cores")
    with pinned_cores(1) as first:
        assert first is not None and os.sched_getaffinity(0) == set(first)
        with pinned_cores(1, among=sorted(before)) as second:
            assert second is not None and set(second).isdisjoint(first)
    assert os.sched_getaffinity(0) == before


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


def test_cli_names_the_file_of_a_bad_sweep(tmp_path: Path) -> None:
    path = _write_toml(tmp_path / "bad.toml", "[[adapters]]\nadapter = 'null'\n[protocols.offline]\n")
    result = CliRunner().invoke(app, ["sweep", str(path)])
    assert result.exit_code == 2
    assert "bad.toml" in result.output and "protocols.offline" in result.output
    good = _write_toml(tmp_path / "good.toml", "[[adapters]]\nadapter = 'null'\n[protocols.online]\n")
    wrong = CliRunner().invoke(app, ["sweep", str(good), "--executor", "slurm"])
    assert wrong.exit_code == 2 and "--executor 'slurm': expected local or ray" in wrong.output


def test_a_misspelt_adapter_or_option_fails_before_anything_runs(tmp_path: Path) -> None:
    bogus = [{"adapter": "reference"}, {"adapter": "null", "options": {"bogus": 1}}]
    tree = small_sweep(tmp_path / "results", adapters=bogus)
    with pytest.raises(SweepError, match=r"adapter 'null': unknown option\(s\) \['bogus'\]"):
        expand(SweepFile.model_validate(tree))
    tree = small_sweep(tmp_path / "results", adapters=[{"adapter": "reference"}, {"adapter": "refrence"}])
    with pytest.raises(SweepError, match="Did you mean 'reference'"):
        expand(SweepFile.model_validate(tree))


def test_cli_sweep_runs_each_run_in_its_own_process_so_a_crash_costs_that_run_only(tmp_path: Path) -> None:
    """Issue 18: an adapter that ends its process (``os._exit``) in a plain (in-process) run: by default
    the sweep loses that run only; the runs after it are attempted and stored, the failure is reported."""
    import signal
    import subprocess
    import sys

    results = tmp_path / "results"
    exiting = {"adapter": "faulty", "label": "exits", "options": {"fault": "exit", "at_frame": 3}}
    tree = small_sweep(
        results,
        adapters=[
            exiting,
            {"adapter": "null", "label": "after-1"},
            {"adapter": "reference", "label": "after-2"},
        ],
        protocols={"online": {}},
    )
    tree["sweep"].update(baseline=None, retries=0)
    # a plain run is an in-process one since issue 24 (a sealed worker's death would not end the sweep's)
    tree["run"] = {**tree["run"], "isolate": False}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(tree))
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from streambench.harness.cli import main; main()",
            "sweep",
            str(path),
            "--no-progress",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(root)},
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1, (out, err)
    assert "3 runs, 0 already in the store, 2 run now, 1 failed" in " ".join(out.split())
    assert "worker process lost" in err
    runs = {h.adapter for h in list_runs(results)}
    assert runs == {"null", "reference"}


def test_an_adapter_error_crosses_the_sweeps_process_pool_as_itself() -> None:
    """A sealed run that fails in an isolated sweep worker raises an AdapterError there (the adapter's
    own worker died, say); unpicklable, it reached the driver as a broken pool ("worker process lost")."""
    import pickle

    from streambench.harness.execution.adapter_errors import AdapterCrashError, AdapterTimeoutError

    crash = AdapterCrashError("faulty", "syn-warmup", 3, "the worker process died", 13, None)
    timeout = AdapterTimeoutError("faulty", "syn-0001", 7, "no answer", "stream", 2.5)
    for error in (crash, timeout):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error) and vars(again) == vars(error)


def _run_row(label: str, repeat: int, mean_ms: float | None, f1: float, status: str = "done") -> Any:
    from streambench.harness.sweep.report import RunRow

    done = status == "done"
    return RunRow(
        run_id=f"{label}-{repeat}",
        label=label,
        protocol="online",
        config="",
        seed=0,
        repeat=repeat,
        setting=f"seed=0 repeat={repeat}",
        status=status,
        fingerprint="fp" if done else None,
        quality={"f1@0ms": f1, "f1@100ms": f1} if done else {},
        timings={"mean": mean_ms, "fps": None if mean_ms is None else 1e3 / mean_ms} if done else {},
    )


def test_repeats_are_one_configuration_with_median_and_range(tmp_path: Path) -> None:
    """Issue 17: three repeats of one model are one configuration (median, range over the runs), so the
    fastest repeat never "dominates" the others; a failed repeat is counted, not averaged in."""
    from streambench.harness.sweep.report import SweepReport
    from streambench.harness.sweep.report_html import pareto_points

    rows = [
        _run_row("ref", 0, 0.0428, 0.7642),
        _run_row("ref", 1, 0.0316, 0.7642),
        _run_row("ref", 2, 0.0324, 0.7642),
        _run_row("null model", 0, 7.6e-5, 0.0),
        _run_row("null model", 1, None, 0.0, status="failed"),
    ]
    report = SweepReport(name="agg", baseline=None, rows=rows)
    ref, null = report.configurations()
    assert (ref.planned, ref.done, ref.failed, ref.repeats) == (3, 3, 0, 3)
    assert (null.planned, null.done, null.failed) == (2, 1, 1)
    f1 = ref.figures["f1@0ms"]
    assert f1 is not None and f1.median == 0.7642 and not f1.varies and f1.n == 3
    timed_ref, timed_null = report.timings("fp")
    assert timed_null.done == 1  # the failed repeat has no timings to aggregate
    mean = timed_ref.figures["mean"]
    assert mean is not None and (mean.median, mean.low, mean.high) == (0.0324, 0.0316, 0.0428)
    points, key = pareto_points(report, report.timings("fp"))
    assert key == "f1@100ms" and [p.label for p in points] == ["ref", "null model"]
    assert points[0].cost == 0.0324 and points[0].cost_range == (0.0316, 0.0428)
    markdown = sweep_markdown(report)
    assert "| ref | — | 3 of 3 | 32.4 µs (range 31.6–42.8 µs over 3 runs) |" in markdown
    assert "| null model | — | 2 of 2, 1 failed |" not in markdown  # timings count finished runs only
    assert "| null model | — | 1 of 2, 1 failed | 0.00 % | 0.00 % |" in markdown
    assert "| ref | — | 3 of 3 | 76.42 % (the 3 runs agree) |" in markdown  # a share in percent, as the CLI
    assert "30,860 fps (range 23,360–31,650 fps over 3 runs)" in markdown
    assert "13,160,000 fps" in markdown and "e+0" not in markdown  # FPS for humans, no exponent
    page = write_sweep_html(report, tmp_path / "agg.html", tmp_path)[0].read_text()
    assert page.count('<svg class="plot"') == 1  # the Pareto plot; no run directory here, no CDF
    assert "30,860 fps" in page and "range 23,360–31,650 fps over 3 runs" in page


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
