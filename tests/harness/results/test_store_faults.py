"""Issue 25, items 12, 13, 14 and 16: faults of the run store, each with the exit code and the message it
gives, and nothing measured lost.

* a garbled or truncated ``index.sqlite``: ``runs`` and ``show`` move it aside, say so, and rebuild it
  from the run directories (the truth); on a read-only or full store they read the directories;
  ``reindex`` there fails clearly and leaves the index as it was;
* run ids the store uses (``index.sqlite`` and its sidecars, hidden names) or that start with ``-`` are
  refused before anything is written;
* a bad ``--baseline`` is refused before any stream is measured; a baseline that cannot be read once the
  streams are measured costs the normalisation (null, with the error), never the run;
* a run directory that is a symbolic link out of the store is refused; a directory named like the index
  gives a clear error, not a traceback; result JSON is strict (no ``Infinity``).

Runs are in process and small: the store is tested, not the worker.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError
from typer.testing import CliRunner, Result

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.results import store
from streambench.harness.results.files import ARRAYS_FILE, RESULT_FILE, load_result, write_protocol_result
from streambench.harness.runs import catalog
from streambench.harness.runs.session import execute_run
from streambench.protocols.causality import CheckResult

OLD, NEW = "20260101-000000-null-aaaaaa", "20260101-000100-reference-bbbbbb"
CONNECT = sqlite3.connect  # the real one: the faults below replace it
SMALL = ["--in-process", "--streams", "2", "--duration", "1", "--warmup-frames", "0"]
QUIET = ["--no-progress", "--no-report"]


def small_config(results: Path, run_id: str, **fields: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "data": {"num_streams": 2, "duration_s": 1.0, "seed": 0},
            "engine": {"warmup_frames": 0},
            "output_dir": results,
            "run_id": run_id,
            "isolate": False,
            **fields,
        }
    )


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs written by the runner; tests copy this directory before changing it."""
    root = tmp_path_factory.mktemp("faults") / "results"
    execute_run(small_config(root, OLD, adapter="null"))
    execute_run(small_config(root, NEW, adapter="reference"))
    return root


@pytest.fixture
def copy(results: Path, tmp_path: Path) -> Path:
    target = tmp_path / "results"
    shutil.copytree(results, target, ignore=shutil.ignore_patterns("index.sqlite*"))
    return target


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def said(res: Result) -> str:
    """Everything the command printed, on one line (rich folds long lines)."""
    return " ".join((res.stdout + res.stderr).split())


def listed(res: Result) -> list[str]:
    assert res.exit_code == 0, res.output
    return [row["run"] for row in json.loads(res.stdout)]


def files_of(results: Path) -> dict[str, bytes]:
    """Every file under ``results`` but the index, with its content: what a fault must not lose."""
    return {
        str(p.relative_to(results)): p.read_bytes()
        for p in sorted(results.rglob("*"))
        if p.is_file() and not p.name.startswith(store.DB_FILE)
    }


def index_rows(results: Path) -> list[tuple[str, str]]:
    """What the index holds (the main file and its write-ahead log alike), read-only."""
    uri = f"file:{store.database_path(results)}?mode=ro"
    with contextlib.closing(CONNECT(uri, uri=True)) as conn:
        return conn.execute("SELECT run, headline FROM runs ORDER BY run").fetchall()


def aside(results: Path) -> list[Path]:
    return sorted(p for p in results.iterdir() if p.name.startswith(f"{store.DB_FILE}.damaged-"))


