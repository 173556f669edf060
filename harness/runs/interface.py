"""The one protocol interface (issue 14), kept to its core (issue 26, item 4): what every protocol is.

A protocol is a subclass of :class:`RunProtocol` listed in :mod:`streambench.harness.runs.registry` (or
declared by an installed package's ``streambench.protocols`` entry point). Its core says

* who it is: ``name``, a one-line ``summary``, the ``result_file`` it writes into a run directory and the
  pydantic ``result_model`` of that file (every result model records ``run_id``, ``created_at`` and
  ``adapter``); ``figure_keys`` and ``caption`` for its headline figures;
* how it runs: its own ``config_model`` (``config_file``: set by ``--protocol-config``; :meth:`load_config`),
  the shared run options it honours (``run_options``; :meth:`check_options` refuses the others) and
  :meth:`execute` (run configuration + its configuration + progress -> :class:`Outcome`);
* its figures: :meth:`headline` (the store, ``show`` and ``compare --fail-on``).

Everything else is an opt-in part (:mod:`streambench.harness.runs.parts`): :class:`~.parts.Printed` (its
own console summary), :class:`~.parts.Resumable`, :class:`~.parts.Reported` (warnings, completeness, report
sections) and :class:`~.parts.Swept`. A new protocol writes its core and the parts it adds; the callers
fall back to what a protocol without a part gets.
"""

from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.io.config_file import load_protocol_config
from streambench.harness.results.files import load_protocol_result
from streambench.harness.results.headline import Figure

__all__ = ["Outcome", "RunProtocol", "SweepPoint"]


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What :meth:`RunProtocol.execute` returns: the result (as written to ``run_dir / result_file``)
    and the run directory; ``extra`` carries what the protocol's own printing needs besides."""

    result: BaseModel
    run_dir: Path
    extra: Any = None
    unchanged: bool = False
    """Nothing was run or written: a resume of a run that was finished already (its result as it stands)."""


@dataclasses.dataclass(frozen=True)
class SweepPoint:
    """One run of a protocol in a sweep, for protocols that split into points (robustness): its name and
    the fields it sets in the protocol's configuration."""

    name: str
    updates: dict[str, Any]


_FLAGS = {
    "isolate": "--isolate/--in-process",
    "sealed": "--sealed/--no-sealed",
    "on_error": "--on-error",
    "baseline": "--baseline",
}


class RunProtocol(abc.ABC):
    """One protocol as the harness runs it; see the module docstring for the contract."""

    name: ClassVar[str]
    summary: ClassVar[str]
    result_file: ClassVar[str]
    result_model: ClassVar[type[BaseModel]]
    config_model: ClassVar[type[BaseModel] | None] = None
    """Its own configuration (a sweep's ``[protocols.<name>] config``); None: it has none of its own."""
    config_file: ClassVar[bool] = False
    """Whether ``--protocol-config FILE`` sets that configuration on the command line."""
    figure_keys: ClassVar[tuple[str, str]] = ("", "")
    """(regular expression of its headline keys, how to write them), for ``compare --fail-on``."""
    caption: ClassVar[str | None] = None
    """How its headline figures are defined, printed under them."""
    run_options: ClassVar[frozenset[str]] = frozenset()
    """Run options only some protocols take (``isolate``, ``on_error``, ``baseline``): those this protocol
    honours; the others are refused when typed, before anything runs."""

    # -- running ---------------------------------------------------------------------------------------

    def load_config(self, path: Path | None) -> BaseModel | None:
        """Its configuration from ``path`` (.json / .toml; the caller has checked :attr:`config_file`),
        or its defaults when ``path`` is None."""
        if self.config_model is None:
            return None
        return load_protocol_config(path, self.config_model, self.name)

    def check_options(self, config: RunConfig, given: frozenset[str]) -> None:
        """Refuse run options this protocol would ignore (``given``: the options typed on the command
        line); raises ValueError with the message the user sees."""
        typed = sorted(name for name in _FLAGS if name in given and name not in self.run_options)
        if typed:
            flags = ", ".join(_FLAGS[name] for name in typed)
            raise ValueError(f"{flags} do not apply to --protocol {self.name} (it ignores them)")

    @abc.abstractmethod
    def execute(self, run: RunConfig, config: BaseModel | None, progress: ProgressHook | None) -> Outcome:
        """Run the protocol and write ``<run.output_dir>/<run_id>/<result_file>``. A protocol that builds
        ``run.data`` fixes its seed first, once per run
        (:func:`streambench.harness.runs.catalog.fix_data_seed`: a secret one where it is unset; streams of an
        unset seed are never built)."""

    # -- its result and figures ------------------------------------------------------------------------

    def load_result(self, run_dir: Path) -> BaseModel:
        """Its result file in ``run_dir``, validated; :class:`ResultFileError` names the file."""
        return load_protocol_result(run_dir / self.result_file, self.result_model)

    @abc.abstractmethod
    def headline(self, result: BaseModel) -> list[Figure]:
        """The headline figures of a result (the run store, ``show`` and ``compare --fail-on``)."""
