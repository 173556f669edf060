"""What the harness calls on a protocol (the command line, the API, the sweep, the store, ``compare``
and the report): :class:`ProtocolContract`, its identity, ``execute`` and ``headline``, and every other hook
with the default a protocol gets without it (tabled in :mod:`streambench.harness.runs.interface`, whose
:class:`~streambench.harness.runs.interface.RunProtocol` is what protocols subclass: it implements
``execute`` as a template around ``measure``). Its own module, below the registry, so that the template
may write and index a run (which reads every registered protocol) without an import circle.
"""

from __future__ import annotations

import abc
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel
from rich.console import Console

from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.io.config_file import load_protocol_config
from streambench.harness.io.safe_text import safe
from streambench.harness.report.bundle import RunBundle, SectionSpec
from streambench.harness.results.files import ResultFileError, load_protocol_result
from streambench.harness.results.headline import Figure

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["OPTION_FIELDS", "ConfigT", "Outcome", "ProtocolContract", "ResultT", "SweepPoint", "options_set"]

ConfigT = TypeVar("ConfigT", bound="BaseModel | None")
"""A protocol's own configuration (its ``config_model``; None: it has none)."""
ResultT = TypeVar("ResultT", bound=BaseModel)
"""A protocol's result (its ``result_model``; a :class:`~streambench.harness.results.files.RunRecord`)."""


@dataclasses.dataclass(frozen=True)
class Outcome(Generic[ResultT]):
    """What :meth:`RunProtocol.execute` returns: the result (as written to ``run_dir / result_file``)
    and the run directory; ``extra`` carries what the protocol's own printing needs besides."""

    result: ResultT
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
_DATA_OPTIONS = ("seed", "streams", "duration", "dataset")
"""The run options that choose the data set (refused by a protocol that builds its own streams)."""
OPTION_FIELDS: dict[str, tuple[str, ...]] = {
    "seed": ("data", "seed"),
    "streams": ("data", "num_streams"),
    "duration": ("data", "duration_s"),
    "dataset": ("data", "kind"),
    "isolate": ("isolate",),
    "sealed": ("isolation", "sealed"),
    "on_error": ("on_error",),
    "baseline": ("baseline",),
}
"""The RunConfig field each checked run option sets (the command line's table says the same: a test)."""


def options_set(config: RunConfig) -> frozenset[str]:
    """The checked run options whose fields ``config`` sets explicitly (pydantic's ``model_fields_set``
    along the field's path): what :meth:`ProtocolContract.check_options` is given from Python."""
    found = set()
    for name, path in OPTION_FIELDS.items():
        node: object = config
        for part in path:
            if part not in getattr(node, "model_fields_set", ()):
                break
            node = getattr(node, part)
        else:
            found.add(name)
    return frozenset(found)


