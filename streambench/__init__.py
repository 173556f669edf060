"""streambench: a benchmark harness for causal (streaming) models.

The installed package holds the repository's three floors under one name, so that no top-level name of
ours collides with another distribution's (AdapterHub installs ``adapters``):

- ``streambench.harness``: runs models (the repository's ``harness/``);
- ``streambench.protocols``: pure plan and score (``protocols/``);
- ``streambench.adapters``: the data contract and the models (``adapters/``).

pyproject.toml maps each floor from its directory (``[tool.setuptools.package-dir]``); the links in this
directory (``streambench/harness`` -> ``../harness``, ...) give tools that read the source tree (mypy, an
interpreter started in a checkout) the same layout.

The names in ``__all__`` are the public API; everything else is internal and may change between
releases. They are imported on first use (PEP 562), so ``import streambench`` (and the command line,
which lives below it) costs no numpy, pydantic or torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streambench.adapters.contract import (
        AdapterInfo,
        AdapterOptions,
        Frame,
        Prediction,
        StreamingAdapter,
    )
    from streambench.harness.api import ab, run
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.execution.rounds import RoundsConfig
    from streambench.harness.results.files import RunRecord, RunResult
    from streambench.harness.results.headline import Figure
    from streambench.harness.runs.ab import ABReport
    from streambench.harness.runs.interface import Outcome, RunContext, RunProtocol
    from streambench.harness.runs.registry import register

_PUBLIC = {
    # for adapter authors: the data contract (DESIGN.md "The data contract")
    "AdapterInfo": "streambench.adapters.contract",
    "AdapterOptions": "streambench.adapters.contract",
    "Frame": "streambench.adapters.contract",
    "Prediction": "streambench.adapters.contract",
    "StreamingAdapter": "streambench.adapters.contract",
    # for running from Python: the command line's own configuration models and entry points
    "RunConfig": "streambench.harness.execution.config",
    "run": "streambench.harness.api",
    "Outcome": "streambench.harness.runs.interface",
    "RunResult": "streambench.harness.results.files",
    "resume": "streambench.harness.api",
    "ab": "streambench.harness.api",
    "RoundsConfig": "streambench.harness.execution.rounds",
    "ABReport": "streambench.harness.runs.ab",
    # for protocol authors: the template a protocol subclasses, its result record, its figures, the registry
    "RunProtocol": "streambench.harness.runs.interface",
    "RunContext": "streambench.harness.runs.interface",
    "RunRecord": "streambench.harness.results.files",
    "Figure": "streambench.harness.results.headline",
    "register": "streambench.harness.runs.registry",
}

__all__ = [
    "ABReport",
    "AdapterInfo",
    "AdapterOptions",
    "Figure",
    "Frame",
    "Outcome",
    "Prediction",
    "RoundsConfig",
    "RunConfig",
    "RunContext",
    "RunProtocol",
    "RunRecord",
    "RunResult",
    "StreamingAdapter",
    "__version__",
    "ab",
    "register",
    "resume",
    "run",
]


def _version() -> str:
    """The installed distribution's version (importlib.metadata, imported when asked: it costs the command
    line tens of milliseconds); ``0+unknown`` for a source tree on sys.path that is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("streambench")
    except PackageNotFoundError:
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = found = _version()
        return found
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'streambench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
