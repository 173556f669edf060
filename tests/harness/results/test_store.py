"""The run store (harness/results/store.py): runs are indexed as they are written, the index survives two
processes writing at once (WAL), reindexing rebuilds the same listing, and run references resolve or say why
not."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.results import store
from streambench.harness.results.files import RESULT_FILE, load_recordings, load_result, write_run
from streambench.harness.results.store import StoreError
from streambench.harness.runs import catalog
from streambench.harness.runs.catalog import load_headline
from streambench.harness.runs.session import execute_run


def make_run(results: Path, run_id: str, adapter: str = "null") -> Path:
    config = RunConfig.model_validate(
        {
            "adapter": adapter,
            "data": {"num_streams": 2, "duration_s": 5.0},
            "engine": {"warmup_frames": 0},
            "output_dir": results,
            "run_id": run_id,
        }
    )
    return execute_run(config)[2]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs written by the runner; tests copy this directory before changing it."""
    root = tmp_path_factory.mktemp("store") / "results"
    make_run(root, "20260101-000000-null-aaaaaa")
    make_run(root, "20260101-000100-reference-bbbbbb", adapter="reference")
    return root


@pytest.fixture
def copy(results: Path, tmp_path: Path) -> Path:
    target = tmp_path / "results"
    shutil.copytree(results, target, ignore=shutil.ignore_patterns("index.sqlite*"))
    return target


@pytest.mark.processes
def test_writing_a_run_indexes_it(results: Path) -> None:
    db = store.database_path(results)
    assert db.is_file()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
        rows = conn.execute("SELECT run, adapter, protocols, fingerprint FROM runs ORDER BY run").fetchall()
        p95 = conn.execute(
            "SELECT value FROM figures WHERE run LIKE '%reference%' AND key = 'p95'"
        ).fetchone()
    reference = load_result(results / "20260101-000100-reference-bbbbbb")
    assert rows == [
        ("20260101-000000-null-aaaaaa", "null", "online", reference.fingerprint),
        ("20260101-000100-reference-bbbbbb", "reference", "online", reference.fingerprint),
    ]
    assert p95[0] == reference.metrics.overall.speed.latency.p95_ms
    listed = catalog.list_runs(results, sync=False)
    assert [h.run for h in listed] == ["20260101-000100-reference-bbbbbb", "20260101-000000-null-aaaaaa"]
    assert listed[0] == load_headline(results / "20260101-000100-reference-bbbbbb")


@pytest.mark.processes
def test_an_index_failure_never_loses_the_result(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = results / "20260101-000000-null-aaaaaa"
    result, recordings = load_result(source), load_recordings(source)

    def broken(run_dir: Path) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(catalog, "index_run", broken)
    path = write_run(tmp_path / "out" / "r", result, recordings)  # the writer writes; its caller indexes
    with pytest.warns(RuntimeWarning, match=r"written, but not indexed \(OperationalError: disk I/O error\)"):
        catalog.index_written(path.parent)
    assert path == tmp_path / "out" / "r" / RESULT_FILE and load_result(path) == result


def test_reindex_rebuilds_the_same_listing(copy: Path) -> None:
    before = catalog.list_runs(copy)  # first listing indexes the copied runs (sync)
    assert len(before) == 2
    store.database_path(copy).unlink()
    report = catalog.reindex(copy)
    assert sorted(report.indexed) == sorted(h.run for h in before) and report.skipped == {}
    assert catalog.list_runs(copy, sync=False) == before
    # a damaged index is refused with the cure; reindex rebuilds it
    for suffix in ("", "-wal", "-shm"):
        Path(f"{store.database_path(copy)}{suffix}").unlink(missing_ok=True)
    store.database_path(copy).write_bytes(b"not a database" * 100)
    with pytest.raises(StoreError, match=r"index.sqlite: the run index cannot be used .*streambench reindex"):
        catalog.list_runs(copy)
    catalog.reindex(copy)
    assert catalog.list_runs(copy, sync=False) == before
    # an unreadable run is skipped by name, and the others are indexed
    bad = copy / "20260102-broken"
    bad.mkdir()
    (bad / RESULT_FILE).write_text("{")
    report = catalog.reindex(copy)
    assert (
        list(report.skipped) == ["20260102-broken"] and "not valid JSON" in report.skipped["20260102-broken"]
    )
    assert catalog.list_runs(copy, sync=False) == before


def test_schema_versions(copy: Path) -> None:
    catalog.list_runs(copy)
    with sqlite3.connect(store.database_path(copy)) as conn:
        conn.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match=r"schema version 99 is newer .* run `streambench reindex`"):
        catalog.list_runs(copy)
    catalog.reindex(copy)
    with sqlite3.connect(store.database_path(copy)) as conn:
        conn.execute("PRAGMA user_version = 0")  # an older index: dropped, then refilled from the directories
    assert len(catalog.list_runs(copy)) == 2


