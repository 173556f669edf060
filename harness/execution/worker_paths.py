"""A sealed worker's import path: nothing of the adapter's runs before its sandbox, and the adapter's code
comes from the side's own directories.

DESIGN.md, "Causality": the adapter's process is untrusted from its first instruction. A sealed worker
therefore starts as ``python -I -S`` (isolated mode: no ``PYTHON*`` variables, no user site, no script or
working directory on ``sys.path``; ``-S``: the ``site`` module is not imported, so no ``.pth`` file and no
``sitecustomize`` / ``usercustomize`` module runs). Its path grows in three steps (:class:`WorkerPaths`):

1. before the sandbox, the standard library, then ``harness``: the directory this streambench is imported
   from, the site directories and the directories their ``.pth`` files name, as plain entries (no
   ``import`` line of a ``.pth`` file runs) — enough to import the harness and its dependencies wherever
   the environment keeps them, nothing of the adapter's;
2. once confined and once the pipe's floor is calibrated (harness/execution/sealed_worker.py), ``adapter``
   first: a side's own checkout (``streambench ab --base-path``), else the working directory then this
   process's ``sys.path`` (as ``python -m`` looks), so every import the adapter makes — its module, a
   ``torch-module`` factory, a package at the project's root — is found in its own directories first;
3. then the site directories' ``.pth`` files run (editable installs, namespace packages), inside the
   sandbox. ``sitecustomize`` and ``usercustomize`` never run in a sealed worker; one found on the path is
   named in :func:`start_hooks`, recorded with the run.
"""

from __future__ import annotations

import importlib.machinery
import os
import site
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["WorkerPaths", "open_adapter_paths", "start_hooks", "worker_paths"]

START_HOOKS = ("sitecustomize", "usercustomize")
"""The modules ``site`` imports at start-up from anywhere on the path (never in a sealed worker)."""


class WorkerPaths(BaseModel):
    """What a sealed worker's ``sys.path`` holds, step by step (plain strings: it travels as JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    harness: list[str] = Field(
        description="after the standard library, before the sandbox: this streambench's directory and the "
        "site directories (their .pth files not run)"
    )
    site: list[str] = Field(description="site directories whose .pth files run once the worker is confined")
    adapter: list[str] = Field(description="put first once confined: where the adapter's imports are found")


def _unique_dirs(paths: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(os.path.abspath(p) for p in paths if p and os.path.isdir(p)))


def site_dirs() -> list[str]:
    """This interpreter's site directories (a virtual environment's, the base installation's where the
    environment includes it, the user's where enabled)."""
    found = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        found.append(site.getusersitepackages())
    return _unique_dirs(found)


def _pth_files(directory: str) -> list[tuple[str, list[str]]]:
    """The ``.pth`` files of ``directory`` with their lines, in the order ``site`` reads them (unreadable
    ones left out)."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".pth"))
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as pth:
                found.append((path, pth.read().splitlines()))
        except OSError:
            continue
    return found


def _runs_code(line: str) -> bool:
    return line.startswith(("import ", "import\t"))


def pth_dirs(directory: str) -> list[str]:
    """The directories the ``.pth`` files of ``directory`` add to the path, read as :func:`site.addpackage`
    reads them (a line is a directory relative to ``directory``; ``#`` lines and ``import`` lines are not
    directories) without running anything."""
    named = [
        os.path.join(directory, line.rstrip())
        for _, lines in _pth_files(directory)
        for line in lines
        if line.rstrip() and not line.startswith("#") and not _runs_code(line)
    ]
    return _unique_dirs(named)


def harness_root() -> str:
    """The directory this streambench is imported from (a checkout's root, or site-packages)."""
    import streambench

    return str(Path(streambench.__file__).resolve().parent.parent)


def worker_paths(own: Sequence[str] = ()) -> WorkerPaths:
    """The path of a worker whose adapter's code lives in ``own`` (a side's checkout: only there and in
    the installed packages), or, with none, in the working directory then this process's ``sys.path``."""
    sites = site_dirs()
    if own:
        adapter = _unique_dirs([os.fspath(p) for p in own])
    else:
        here = os.getcwd()
        adapter = _unique_dirs([here, *(entry or here for entry in sys.path)])
    named = [entry for directory in sites for entry in pth_dirs(directory)]
    return WorkerPaths(harness=_unique_dirs([harness_root(), *sites, *named]), site=sites, adapter=adapter)


def start_hooks(paths: WorkerPaths) -> list[str]:
    """The start-up hooks a plain interpreter on this path would run before anything else (a
    ``sitecustomize`` / ``usercustomize`` module, a ``.pth`` file with an ``import`` line): files a model's
    directory or package can bring. A sealed worker runs none of them before its sandbox; ``.pth`` files
    run after it, the two modules never."""
    found: list[str] = []
    entries = _unique_dirs([*paths.adapter, *paths.harness])
    for name in START_HOOKS:
        spec = importlib.machinery.PathFinder.find_spec(name, entries)
        if spec is not None and spec.origin:
            found.append(spec.origin)
    for directory in paths.site:
        found.extend(path for path, lines in _pth_files(directory) if any(_runs_code(line) for line in lines))
    return found


def open_adapter_paths(paths: WorkerPaths) -> None:
    """Worker side, once confined and calibrated: the adapter's directories first, then the site
    directories' ``.pth`` files (inside the sandbox)."""
    sys.path[:0] = [p for p in paths.adapter if p not in sys.path]
    for directory in paths.site:
        site.addsitedir(directory)
