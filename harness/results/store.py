"""The run store: an embedded SQLite index of the run directories under ``results/`` (DESIGN.md "Results").

The directories are the truth (``result.json``, ``robustness.json``, ``causality.json``, ``arrays.npz``);
the database ``<results>/index.sqlite`` is a cache of their headlines
(:mod:`streambench.harness.results.headline`) that ``streambench reindex`` rebuilds from them at any time.
This module knows the database only: what a run directory holds is read by
:mod:`streambench.harness.runs.catalog`, which calls it. Concurrency follows SQLite's own rules
(https://www.sqlite.org/wal.html): write-ahead logging, so readers never block the writer; a busy timeout, so
two runs finishing at once wait for each other instead of failing; and short ``BEGIN IMMEDIATE`` transactions,
with the result files read before the transaction opens.

Schema version :data:`SCHEMA_VERSION` is kept in ``PRAGMA user_version``: an older index is dropped and
rebuilt from the directories; a newer one is refused until ``streambench reindex``.

An index that cannot be used raises :class:`IndexUnusable`, which says whether it is damaged (SQLite finds
no whole database there: garbled, truncated) or only cannot be written or read (a read-only or full
store, a directory where the index belongs, a newer schema). A damaged index is never deleted: it is
moved aside (:func:`move_aside`, ``index.sqlite.damaged-<UTC time>``) and rebuilt; the read-only
commands read the run directories when the index cannot be written.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field, ValidationError

from streambench.harness.io.store_layout import DAMAGED_SUFFIX, DB_FILE, DB_SIDECARS
from streambench.harness.results.headline import RunHeadline

__all__ = [
    "DB_FILE",
    "SCHEMA_VERSION",
    "IndexUnusable",
    "ReindexReport",
    "StoreError",
    "close_matches",
    "database_path",
    "indexed",
    "indexed_run",
    "move_aside",
    "rebuild",
    "sync",
    "upsert",
]

SCHEMA_VERSION = 2
"""2: shares (F1, accuracy, EER) carry the unit ``%`` (1 stored them with no unit)."""
BUSY_TIMEOUT_S = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run         TEXT PRIMARY KEY,      -- the run directory's name, under the directory holding the index
    run_id      TEXT NOT NULL,
    protocols   TEXT NOT NULL,         -- '+'-joined: online, robustness, causality
    adapter     TEXT NOT NULL,
    created_at  TEXT NOT NULL,         -- ISO 8601, UTC
    fingerprint TEXT,                  -- environment fingerprint, NULL when the result records none
    headline    TEXT NOT NULL,         -- streambench.harness.headline.RunHeadline as JSON
    indexed_at  TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_created_at ON runs (created_at);
CREATE TABLE IF NOT EXISTS figures (
    run    TEXT NOT NULL REFERENCES runs (run) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  REAL,
    low    REAL,
    high   REAL,
    unit   TEXT NOT NULL,
    reason TEXT,
    PRIMARY KEY (run, key)
);
"""

T = TypeVar("T")


class StoreError(ValueError):
    """The index or a run reference could not be used; the message names the file or the reference."""


class IndexUnusable(StoreError):
    """The index file cannot be used. ``damaged``: SQLite finds no whole database in it (move it aside
    and rebuild it); otherwise it cannot be written or read as it stands (a read-only or full store, a
    directory in its place, a newer schema): the run directories, the truth, are still there. ``reason``:
    what was wrong in a few words (SQLite's message), without the path."""

    def __init__(self, message: str, damaged: bool, reason: str = "") -> None:
        super().__init__(message)
        self.damaged = damaged
        self.reason = reason or message


_DAMAGE = {11: "SQLITE_CORRUPT", 26: "SQLITE_NOTADB"}
_CANNOT_WRITE = {
    3: "SQLITE_PERM",
    8: "SQLITE_READONLY",
    10: "SQLITE_IOERR",  # a full disk where SQLite grows its shared-memory file
    13: "SQLITE_FULL",
    14: "SQLITE_CANTOPEN",
}
_CODE_OF_TEXT = {
    "database disk image is malformed": 11,
    "file is not a database": 26,
    "attempt to write a readonly database": 8,
    "database or disk is full": 13,
    "unable to open database file": 14,
    "disk I/O error": 10,
}


