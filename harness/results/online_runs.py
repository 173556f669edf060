"""The online runs under paths given on the command line: run directories (or their ``result.json``) and
stores holding run directories, from any machine (:mod:`streambench.harness.results.hardware`).

Only ``result.json`` is read (online runs: the only ones that measure latency and FPS); a run directory
given by name must be readable, a broken one inside a store is skipped with the reason, and an incomplete
run is skipped (its figures cover part of its plan only).
"""

from __future__ import annotations

from pathlib import Path

from streambench.harness.results.files import RESULT_FILE, ResultFileError, RunResult, load_result

__all__ = ["HardwareInputError", "collect_runs"]


class HardwareInputError(ValueError):
    """A path or option given to the hardware view cannot be used; names it."""


def collect_runs(paths: list[Path]) -> tuple[list[tuple[Path, RunResult]], dict[str, str]]:
    """The online runs of ``paths`` (run directories, their ``result.json``, or stores holding run
    directories), each once, and the directories skipped with the reason. A path that is none of these, or
    a run directory given by name whose result cannot be read, raises :class:`HardwareInputError`."""
    found: dict[Path, tuple[Path, RunResult]] = {}
    skipped: dict[str, str] = {}
    for given in paths:
        run_dir = given.parent if given.is_file() and given.name == RESULT_FILE else given
        if not run_dir.is_dir():
            raise HardwareInputError(f"{given}: no such run directory or store")
        if (run_dir / RESULT_FILE).is_file():
            try:
                found.setdefault(run_dir.resolve(), (run_dir, load_result(run_dir)))
            except ResultFileError as exc:
                raise HardwareInputError(str(exc).splitlines()[0]) from None
            continue
        before = len(found) + len(skipped)
        for sub in sorted(p for p in run_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if not (sub / RESULT_FILE).is_file():
                if any(sub.glob("*.json")):
                    skipped[str(sub)] = f"holds no {RESULT_FILE}: only online runs measure latency and FPS"
                continue
            try:
                found.setdefault(sub.resolve(), (sub, load_result(sub)))
            except ResultFileError as exc:
                skipped[str(sub)] = str(exc).splitlines()[0]
        if len(found) + len(skipped) == before:
            raise HardwareInputError(
                f"{given}: neither a run directory (no {RESULT_FILE}) nor a store holding online runs"
            )
    runs = []
    for run_dir, result in found.values():
        if result.status != "complete":
            skipped[str(run_dir)] = f"incomplete run ({result.incomplete_reason or 'interrupted'})"
        else:
            runs.append((run_dir, result))
    return runs, skipped
