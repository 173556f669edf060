"""The run store: an embedded SQLite index of the run directories under ``results/`` (DESIGN.md "Results").

The directories are the truth (``result.json``, ``robustness.json``, ``causality.json``, ``arrays.npz``);
the database ``<results>/index.sqlite`` is a cache of their headlines (:mod:`harness.results.headline`) that
``streambench reindex`` rebuilds from them at any time. This module knows the database only: what a
run directory holds is read by :mod:`harness.runs.catalog`, which calls it. Concurrency follows SQLite's own
rules (https://www.sqlite.org/wal.html): write-ahead logging, so readers never block the writer; a busy
timeout, so two runs finishing at once wait for each other instead of failing; and short ``BEGIN IMMEDIATE``
transactions, with the result files read before the transaction opens.

Schema version :data:`SCHEMA_VERSION` is kept in ``PRAGMA user_version``: an older index is dropped and
rebuilt from the directories; a newer one is refused until ``streambench reindex``.
"""

from __future__ import annotations

import contextlib
import difflib
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field

from harness.results.files import ResultFileError
from harness.results.headline import RunHeadline

__all__ = [
    "DB_FILE",
    "SCHEMA_VERSION",
    "ReindexReport",
    "StoreError",
    "close_matches",
    "database_path",
    "indexed",
    "rebuild",
    "sync",
    "upsert",
]

DB_FILE = "index.sqlite"
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
    headline    TEXT NOT NULL,         -- harness.headline.RunHeadline as JSON
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


class ReindexReport(BaseModel):
    indexed: list[str]
    skipped: dict[str, str] = Field(description="run directory -> why it was not indexed")


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
    """An autocommit connection to the index, its schema created or migrated (dropped and re-created)."""
    if not results_dir.is_dir():
        raise StoreError(f"{results_dir}: no such results directory")
    path = database_path(results_dir)
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the run index ({exc})") from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = _retry(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        if str(mode).lower() != "wal":
            raise StoreError(f"{path}: SQLite refused write-ahead logging (journal_mode is {mode})")
        with _transaction(conn):
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION and not rebuild:
                raise StoreError(
                    f"{path}: index schema version {version} is newer than this streambench's "
                    f"({SCHEMA_VERSION}); run `streambench reindex` to rebuild it from the run directories"
                )
            if rebuild or version != SCHEMA_VERSION:
                _create(conn, drop=True)
        yield conn
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"{path}: the run index cannot be used ({exc}); `streambench reindex` rebuilds it"
        ) from None
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
    with _connect(results_dir, rebuild=True) as conn, _transaction(conn):  # dropped and re-created
        for head in heads:
            _write(conn, head)


def rebuild(results_dir: Path, heads: Sequence[RunHeadline]) -> None:
    """Drop the index and insert ``heads``; a file that is no database any more (or a damaged one) is
    deleted first: the run directories are the truth."""
    try:
        _rebuild(results_dir, heads)
    except StoreError:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{database_path(results_dir)}{suffix}").unlink(missing_ok=True)
        _rebuild(results_dir, heads)


def _rows(conn: sqlite3.Connection) -> list[RunHeadline]:
    rows = conn.execute("SELECT headline FROM runs ORDER BY created_at DESC, run DESC").fetchall()
    return [RunHeadline.model_validate_json(row[0]) for row in rows]


def indexed(results_dir: Path) -> list[RunHeadline]:
    """Every indexed run, newest first, as the index has it (no directory is read)."""
    with _connect(results_dir) as conn:
        return _rows(conn)


def sync(
    results_dir: Path, present: Mapping[str, Path], load: Callable[[Path], RunHeadline]
) -> tuple[list[RunHeadline], dict[str, str]]:
    """Every indexed run, newest first, after indexing the directories of ``present`` (name -> run
    directory) not indexed yet with ``load``; also the ones ``load`` could not read, with the reason."""
    unreadable: dict[str, str] = {}
    with _connect(results_dir) as conn:
        known = {row[0] for row in conn.execute("SELECT run FROM runs")}
        for name in sorted(set(present) - known):
            try:
                head = load(present[name])
            except ResultFileError as exc:
                unreadable[name] = str(exc).splitlines()[0]
                continue
            with _transaction(conn):
                _write(conn, head)
        return _rows(conn), unreadable


def close_matches(ref: str, names: Sequence[str]) -> list[str]:
    """Up to three names nearest to ``ref`` (difflib's ratio >= 0.6); run ids share their date, so only
    names within 0.05 of the best ratio are offered."""
    scored = sorted(((difflib.SequenceMatcher(None, ref, n).ratio(), n) for n in names), reverse=True)
    if not scored or scored[0][0] < 0.6:
        return []
    return [n for ratio, n in scored[:3] if ratio >= max(0.6, scored[0][0] - 0.05)]