def _unusable(path: Path, exc: sqlite3.Error) -> IndexUnusable:
    """The error of an index SQLite could not use, by SQLite's primary result code."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11; before it, SQLite's own words
    primary = code & 0xFF if isinstance(code, int) else _CODE_OF_TEXT.get(str(exc))
    if primary in _DAMAGE:
        return IndexUnusable(
            f"{path}: the run index cannot be used ({exc}): it is damaged; `streambench reindex` moves it "
            "aside and rebuilds it from the run directories",
            damaged=True,
            reason=str(exc),
        )
    if primary in _CANNOT_WRITE:
        return IndexUnusable(
            f"{path}: the run index cannot be written ({exc}): the results directory is read-only, or its "
            "disk full or failing; the run directories are untouched",
            damaged=False,
            reason=str(exc),
        )
    return IndexUnusable(
        f"{path}: the run index cannot be used ({exc}); `streambench reindex` rebuilds it",
        damaged=False,
        reason=str(exc),
    )


class ReindexReport(BaseModel):
    indexed: list[str]
    skipped: dict[str, str] = Field(description="run directory -> why it was not indexed")
    moved_aside: str | None = Field(None, description="where the damaged index found was moved; None: none")


def database_path(results_dir: Path) -> Path:
    return results_dir / DB_FILE


def _retry(action: Callable[[], T]) -> T:
    """Retry on SQLITE_BUSY: switching to WAL takes a lock that the busy handler does not always wait for."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    _retry(lambda: conn.execute("BEGIN IMMEDIATE"))
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _create(conn: sqlite3.Connection, drop: bool) -> None:
    if drop:
        conn.execute("DROP TABLE IF EXISTS figures")
        conn.execute("DROP TABLE IF EXISTS runs")
    for statement in _SCHEMA.split(";\n"):  # no ';' inside a statement: sqlite3 runs one at a time
        if statement.strip():
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


@contextlib.contextmanager
def _connect(results_dir: Path, rebuild: bool = False) -> Iterator[sqlite3.Connection]:
    """An autocommit connection to the index, its schema created or migrated (dropped and re-created);
    with ``rebuild``, any schema version is taken and the caller re-creates it (:func:`_rebuild`)."""
    if not results_dir.is_dir():
        raise StoreError(f"{results_dir}: no such results directory")
    path = database_path(results_dir)
    if path.exists() and not path.is_file():  # e.g. a run written as --run-id index.sqlite before
        what = "a directory" if path.is_dir() else "not a regular file"
        raise IndexUnusable(
            f"{path}: {what}, not the run index (a run directory named like it?); move it out of the "
            "results directory, then `streambench reindex`",
            damaged=False,
        )
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise _unusable(path, exc) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = _retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        if str(mode).lower() != "wal":
            raise IndexUnusable(
                f"{path}: SQLite refused write-ahead logging (journal_mode is {mode})", damaged=False
            )
        with _transaction(conn):
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION and not rebuild:
                raise IndexUnusable(
                    f"{path}: index schema version {version} is newer than this streambench's "
                    f"({SCHEMA_VERSION}); run `streambench reindex` to rebuild it from the run directories",
                    damaged=False,
                )
            if not rebuild and version != SCHEMA_VERSION:
                _create(conn, drop=True)
        yield conn
    except sqlite3.DatabaseError as exc:  # raised in the caller's block too: a full disk, a damaged page
        raise _unusable(path, exc) from None
    finally:
        conn.close()


def _write(conn: sqlite3.Connection, head: RunHeadline) -> None:
    now = datetime.now(timezone.utc).isoformat()
    conn.execute("DELETE FROM figures WHERE run = ?", (head.run,))
    conn.execute(
        "INSERT OR REPLACE INTO runs (run, run_id, protocols, adapter, created_at, fingerprint, headline, "
        "indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            head.run,
            head.run_id,
            "+".join(head.protocols),
            head.adapter,
            head.created_at.isoformat(),
            head.fingerprint,
            head.model_dump_json(),
            now,
        ),
    )
    conn.executemany(
        "INSERT INTO figures (run, key, value, low, high, unit, reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(head.run, f.key, f.value, f.low, f.high, f.unit, f.reason) for f in head.figures],
    )


def upsert(results_dir: Path, head: RunHeadline) -> None:
    """Insert or replace one run's headline (read before the call, so the transaction stays short)."""
    with _connect(results_dir) as conn, _transaction(conn):
        _write(conn, head)


