"""The one protocol interface (issue 14): what the command line, the sweep, the run store, ``compare`` and
the report need to know of a protocol, and nothing more.

A protocol is a subclass of :class:`RunProtocol` listed in :mod:`streambench.harness.runs.registry`. It says

* who it is: ``name``, a one-line ``summary``, the ``result_file`` it writes into a run directory and the
  pydantic ``result_model`` of that file (every result model records ``run_id``, ``created_at`` and
  ``adapter``);
* how it runs: :meth:`load_config` (its own configuration, ``--protocol-config``), :meth:`check_options`
  (run options it refuses), :meth:`execute` (run configuration + its configuration + progress ->
  :class:`Outcome`), and optionally :meth:`resume`;
* how it is read: :meth:`print_result` (the console summary and the exit code), :meth:`headline` (the
  figures of the store and ``compare``, :class:`~streambench.harness.results.headline.Figure`),
  :meth:`warnings`, :meth:`incomplete_reason` (a result that must be run again), :meth:`read` (what the report
  loads) and :meth:`report_sections` (its sections; a protocol without any is shown by its headline figures);
* how it sweeps: ``sweepable`` and the two hooks :meth:`sweep_trees` / :meth:`sweep_config`.

The default of each optional method is the behaviour of a plain protocol that writes one JSON file.
"""

from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel
from rich.console import Console

from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.io.config_file import load_protocol_config
from streambench.harness.report.bundle import RunBundle, SectionSpec
from streambench.harness.results.files import ResultFileError, load_protocol_result
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
    sweepable: ClassVar[bool] = False
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

    def can_resume(self, run_dir: Path) -> bool:
        """Whether :meth:`resume` can finish ``run_dir`` (an interrupted run of this protocol)."""
        return False

    def resume(self, run_dir: Path, progress: ProgressHook | None) -> Outcome:
        raise ValueError(f"{run_dir}: the {self.name} protocol cannot resume a run")

    # -- reading ---------------------------------------------------------------------------------------

    def load_result(self, run_dir: Path) -> BaseModel:
        """Its result file in ``run_dir``, validated; :class:`ResultFileError` names the file."""
        return load_protocol_result(run_dir / self.result_file, self.result_model)

    @abc.abstractmethod
    def print_result(self, console: Console, outcome: Outcome) -> int:
        """The console summary of a finished run; returns the exit code of ``streambench run``."""

    def closing_note(self, outcome: Outcome) -> str | None:
        """A last word for stderr after the files are written (e.g. how to finish an incomplete run)."""
        return None

    @abc.abstractmethod
    def headline(self, result: BaseModel) -> list[Figure]:
        """The headline figures of a result (the run store, ``show`` and ``compare --fail-on``)."""

    def frame_latencies_ns(self, run_dir: Path) -> npt.NDArray[np.int64] | None:
        """The per-frame latencies of the run's scored frames, for the rank test of ``compare``; None
        where the protocol keeps none."""
        return None

    def warnings(self, result: BaseModel) -> list[str]:
        """Warnings shown beside the headline."""
        return []

    def incomplete_reason(self, result: BaseModel) -> str | None:
        """Why a result does not finish its run (a sweep runs it again); None: it does."""
        return None

    def read(self, run_dir: Path, bundle: RunBundle) -> None:
        """Load what the report draws of this protocol into ``bundle`` (its result, or why it is absent)."""
        path = run_dir / self.result_file
        if not path.is_file():
            bundle.missing[self.name] = f"no {self.result_file} in this run directory"
            return
        try:
            bundle.results[self.name] = self.load_result(run_dir)
        except ResultFileError as exc:
            bundle.missing[self.name] = str(exc).splitlines()[0]

    def report_sections(self) -> tuple[SectionSpec, ...]:
        """Its sections of the run report, drawn whether or not the run holds its result (a section says
        why it is absent). None: the report lists its headline figures instead."""
        return ()

    # -- sweeping --------------------------------------------------------------------------------------

    def sweep_points(self, points: list[dict[str, Any]]) -> list[SweepPoint | None]:
        """The runs one ``[protocols.<name>]`` entry expands into: ``[None]`` (one run) unless the
        protocol splits into points."""
        if points:
            raise ValueError(f"[protocols.{self.name}]: points apply to the robustness protocol only")
        return [None]

    def sweep_row(
        self, figures: dict[str, float | None], point: str | None
    ) -> tuple[dict[str, float | None], dict[str, float | None]]:
        """(quality, timings) of a finished sweep run, from its headline figures by key. Rows with
        timings are compared against the sweep's baseline (same fingerprint only)."""
        return dict(figures), {}

    def sweep_trees(
        self, run_tree: dict[str, Any], protocol_tree: dict[str, Any], seed: int, point: SweepPoint | None
    ) -> None:
        """Set what a sweep run fixes before validation: the seed, the point (both trees are JSON)."""
        if point is not None:
            protocol_tree.update(point.updates)

    def sweep_config(self, protocol_tree: dict[str, Any], run: RunConfig) -> BaseModel | None:
        """The validated configuration of a sweep run (pydantic's ValidationError on a bad one); None
        when it lives inside ``run`` (the online protocol's)."""
        if self.config_model is None:
            return None
        return self.config_model.model_validate(protocol_tree)
