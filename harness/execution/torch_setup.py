"""Seed and size torch in a worker process when, and only if, the model imports it (issue 16).

A worker of ``streambench ab`` is started afresh for every pair of rounds (pyperf's many-processes
convention), so its start-up is the gate's cost per pair. Importing torch is ~0.9 s of a ~1.2 s start on
this machine (``python -X importtime``) and a model that does not use torch (numpy, ONNX Runtime, the
``work`` adapter) never needs it. Yet a torch model must be built with the run's seed and thread settings
in force, exactly as an in-process run builds it (harness/runs/session.py seeds before the model exists).

:func:`configure_torch_when_imported` does both: if torch is already imported it configures it now;
otherwise it puts a one-shot finder first on ``sys.meta_path`` (the import system's documented hook,
``importlib.abc.MetaPathFinder``) that lets the usual finders find torch and runs the configuration right
after torch's own ``__init__`` has executed, before the importing code (the adapter) gets the module. The
thread variables of the configuration are set at once, before any BLAS library a model may load.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from harness.instruments.threads import ThreadConfig

__all__ = ["configure_torch_when_imported", "when_imported"]


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for ``name`` it removes itself, asks the other finders, and wraps the found
    loader's ``exec_module`` so that ``configure(module)`` runs once the module has executed."""

    def __init__(self, name: str, configure: Callable[[ModuleType], None]) -> None:
        self._name = name
        self._configure = configure

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self._name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # one shot: the module is imported once
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module
        configure = self._configure

        def exec_module(module: ModuleType) -> None:
            execute(module)
            configure(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def when_imported(name: str, configure: Callable[[ModuleType], None]) -> None:
    """Run ``configure(module)`` on the top-level module ``name``: now if it is imported, else right after
    its first import (before the importer sees it)."""
    module = sys.modules.get(name)
    if module is not None:
        configure(module)
        return
    sys.meta_path.insert(0, _AfterImport(name, configure))


def configure_torch_when_imported(threads: ThreadConfig, seed: int) -> None:
    """The run's thread settings (:func:`harness.instruments.threads.apply`) and ``torch.manual_seed``,
    applied when the model imports torch; the thread environment variables are set now."""
    for key, value in threads.env.items():
        os.environ[key] = value

    def configure(torch: ModuleType) -> None:
        from harness.instruments.threads import apply

        apply(threads)
        torch.manual_seed(seed)

    when_imported("torch", configure)