def test_listing_follows_the_directories(copy: Path) -> None:
    catalog.list_runs(copy)
    shutil.copytree(copy / "20260101-000000-null-aaaaaa", copy / "20260101-000200-null-cccccc")
    shutil.rmtree(copy / "20260101-000100-reference-bbbbbb")
    names = [h.run for h in catalog.list_runs(copy)]
    # newest first; the copy has the same created_at as its source, so the run name breaks the tie
    assert names == ["20260101-000200-null-cccccc", "20260101-000000-null-aaaaaa"]
    with pytest.raises(StoreError, match="no such results directory"):
        catalog.list_runs(copy / "missing")


@pytest.mark.processes
def test_two_processes_index_at_once(copy: Path) -> None:
    runs = []
    for i in range(12):
        target = copy / f"20260103-{i:06d}-null"
        shutil.copytree(copy / "20260101-000000-null-aaaaaa", target)
        runs.append(target)
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=catalog.index_runs, args=(runs,)),
        context.Process(target=catalog.index_runs, args=(runs[::-1],)),
    ]
    for worker in workers:
        worker.start()
    catalog.reindex(copy)  # and a third writer meanwhile
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    listed = {h.run for h in catalog.list_runs(copy, sync=False)}
    assert listed == {p.name for p in runs} | {
        "20260101-000000-null-aaaaaa",
        "20260101-000100-reference-bbbbbb",
    }
    with sqlite3.connect(store.database_path(copy)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        per_run = len(catalog.load_headline(copy / "20260101-000000-null-aaaaaa").figures)
        assert per_run > 0 and conn.execute("SELECT COUNT(*) FROM figures").fetchone()[0] == 14 * per_run


def test_resolve_run(results: Path, tmp_path: Path) -> None:
    full = results / "20260101-000000-null-aaaaaa"
    assert catalog.resolve_run("20260101-000000-null-aaaaaa", results) == full
    assert catalog.resolve_run("20260101-0000", results) == full  # a unique prefix
    assert catalog.resolve_run(str(full), tmp_path) == full  # a path works from anywhere
    assert catalog.resolve_run(str(full / RESULT_FILE), tmp_path) == full
    with pytest.raises(StoreError, match=r"'20260101' is ambiguous .* 2 runs start with it"):
        catalog.resolve_run("20260101", results)
    with pytest.raises(StoreError, match=r"did you mean '20260101-000100-reference-bbbbbb'\?"):
        catalog.resolve_run("20260101-000100-refrence-bbbbbb", results)
    with pytest.raises(StoreError, match=r"did you mean '20260101-000000-null-aaaaaa'"):
        catalog.resolve_run("null-aaaaaa", results)
    with pytest.raises(StoreError, match=r"holds no result.json"):
        catalog.resolve_run(str(tmp_path), results)
    with pytest.raises(StoreError, match=r"zzz.*does not exist"):
        catalog.resolve_run("zzz", tmp_path / "nowhere")
    broken = results / "20260102-000000-null-cccccc"  # a run id whose result file is gone (or a directory)
    (broken / RESULT_FILE).mkdir(parents=True)
    with pytest.raises(StoreError, match=r"null-cccccc: a directory, but it holds no result.json"):
        catalog.resolve_run("20260102-000000-null-cccccc", results)


def test_cli_runs_show_reindex(copy: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["runs", "--results-dir", str(copy), "--json"])
    assert listed.exit_code == 0, listed.output
    rows = json.loads(listed.output)
    assert [r["run"] for r in rows] == ["20260101-000100-reference-bbbbbb", "20260101-000000-null-aaaaaa"]
    reference = load_result(copy / "20260101-000100-reference-bbbbbb")
    table = runner.invoke(app, ["runs", "--results-dir", str(copy)], env={"COLUMNS": "250"})
    assert table.exit_code == 0
    assert "20260101-000100-reference-bbbbbb" in table.output and reference.fingerprint in table.output
    assert f"F1@100ms {reference.metrics.f1_at(100) * 100:.2f} %" in table.output
    shown = runner.invoke(app, ["show", "20260101-0001", "--results-dir", str(copy), "--json"])
    assert shown.exit_code == 0 and json.loads(shown.output)["run_id"] == "20260101-000100-reference-bbbbbb"
    bad = runner.invoke(app, ["show", "20260101-000100-refrence", "--results-dir", str(copy)])
    assert bad.exit_code == 2
    assert "did you mean '20260101-000100-reference-bbbbbb'?" in " ".join(bad.output.split())
    rebuilt = runner.invoke(app, ["reindex", "--results-dir", str(copy)])
    assert rebuilt.exit_code == 0 and "indexed 2 run(s)" in rebuilt.output


def test_runs_names_unreadable_run_directories(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    broken = tmp_path / "broken-run"
    broken.mkdir()
    (broken / "result.json").write_text('{"schema_version": 3,\n "run_id": ')
    heads, unreadable = catalog.scan_runs(tmp_path)
    assert heads == [] and list(unreadable) == ["broken-run"]
    assert "line 2: not valid JSON" in unreadable["broken-run"]
    res = CliRunner().invoke(app, ["runs", "--results-dir", str(tmp_path)])
    assert res.exit_code == 0 and "unreadable run broken-run" in res.output
    assert "no readable runs in" in res.output