class ProtocolContract(abc.ABC, Generic[ConfigT, ResultT]):
    """One protocol as the harness calls it; see the module docstring."""

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
    own_streams: ClassVar[bool] = False
    """It builds its streams itself (not from the run's data set): no data seed is fixed and the data
    options are refused."""
    sweepable: ClassVar[bool] = False
    """Whether sweeps run it (``[protocols.<name>]`` of a sweep file)."""
    sweep_headline_timed: ClassVar[bool] = False
    """Whether the figure :meth:`sweep_headline` declares depends on the machine (the sweep report then
    shows it per environment fingerprint, never mixed across them)."""

    # -- running: the template -------------------------------------------------------------------------

    def load_config(self, path: Path | None) -> ConfigT:
        """Its configuration from ``path`` (.json / .toml; the caller has checked :attr:`config_file`),
        or its defaults when ``path`` is None."""
        if self.config_model is None:
            return None  # type: ignore[return-value]  # ConfigT is None for a protocol without one
        return load_protocol_config(path, self.config_model, self.name)  # type: ignore[return-value]

    def check_options(self, config: RunConfig, given: frozenset[str]) -> None:
        """Refuse run options this protocol would ignore (``given``: the options typed on the command
        line); raises ValueError with the message the user sees."""
        ignored = sorted(given & set(_DATA_OPTIONS)) if self.own_streams else []
        if ignored:
            options = ", ".join(f"--{name}" for name in ignored)
            raise ValueError(
                f"--protocol {self.name} builds its own streams: use --protocol-config, not {options}"
            )
        typed = sorted(name for name in _FLAGS if name in given and name not in self.run_options)
        if typed:
            flags = ", ".join(_FLAGS[name] for name in typed)
            raise ValueError(f"{flags} do not apply to --protocol {self.name} (it ignores them)")

    @abc.abstractmethod
    def execute(self, run: RunConfig, config: ConfigT, progress: ProgressHook | None) -> Outcome[ResultT]:
        """Run the protocol and write ``<run.output_dir>/<run_id>/<result_file>`` (and index the run)."""

    # -- its result and figures ------------------------------------------------------------------------

    def load_result(self, run_dir: Path) -> ResultT:
        """Its result file in ``run_dir``, validated; :class:`ResultFileError` names the file."""
        return load_protocol_result(run_dir / self.result_file, self.result_model)  # type: ignore[return-value]

    @abc.abstractmethod
    def headline(self, result: ResultT) -> list[Figure]:
        """The headline figures of a result (the run store, ``show`` and ``compare --fail-on``)."""

    # -- printing --------------------------------------------------------------------------------------

    def print_result(self, console: Console, outcome: Outcome[ResultT]) -> int:
        """The console summary of a finished run (its headline figures unless overridden); returns the
        exit code of ``streambench run``."""
        from streambench.harness.results.markdown import format_value

        console.print(f"[bold]{safe(self.name)}[/]: {safe(self.summary)}", highlight=False)
        for figure in self.headline(outcome.result):
            shown = format_value(figure.value, figure.unit) if figure.value is not None else "–"
            shown += f" ({figure.reason})" if figure.value is None and figure.reason else ""
            console.print(f"  {safe(figure.label)}: {safe(shown)}", highlight=False)
        return 0

    def closing_note(self, outcome: Outcome[ResultT]) -> str | None:
        """A last word for stderr after the files are written (e.g. how to finish an incomplete run)."""
        return None

    # -- resuming --------------------------------------------------------------------------------------

    def can_resume(self, run_dir: Path) -> bool:
        """Whether :meth:`resume` can finish ``run_dir`` (an interrupted run of this protocol)."""
        return False

    def resume(self, run_dir: Path, progress: ProgressHook | None) -> Outcome[ResultT]:
        """Finish the run in ``run_dir`` with its own configuration."""
        raise ValueError(f"{run_dir}: the {self.name} protocol cannot resume a run")

    # -- what the run store, ``compare`` and the report read ---------------------------------------------

    def warnings(self, result: ResultT) -> list[str]:
        """Warnings shown beside the headline."""
        return []

    def incomplete_reason(self, result: ResultT) -> str | None:
        """Why a result does not finish its run (a sweep runs it again); None: it does."""
        return None

    def frame_latencies_ns(self, run_dir: Path) -> npt.NDArray[np.int64] | None:
        """The per-frame latencies of the run's scored frames, for the rank test of ``compare``; None
        where the protocol keeps none."""
        return None

    def read(self, run_dir: Path, bundle: RunBundle) -> None:
        """Load what the report draws of this protocol into ``bundle``: its result, or why it is absent."""
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
        why it is absent). Empty: the report lists its headline figures instead."""
        return ()

    # -- sweeps (when :attr:`sweepable`) ------------------------------------------------------------------

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
        return None if self.config_model is None else self.config_model.model_validate(protocol_tree)

    def sweep_headline(self, result: ResultT) -> tuple[Figure, str] | None:
        """The one figure of a finished run the sweep report plots against the knobs (``low``/``high``:
        its interval, ``high`` None: open) and how it was reached, in words; None: no such figure
        (:mod:`streambench.harness.sweep.report_headline`)."""
        return None
