"""``show``'s view of the run store (harness/runs/listing.py): a run whose index row is fresh is shown from
the row, as its directory would give it, without reading the directory; a row the directory has moved on
from (a result file written after it, a result file added or gone, a garbled row) is not trusted: the
directory is read and the row written again."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from streambench.harness.results import store
from streambench.harness.results.headline import RunHeadline
from streambench.harness.results.store import StoreError
from streambench.harness.runs import catalog, listing, registry
from tests.support import quick_run

RUN = "20260101-000000-null-aaaaaa"
from_directory = catalog.load_headline
"""What ``show`` printed before it read the index: the directory's headline."""


@pytest.fixture
def results(tmp_path: Path) -> Path:
    quick_run(tmp_path / "results", RUN)
    return tmp_path / "results"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The run directories ``find_run`` reads (catalog.load_headline, still called through)."""
    read: list[Path] = []

    def counting(run_dir: Path) -> RunHeadline:
        read.append(run_dir)
        return from_directory(run_dir)

    monkeypatch.setattr(catalog, "load_headline", counting)
    return read


@pytest.mark.processes
def test_a_fresh_row_is_shown_as_the_directory_would_give_it_without_reading_it(
    results: Path, reads: list[Path]
) -> None:
    head, notes = listing.find_run(RUN, results)
    assert reads == [] and notes == []
    assert head == from_directory(results / RUN)
    assert head.figure("p95") is not None and head.figure("p95").value is not None  # type: ignore[union-attr]


@pytest.mark.processes
def test_a_result_file_written_after_the_row_is_read_from_the_directory_and_indexed_again(
    results: Path, reads: list[Path]
) -> None:
    result = results / RUN / "result.json"
    later = result.stat().st_mtime + 5.0
    os.utime(result, (later, later))  # rewritten by hand after it was indexed
    head, _ = listing.find_run(RUN, results)
    assert reads == [results / RUN]
    assert head == from_directory(results / RUN)
    os.utime(result, (later - 10.0, later - 10.0))  # the row written again is fresh: no second read
    listing.find_run(RUN, results)
    assert reads == [results / RUN]


@pytest.mark.processes
def test_a_result_file_added_or_gone_is_read_from_the_directory(results: Path, reads: list[Path]) -> None:
    (results / RUN / "causality.json").write_text("{}")  # a protocol the row does not know joined
    with pytest.raises(StoreError, match=r"causality\.json"):  # read from the directory: it is no result
        listing.find_run(RUN, results)
    assert reads == [results / RUN]
    (results / RUN / "causality.json").unlink()
    (results / RUN / "result.json").rename(results / RUN / "result.json.bak")
    (results / RUN / "robustness.json").write_text("{}")  # the row's own file is gone
    with pytest.raises(StoreError, match=r"robustness\.json"):
        listing.find_run(RUN, results)
    assert reads == [results / RUN] * 2


@pytest.mark.processes
def test_a_garbled_row_is_not_trusted(results: Path, reads: list[Path]) -> None:
    with sqlite3.connect(store.database_path(results)) as conn:
        conn.execute("UPDATE runs SET headline = '{\"run\": 1}' WHERE run = ?", (RUN,))
    head, _ = listing.find_run(RUN, results)
    assert reads == [results / RUN] and head == from_directory(results / RUN)
    with sqlite3.connect(store.database_path(results)) as conn:
        conn.execute("UPDATE runs SET indexed_at = 'yesterday' WHERE run = ?", (RUN,))
    listing.find_run(RUN, results)
    assert reads == [results / RUN] * 2


@pytest.mark.processes
def test_a_run_outside_the_store_is_read_from_its_directory(results: Path, reads: list[Path]) -> None:
    head, notes = listing.find_run(str(results / RUN), results.parent)
    assert reads == [results / RUN] and notes == [] and head.run == RUN


@pytest.mark.processes
def test_listing_reads_the_plug_ins_once_whatever_the_number_of_runs(
    results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed plug-ins' entry points (a scan of every distribution's metadata, ~10 ms) are read a
    fixed number of times per listing, not once per run directory (150 runs took 1.5 s to list)."""
    reads = []
    scan = registry._plugins
    monkeypatch.setattr(registry, "_plugins", lambda: reads.append(1) or scan())
    listing.survey_runs(results)
    one = len(reads)
    for k in range(4):
        shutil.copytree(results / RUN, results / f"{RUN}-{k}")
    assert len(listing.survey_runs(results).heads) == 5  # the copies indexed on the way
    reads.clear()
    assert len(listing.survey_runs(results).heads) == 5
    assert len(reads) == one