def _rebuild(results_dir: Path, heads: Sequence[RunHeadline]) -> None:
    with _connect(results_dir, rebuild=True) as conn, _transaction(conn):
        _create(conn, drop=True)  # dropped and refilled in one transaction: all of it, or none (a full disk)
        for head in heads:
            _write(conn, head)


def rebuild(results_dir: Path, heads: Sequence[RunHeadline]) -> Path | None:
    """Drop the index and insert ``heads``. A damaged index (no whole database any more) is moved aside
    first (:func:`move_aside`) and the new one built in its place; returns where it went (None: nothing
    was moved). An index that cannot be written (read-only, full) raises :class:`IndexUnusable` and
    stays as it was: the transaction is rolled back."""
    try:
        _rebuild(results_dir, heads)
        return None
    except IndexUnusable as exc:
        if not exc.damaged:
            raise
    moved = move_aside(results_dir)
    _rebuild(results_dir, heads)
    return moved


def move_aside(results_dir: Path) -> Path | None:
    """Rename a damaged index to ``index.sqlite.damaged-<UTC time>`` (its sidecars with it: a stale
    write-ahead log must never be applied to the new index); returns the new name, None when another
    process moved it first. An OSError (a read-only directory) is the caller's."""
    path = database_path(results_dir)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    target = path.with_name(f"{DB_FILE}{DAMAGED_SUFFIX}{stamp}")
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    for suffix in DB_SIDECARS:
        with contextlib.suppress(FileNotFoundError):
            os.rename(f"{path}{suffix}", f"{target}{suffix}")
    return target


def _rows(conn: sqlite3.Connection, path: Path) -> list[RunHeadline]:
    rows = conn.execute("SELECT headline FROM runs ORDER BY created_at DESC, run DESC").fetchall()
    try:
        return [RunHeadline.model_validate_json(row[0]) for row in rows]
    except ValidationError as exc:  # a row SQLite reads but that is no headline: garbled in place
        first = str(exc).splitlines()[0]
        raise IndexUnusable(
            f"{path}: the run index cannot be used (a row is no run headline: {first}): it is damaged",
            damaged=True,
            reason=f"a row is no run headline: {first}",
        ) from None


def indexed(results_dir: Path) -> list[RunHeadline]:
    """Every indexed run, newest first, as the index has it (no directory is read)."""
    with _connect(results_dir) as conn:
        return _rows(conn, database_path(results_dir))


def indexed_run(results_dir: Path, run: str) -> tuple[RunHeadline, datetime] | None:
    """One run's headline as the index has it and when it was indexed (UTC); None when the index has no
    readable row for it (no directory is read)."""
    with _connect(results_dir) as conn:
        row = conn.execute("SELECT headline, indexed_at FROM runs WHERE run = ?", (run,)).fetchone()
    if row is None:
        return None
    try:
        return RunHeadline.model_validate_json(row[0]), datetime.fromisoformat(row[1])
    except (ValueError, TypeError):  # a garbled row (ValidationError is a ValueError): read the directory
        return None


def sync(
    results_dir: Path, present: Mapping[str, Path], load: Callable[[Path], RunHeadline]
) -> tuple[list[RunHeadline], dict[str, str]]:
    """Every indexed run, newest first, after indexing the directories of ``present`` (name -> run
    directory) not indexed yet with ``load``; also the ones ``load`` could not read, with the reason."""
    unreadable: dict[str, str] = {}
    with _connect(results_dir) as conn:
        known = {row[0] for row in conn.execute("SELECT run FROM runs")}
        new = sorted(set(present) - known)
        if new:  # the result files' models are imported only to read a run's files (CLI start-up)
            from streambench.harness.results.files import ResultFileError
        for name in new:
            try:
                head = load(present[name])
            except ResultFileError as exc:
                unreadable[name] = str(exc).splitlines()[0]
                continue
            with _transaction(conn):
                _write(conn, head)
        return _rows(conn, database_path(results_dir)), unreadable


def close_matches(ref: str, names: Sequence[str]) -> list[str]:
    """Up to three names nearest to ``ref`` (difflib's ratio >= 0.6); run ids share their date, so only
    names within 0.05 of the best ratio are offered."""
    scored = sorted(((difflib.SequenceMatcher(None, ref, n).ratio(), n) for n in names), reverse=True)
    if not scored or scored[0][0] < 0.6:
        return []
    return [n for ratio, n in scored[:3] if ratio >= max(0.6, scored[0][0] - 0.05)]