def garble(results: Path, how: str) -> bytes:
    """Damage the index of ``results`` (built first, every run in it); returns the damaged bytes."""
    catalog.list_runs(results)
    db = store.database_path(results)
    with sqlite3.connect(db) as conn:  # everything into the main file: the damage is all there is
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    if how == "garbled":
        data = db.read_bytes()
        db.write_bytes(data[:100] + b"\xde\xad\xbe\xef" * 256 + data[100 + 1024 :])
    else:  # truncated: half of it, mid-page
        with db.open("r+b") as handle:
            handle.truncate(db.stat().st_size // 2 + 123)
    return db.read_bytes()


# -- item 12: a damaged index ---------------------------------------------------------------------------


@pytest.mark.processes
@pytest.mark.parametrize("how", ["garbled", "truncated", "not-a-database"])
def test_runs_moves_a_damaged_index_aside_and_rebuilds_it(copy: Path, how: str) -> None:
    if how == "not-a-database":
        store.database_path(copy).write_bytes(b"not a database" * 100)
        damaged = store.database_path(copy).read_bytes()
    else:
        damaged = garble(copy, how)
    before = files_of(copy)
    res = invoke("runs", "--results-dir", str(copy), "--json")
    assert listed(res) == [NEW, OLD]  # every run, newest first, read from the directories
    (moved,) = aside(copy)
    assert moved.read_bytes() == damaged  # kept as it was, for whoever wants to look at it
    text = " ".join(res.stderr.split())
    assert f"{store.database_path(copy)}: damaged" in text and f"moved aside to {moved}" in text
    assert "rebuilt from the run directories" in text
    with sqlite3.connect(store.database_path(copy)) as conn:  # a new, whole index
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert sorted(r[0] for r in conn.execute("SELECT run FROM runs")) == [OLD, NEW]
    assert files_of(copy) == before  # no run directory touched
    again = invoke("runs", "--results-dir", str(copy), "--json")  # and now it is just an index
    assert listed(again) == [NEW, OLD] and again.stderr == "" and len(aside(copy)) == 1


@pytest.mark.processes
def test_show_moves_a_damaged_index_aside_and_shows_the_run(copy: Path) -> None:
    damaged = garble(copy, "garbled")
    res = invoke("show", NEW, "--results-dir", str(copy), "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["run_id"] == NEW
    (moved,) = aside(copy)
    assert moved.read_bytes() == damaged and "moved aside" in res.stderr
    assert [h.run for h in catalog.list_runs(copy, sync=False)] == [NEW, OLD]


def test_reindex_moves_a_damaged_index_aside(copy: Path) -> None:
    damaged = garble(copy, "garbled")
    res = invoke("reindex", "--results-dir", str(copy))
    assert res.exit_code == 0 and "indexed 2 run(s)" in said(res), res.output
    (moved,) = aside(copy)
    assert moved.read_bytes() == damaged and f"moved aside to {moved}" in said(res)


# -- items 12 and 16: a read-only or full store -----------------------------------------------------------


def _read_only(real: Callable[..., sqlite3.Connection]) -> Callable[..., sqlite3.Connection]:
    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real(f"file:{database}?mode=ro", *args, uri=True, **kwargs)

    return connect


def _full(real: Callable[..., sqlite3.Connection]) -> Callable[..., sqlite3.Connection]:
    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real(database, *args, **kwargs)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {max(pages, 1)}")  # SQLITE_FULL on the first new page
        return conn

    return connect


@pytest.fixture(params=["read-only", "full", "read-only-dir"])
def fault(request: pytest.FixtureRequest, copy: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The store of ``copy`` made read-only or full, with its index holding only the older run (so a
    listing would have to write). ``read-only``/``full``: SQLite's own errors, from a read-only
    connection or a page limit (works as root too); ``read-only-dir``: the directories themselves
    (skipped as root, who writes anyway)."""
    catalog.index_run(copy / OLD)
    if request.param == "read-only-dir":
        if os.geteuid() == 0:
            pytest.skip("root writes into a read-only directory")
        modes = {p: p.stat().st_mode for p in [copy, *copy.rglob("*")]}
        for path in modes:
            path.chmod(0o555 if path.is_dir() else 0o444)
        yield request.param
        for path, mode in modes.items():
            path.chmod(mode)
        return
    wrap = _read_only if request.param == "read-only" else _full
    monkeypatch.setattr(sqlite3, "connect", wrap(sqlite3.connect))
    yield request.param


def test_runs_and_show_read_the_directories_of_a_read_only_or_full_store(copy: Path, fault: str) -> None:
    before = files_of(copy)
    index = index_rows(copy)
    assert [run for run, _ in index] == [OLD]
    res = invoke("runs", "--results-dir", str(copy), "--json")
    assert listed(res) == [NEW, OLD]  # the newer run is not in the index: read from its directory
    assert "read from the run directories" in " ".join(res.stderr.split())
    shown = invoke("show", NEW, "--results-dir", str(copy), "--json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["run_id"] == NEW
    table = invoke("runs", "--results-dir", str(copy))
    assert table.exit_code == 0 and NEW in table.stdout and OLD in table.stdout
    assert files_of(copy) == before and index_rows(copy) == index
    assert aside(copy) == []  # a store that cannot be written is not damaged


def test_reindex_of_a_read_only_store_fails_clearly_and_keeps_the_index(copy: Path, fault: str) -> None:
    index = index_rows(copy)
    res = invoke("reindex", "--results-dir", str(copy))
    if fault == "full" and res.exit_code == 0:  # the rebuild fit in the pages it freed: nothing to say
        assert "indexed 2 run(s)" in said(res)
        return
    assert res.exit_code == 2, res.output
    assert str(store.database_path(copy)) in said(res) and "Traceback" not in res.output
    assert "cannot be written" in said(res)
    assert index_rows(copy) == index  # not deleted, not half rebuilt
    assert aside(copy) == []


# -- item 13: run ids the store uses ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "run_id",
    [
        "index.sqlite",
        "index.sqlite-wal",
        "index.sqlite-shm",
        "index.sqlite-journal",
        "Index.SQLite",
        "index.sqlite.damaged-20260101T000000Z",
        ".sweep-staging",
        ".hidden",
        "-x",
        "--json",
    ],
)
def test_a_run_id_the_store_uses_is_refused(tmp_path: Path, run_id: str) -> None:
    results = tmp_path / "results"
    with pytest.raises(ValidationError, match="run_id"):
        RunConfig.model_validate({"run_id": run_id, "output_dir": results})
    res = invoke("run", *SMALL, *QUIET, "--output-dir", str(results), f"--run-id={run_id}")
    assert res.exit_code == 2, res.output
    text = said(res)
    assert "run_id" in text and repr(run_id) in text and "Traceback" not in res.output
    assert not results.exists() or list(results.iterdir()) == []  # nothing written


def test_a_run_id_after_a_space_that_starts_with_a_dash_is_refused(tmp_path: Path) -> None:
    res = invoke("run", *SMALL, *QUIET, "--output-dir", str(tmp_path / "r"), "--run-id", "-x")
    assert res.exit_code == 2 and "starts with '-'" in said(res)
    assert not (tmp_path / "r").exists()


# -- item 14: --baseline ----------------------------------------------------------------------------------


@pytest.mark.parametrize("what", ["missing", "empty", "broken"])
def test_a_bad_baseline_is_refused_before_measuring(tmp_path: Path, what: str) -> None:
    results = tmp_path / "results"
    base = tmp_path / "base"
    if what != "missing":
        base.mkdir()
    if what == "broken":
        (base / RESULT_FILE).write_text('{"schema_version": ')
    res = invoke(
        "run", *SMALL, *QUIET, "--output-dir", str(results), "--run-id", "head", "--baseline", str(base)
    )
    assert res.exit_code == 2, res.output
    assert "--baseline" in said(res) and str(base) in said(res)
    assert not (results / "head").exists()  # refused before the first stream: nothing measured, no run


def test_a_baseline_for_a_protocol_that_ignores_it_is_refused(copy: Path) -> None:
    res = invoke(
        "run",
        *SMALL,
        *QUIET,
        "--protocol",
        "robustness",
        "--output-dir",
        str(copy),
        "--baseline",
        str(copy / OLD),
    )
    assert res.exit_code == 2 and "--baseline do not apply to --protocol robustness" in said(res)
    assert sorted(p.name for p in copy.iterdir() if p.is_dir()) == [OLD, NEW]  # nothing run


@pytest.mark.processes
def test_a_baseline_gone_after_measuring_costs_the_normalisation_not_the_run(
    copy: Path, tmp_path: Path
) -> None:
    base = tmp_path / "base"
    shutil.copytree(copy / OLD, base)
    head = copy / "head"
    execute_run(small_config(copy, "head", baseline=base))
    # what the streams left when the baseline failed at the end (issue 25 item 14): every stream in the
    # event log, no result; and the baseline is gone now
    (head / RESULT_FILE).unlink()
    (head / ARRAYS_FILE).unlink()
    catalog.reindex(copy)
    shutil.rmtree(base)
    res = invoke("run", "--resume", str(head), *QUIET)
    assert res.exit_code == 2, res.output
    text = said(res)
    assert f"--baseline {base}" in text and "could not be read" in text
    assert f"The run is written: {head / RESULT_FILE}" in text
    result = load_result(head)  # written: measured once, scored, kept
    assert result.status == "complete" and result.normalisation is not None
    assert result.normalisation.speedup is None and str(base) in (result.normalisation.error or "")
    assert "head" in listed(invoke("runs", "--results-dir", str(copy), "--json"))  # and indexed
    again = invoke("run", "--resume", str(head), *QUIET)  # nothing to resume; the record says why
    assert again.exit_code == 2 and "nothing to resume" in said(again)
    assert load_result(head) == result


# -- item 16: symbolic links, a directory named like the index, strict JSON --------------------------------


def test_a_run_directory_that_is_a_symlink_out_of_the_store_is_refused(tmp_path: Path) -> None:
    results, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    results.mkdir()
    (elsewhere / "target").mkdir(parents=True)
    (results / "link").symlink_to(elsewhere / "target")
    (results / "dangling").symlink_to(elsewhere / "nothing")
    for run_id, protocol in (("link", "online"), ("dangling", "online"), ("link", "robustness")):
        res = invoke(
            "run", *SMALL, *QUIET, "--output-dir", str(results), "--run-id", run_id, "--protocol", protocol
        )
        assert res.exit_code == 2, res.output
        assert f"{results / run_id}: the run directory is a symbolic link" in said(res)
    assert list((elsewhere / "target").iterdir()) == [] and not (elsewhere / "nothing").exists()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["target"]  # no index.sqlite beside it
    assert sorted(p.name for p in results.iterdir()) == ["dangling", "link"]


def test_indexing_a_symlinked_run_writes_the_store_index_only(copy: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(copy / OLD, elsewhere / "kept")
    (copy / "linked").symlink_to(elsewhere / "kept")
    catalog.index_run(copy / "linked")
    assert not (elsewhere / store.DB_FILE).exists()
    assert "linked" in [h.run for h in catalog.list_runs(copy, sync=False)]


def test_a_directory_named_like_the_index(copy: Path) -> None:
    shutil.copytree(copy / OLD, copy / store.DB_FILE)  # a run written as --run-id index.sqlite before
    res = invoke("reindex", "--results-dir", str(copy))
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert f"{store.database_path(copy)}: a directory, not the run index" in said(res)
    runs = invoke("runs", "--results-dir", str(copy), "--json")
    assert set(listed(runs)) == {NEW, OLD, store.DB_FILE}  # read from the directories, said on stderr
    assert "read from the run directories" in " ".join(runs.stderr.split())
    shown = invoke("show", NEW, "--results-dir", str(copy), "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout)["run_id"] == NEW


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_a_non_finite_check_figure_is_written_as_null_and_read_back() -> None:
    check = CheckResult(
        name="occlusion", passed=False, max_difference=math.inf, detail="a prediction missing"
    )
    document = _strict(check.model_dump_json())
    assert document["max_difference"] is None
    assert CheckResult.model_validate_json(check.model_dump_json()) == check
    assert CheckResult.model_validate_json('{"name": "x", "passed": false, "max_difference": Infinity}') == (
        CheckResult(name="x", passed=False, max_difference=math.inf)  # older files read as they were
    )


class _Loose(BaseModel):
    model_config = ConfigDict(ser_json_inf_nan="constants")

    run_id: str
    figures: dict[str, float]


def test_result_files_are_strict_json(tmp_path: Path) -> None:
    loose = _Loose(run_id="r", figures={"inf": math.inf, "nan": math.nan, "one": 1.0})
    assert "Infinity" in loose.model_dump_json()  # what the model alone would write
    run_dir = write_protocol_result(tmp_path, "r", "causality.json", loose)
    assert _strict((run_dir / "causality.json").read_text()) == {
        "run_id": "r",
        "figures": {"inf": None, "nan": None, "one": 1.0},
    }
