"""The layout of a results directory (the run store, DESIGN.md "Results"): the names the store itself uses
there, which no run may take, and the rule that a run directory is a real directory of the store.

A results directory holds one directory per run, and the store's own files beside them: the run index
``index.sqlite`` with SQLite's sidecars (``-wal``, ``-shm``, ``-journal``), a damaged index moved aside
(``index.sqlite.damaged-<UTC time>``), and hidden entries (``.sweep-staging``, the temporary files of
atomic writes). :func:`reserved_reason` says why a run id would collide with one of them;
a name starting with ``-`` is refused too, since every command would read it as an option.

A run directory that is a symbolic link would be written through to wherever it points, outside the
store: :func:`check_run_dir` refuses it before anything is written; a results directory that cannot be
one (a file on its path) is refused by :func:`check_results_dir` before anything runs. This module sits
at the bottom of the harness (it imports nothing of ours), so the run configuration, the event log, the
result writers and the store all share one rule.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "DAMAGED_SUFFIX",
    "DB_FILE",
    "DB_SIDECARS",
    "check_results_dir",
    "check_run_dir",
    "reserved_reason",
]

DB_FILE = "index.sqlite"
"""The run index, a cache of the run directories' headlines (:mod:`streambench.harness.results.store`)."""
DB_SIDECARS = ("-wal", "-shm", "-journal")
"""Files SQLite keeps beside a database: the write-ahead log, its shared memory, the rollback journal."""
DAMAGED_SUFFIX = ".damaged-"
"""A damaged index moved aside is ``index.sqlite.damaged-<UTC time>`` (its sidecars keep their suffix)."""


def reserved_reason(name: str) -> str | None:
    """Why ``name`` cannot be a run directory of the store, or None when it can. Compared without case:
    on a case-insensitive file system ``Index.SQLite`` is the index."""
    folded = name.casefold()
    if folded == DB_FILE or folded.startswith(DB_FILE):
        return (
            f"{name!r} is the run store's own: {DB_FILE} (the run index), its SQLite sidecars "
            f"({', '.join(DB_FILE + s for s in DB_SIDECARS)}) and damaged copies moved aside "
            f"({DB_FILE}{DAMAGED_SUFFIX}*) live beside the run directories"
        )
    if name.startswith("-"):
        return f"{name!r} starts with '-': every command would read it as an option"
    if name.startswith("."):
        return (
            f"{name!r} starts with '.': hidden names belong to the run store (.sweep-staging, the "
            "temporary files of atomic writes)"
        )
    return None


def check_run_dir(run_dir: Path) -> Path:
    """``run_dir`` if a run may be written there: it does not exist yet, or it is a real directory (not a
    symbolic link, which would send the run's files outside the store). Raises ValueError naming it."""
    if run_dir.is_symlink():
        raise ValueError(
            f"{run_dir}: the run directory is a symbolic link (to {run_dir.readlink()}); a run is written "
            "only into a real directory of its results directory: use another --run-id, or --output-dir "
            "where the run should be"
        )
    if run_dir.exists() and not run_dir.is_dir():
        raise ValueError(f"{run_dir}: exists and is not a directory; use another --run-id")
    return run_dir


def check_results_dir(path: Path, name: str) -> Path:
    """``path`` if it can be a results directory: it, or the first of its ancestors that exists, is a
    directory (it is created when the first run is written). Raises ValueError naming the setting
    (``name``: ``--output-dir`` on the command line, ``output_dir`` in Python) and the path."""
    existing = next((p for p in (path, *path.parents) if p.exists()), None)  # "." or "/" at the latest
    if existing is not None and not existing.is_dir():
        what = "is a file" if existing == path else f"is inside {existing}, which is a file"
        raise ValueError(f"{name} {path}: {what}, not a directory")
    return path
