"""Seed and size torch in a worker process when, and only if, the model imports it.

A worker of ``streambench ab`` is started afresh for every pair of rounds (pyperf's many-processes
convention), so its start-up is the gate's cost per pair. Importing torch is ~0.9 s of a ~1.2 s start on
this machine (``python -X importtime``) and a model that does not use torch (a numpy model such as the
``work`` adapter; streambench's own ONNX adapter shares code with the torch wrappers and does import it)
never needs it. Yet a torch model must be built with the run's seed and thread settings
in force, exactly as an in-process run builds it (harness/runs/session.py seeds before the model exists).

:func:`configure_torch_when_imported` does both: if torch is already imported it configures it now;
otherwise it puts a one-shot finder first on ``sys.meta_path`` (the import system's documented hook,
``importlib.abc.MetaPathFinder``) that lets the usual finders find torch and runs the configuration right
after torch's own ``__init__`` has executed, before the importing code (the adapter) gets the module. The
thread variables of the configuration are set at once, before any BLAS library a model may load.

Once the model is built, the check it returns reads what governs the model in its process
(:class:`AdapterProcess`): torch's thread counts then (an adapter may set its own while it is
built) and the top-level modules loaded, those the adapter's import and construction brought in apart;
the parent maps them to installed distributions for the manifest
(:func:`streambench.harness.instruments.manifest.adapter_packages`). :func:`watch_build` reads the same
around a build in the harness's own process (``--in-process``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from streambench.harness.instruments.threads import AdapterThreads, ThreadConfig, read_adapter_threads

__all__ = [
    "AdapterProcess",
    "configure_torch_when_imported",
    "loaded_modules",
    "watch_build",
    "when_imported",
]


class AdapterProcess(BaseModel):
    """What the adapter's process holds once the model is built: the word of that process (untrusted,
    descriptive: it decides no figure)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    threads: AdapterThreads
    modules: list[str] = Field(description="top-level modules loaded (not the standard library's)")
    new_modules: list[str] = Field(description="of those, the ones the adapter's import and build loaded")


def loaded_modules() -> set[str]:
    """Top-level names of the modules this process has loaded, the standard library's left out."""
    stdlib = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
    names = {name.partition(".")[0] for name in list(sys.modules)}
    return {n for n in names if n and not n.startswith(("__", "_sysconfigdata")) and n not in stdlib}


def _watch(
    process: Literal["worker", "harness"], applied: Callable[[], int | None]
) -> Callable[[], AdapterProcess]:
    before = loaded_modules()

    def read() -> AdapterProcess:
        now = loaded_modules()
        return AdapterProcess(
            threads=read_adapter_threads(process, applied()),
            modules=sorted(now),
            new_modules=sorted(now - before),
        )

    return read


def watch_build() -> Callable[[], AdapterProcess]:
    """Call in this process right before the adapter is built (the run's threads already applied); the
    returned function, called once it is built, reads :class:`AdapterProcess`."""
    torch = sys.modules.get("torch")
    applied = int(torch.get_num_threads()) if torch is not None else None
    return _watch("harness", lambda: applied)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for ``name`` it asks the finders after it and wraps the found loader's
    ``exec_module`` so that ``configure(module)`` runs once the module has executed; it leaves
    ``sys.meta_path`` only then. A mere probe (``importlib.util.find_spec(name)``, as libraries test
    whether torch is installed) finds a spec whose loader never runs, so the finder stays for the real
    import. One thread imports at a time here (a worker's start); :attr:`done` says whether it ran."""

    def __init__(self, name: str, configure: Callable[[ModuleType], None]) -> None:
        self._name = name
        self._configure = configure
        self._searching = False
        self.done = False

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._name or self._searching or self.done:
            return None
        self._searching = True  # importlib.util.find_spec below asks every finder again, this one too
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._searching = False
        execute = getattr(spec.loader, "exec_module", None) if spec is not None else None
        if spec is None or spec.loader is None or execute is None:
            return spec  # nothing to wrap: the caller's check (was it configured?) reports it
        finder = self

        def exec_module(module: ModuleType) -> None:
            execute(module)
            if not finder.done:
                finder.done = True
                if finder in sys.meta_path:
                    sys.meta_path.remove(finder)
                finder._configure(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def when_imported(name: str, configure: Callable[[ModuleType], None]) -> Callable[[], bool]:
    """Run ``configure(module)`` on the top-level module ``name``: now if it is imported, else right after
    its first import (before the importer sees it). Returns a check: has ``configure`` run?"""
    module = sys.modules.get(name)
    if module is not None:
        configure(module)
        return lambda: True
    finder = _AfterImport(name, configure)
    sys.meta_path.insert(0, finder)
    return lambda: finder.done


def configure_torch_when_imported(threads: ThreadConfig, seed: int) -> Callable[[], AdapterProcess]:
    """The run's thread settings (:func:`streambench.harness.instruments.threads.apply`) and
    ``torch.manual_seed``, applied when the model imports torch; the thread environment variables are set now.
    Returns a check to call once the model is built: it raises if torch was imported without being
    configured, else reads the process (:class:`AdapterProcess`)."""
    for key, value in threads.env.items():
        os.environ[key] = value
    applied: list[int] = []

    def configure(torch: ModuleType) -> None:
        from streambench.harness.instruments.threads import apply

        applied.append(apply(threads).intra_op)
        torch.manual_seed(seed)

    configured = when_imported("torch", configure)
    read = _watch("worker", lambda: applied[0] if applied else None)

    def check() -> AdapterProcess:
        if "torch" in sys.modules and not configured():
            raise RuntimeError(
                "torch was imported without the run's seed and thread settings (its loader could not be "
                "wrapped); the model was built unseeded"
            )
        return read()

    return check
