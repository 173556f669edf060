"""The run store as the read-only commands see it (``streambench runs`` and ``show``):
through the index when it can be used, else from the run directories, which are the truth.

* A damaged index (garbled, truncated: SQLite finds no whole database in it) is moved aside to
  ``index.sqlite.damaged-<UTC time>`` and rebuilt from the run directories
  (:func:`streambench.harness.runs.catalog.reindex`); the command says so.
* An index that cannot be written or read as it stands (a read-only or full store, a directory where the
  index belongs, a newer schema), or a damaged one that cannot be moved aside, is left as it is: the runs
  are read from their directories, and the command says so.

Either way every readable run is listed or shown, and the command succeeds; only a results directory that
does not exist, or a reference to no run, is an error. What happened to the index comes back as notes,
for the command to print on stderr (its stdout may be JSON).

``show`` takes a run's row from the index when the row is fresh (:func:`indexed_fresh`), as ``runs`` takes
every indexed run's: neither imports a protocol, the engine or torch to print a headline (the command
starts in a fraction of a second); a row the run directory has moved on from is read again.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from pathlib import Path

from streambench.harness.results import store
from streambench.harness.results.headline import RunHeadline
from streambench.harness.results.store import IndexUnusable, StoreError
from streambench.harness.runs import catalog, registry

__all__ = ["Listing", "find_run", "indexed_fresh", "survey_runs"]

_FROM_DIRECTORIES = "the runs are read from the run directories"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclasses.dataclass
class Listing:
    """Every readable run, newest first; the run directories that could not be read, with the reason;
    what happened to the index, in words (empty when nothing did)."""

    heads: list[RunHeadline]
    unreadable: dict[str, str]
    notes: list[str]


def survey_runs(results_dir: Path) -> Listing:
    """Every run of ``results_dir`` (:func:`streambench.harness.runs.catalog.scan_runs`), whatever the state
    of its index; :class:`~streambench.harness.results.store.StoreError` only when ``results_dir`` is no
    directory."""
    notes: list[str] = []
    try:
        return Listing(*catalog.scan_runs(results_dir), notes)
    except IndexUnusable as exc:
        if not exc.damaged:  # a damaged one is noted by _repair
            notes.append(str(exc))
        if not (exc.damaged and _repair(results_dir, exc, notes)):
            return _from_directories(results_dir, notes)
    try:
        return Listing(*catalog.scan_runs(results_dir), notes)
    except IndexUnusable as exc:  # rebuilt, and unusable again (e.g. the disk filled meanwhile)
        notes.append(str(exc))
        return _from_directories(results_dir, notes)


def find_run(ref: str, results_dir: Path) -> tuple[RunHeadline, list[str]]:
    """The headline of one run (:func:`streambench.harness.runs.catalog.resolve_run` for ``ref``): the
    index's row when it is fresh (:func:`indexed_fresh`), else read from its directory and indexed where the
    index can be written (a damaged index is moved aside and rebuilt); the notes say what happened to the
    index. A reference to no run, or a run whose files cannot be read, is a
    :class:`~streambench.harness.results.store.StoreError` naming the reference or the file."""
    run_dir = catalog.resolve_run(ref, results_dir)
    in_store = run_dir.resolve().parent == results_dir.resolve()  # a run of this store, not a path elsewhere
    fresh = indexed_fresh(results_dir, run_dir) if in_store else None
    if fresh is not None:
        return fresh, []
    from streambench.harness.results.files import ResultFileError

    try:
        head = catalog.load_headline(run_dir)
    except ResultFileError as exc:
        raise StoreError(str(exc)) from None
    notes: list[str] = []
    if in_store:
        try:
            store.upsert(results_dir, head)
        except IndexUnusable as exc:
            if not (exc.damaged and _repair(results_dir, exc, notes)):
                notes.append(f"{exc}; {head.run} is shown from its directory")
    return head, notes


def indexed_fresh(results_dir: Path, run_dir: Path) -> RunHeadline | None:
    """The index's headline of ``run_dir`` (a run directory of ``results_dir``) when it still holds what
    the directory would give: the run's result files are those the row was read from, and none of them
    was written after the row was (modification times against ``indexed_at``; the harness indexes a run
    after writing its files). None otherwise, or when the index cannot be read: the caller reads the
    directory, which imports the protocols that wrote it (``show`` of a fresh row imports none)."""
    try:
        found = store.indexed_run(results_dir, run_dir.name)
    except IndexUnusable:
        return None  # reading the directory says what happened to the index
    if found is None:
        return None
    head, indexed_at = found
    files = {name: run_dir / registry.result_file(name) for name in registry.names()}
    present = [name for name, path in files.items() if path.is_file()]
    if sorted(present) != sorted(head.protocols):
        return None
    try:
        written_us = max(files[name].stat().st_mtime_ns for name in present) // 1000
    except OSError:
        return None
    indexed_us = (indexed_at - _EPOCH) // timedelta(microseconds=1)
    return head if written_us < indexed_us else None


def _repair(results_dir: Path, damage: IndexUnusable, notes: list[str]) -> bool:
    """Move a damaged index aside and rebuild it from the run directories; whether that worked."""
    db = store.database_path(results_dir)
    try:
        report = catalog.reindex(results_dir)
    except (IndexUnusable, OSError) as exc:  # e.g. a read-only directory: the file cannot be renamed
        why = exc.reason if isinstance(exc, IndexUnusable) else exc.strerror or str(exc)
        notes.append(f"{db}: damaged ({damage.reason}), and it could not be moved aside and rebuilt ({why})")
        return False
    where = f"moved aside to {report.moved_aside}" if report.moved_aside else "moved aside by another process"
    notes.append(f"{db}: damaged ({damage.reason}): {where}; the index is rebuilt from the run directories")
    return True


def _from_directories(results_dir: Path, notes: list[str]) -> Listing:
    notes.append(f"{_FROM_DIRECTORIES} in {results_dir}")
    heads, unreadable = catalog.read_runs(results_dir)
    return Listing(heads, {name: why.splitlines()[0] for name, why in unreadable.items()}, notes)
