"""Shell completion of option values: adapters, protocols, data sets and run ids.

Typer's own completion (``streambench --install-completion``, ``--show-completion``) completes commands
and option names; these callbacks complete the values users otherwise look up: the adapter registry's
names, the protocols, the data set kinds and the run directories under ``--results-dir`` (default
``results``). Each reads a static table (imported when asked) or one directory listing, so a
completion costs no model import.
"""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["adapters", "data_kinds", "datasets", "protocols", "run_ids"]

DATASETS = ("synthetic", "audio_files", "feature_arrays", "video_files", "ave", "llp")
"""The ``--dataset`` kinds ``run`` accepts (harness/datasets/catalog.py builds them)."""


def _starting(names: list[str] | tuple[str, ...], incomplete: str) -> list[str]:
    return sorted(name for name in names if name.startswith(incomplete))


def adapters(incomplete: str) -> list[str]:
    """The registry's adapter names (any importable ``module:Class`` works too, and is not listed)."""
    from streambench.adapters.registry import known

    return _starting(list(known()), incomplete)


def protocols(incomplete: str) -> list[str]:
    """The registered protocols."""
    from streambench.harness.runs import registry

    return _starting(registry.names(), incomplete)


def datasets(incomplete: str) -> list[str]:
    """The data set kinds."""
    return _starting(DATASETS, incomplete)


def data_kinds(incomplete: str) -> list[str]:
    """Every kind the catalog builds (``streambench data KIND``), in the catalog's order."""
    from streambench.harness.datasets.catalog import KINDS

    return [kind for kind in KINDS if kind.startswith(incomplete)]


def run_ids(ctx: typer.Context, incomplete: str) -> list[str]:
    """The run directories (those holding a result file) under the command's ``--results-dir``."""
    root = Path(ctx.params.get("results_dir") or "results")
    try:
        names = [p.name for p in root.iterdir() if p.is_dir() and any(p.glob("*.json"))]
    except OSError:
        return []
    return _starting(names, incomplete)
