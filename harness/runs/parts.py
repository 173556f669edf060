"""The opt-in parts of a protocol (issue 26, item 4): printing, resuming, what the store and the report
read, and sweeping. A protocol mixes in the parts it has beside :class:`RunProtocol`'s core (identity,
``execute``, the typed result and its figures) and states nothing about the others; the command line,
the store, the report and the sweep call the functions below, which fall back to what a protocol without
that part gets (asv's narrow ``Command`` base; torchmetrics' "inherit the plumbing, override what you
add")::

    class CapacityProtocol(Printed, Reported, Swept, RunProtocol): ...

==============  =========================================================  =================================
part            hooks                                                      without it
==============  =========================================================  =================================
:class:`Printed`    ``print_result``, ``closing_note``                     its headline figures, exit code 0
:class:`Resumable`  ``can_resume``, ``resume``                             ``run --resume`` refuses its runs
:class:`Reported`   ``warnings``, ``incomplete_reason``, ``read``,          no warnings, always complete, its
                    ``report_sections``, ``frame_latencies_ns``             result file read, headline shown
:class:`Swept`      ``sweep_points``, ``sweep_row``, ``sweep_trees``,       not in sweeps
                    ``sweep_config``
==============  =========================================================  =================================
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel
from rich.console import Console

from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.report.bundle import RunBundle, SectionSpec
from streambench.harness.results.files import ResultFileError

if TYPE_CHECKING:
    from streambench.harness.results.headline import Figure
    from streambench.harness.runs.interface import Outcome, RunProtocol, SweepPoint

__all__ = [
    "Printed",
    "Reported",
    "Resumable",
    "Swept",
    "can_resume",
    "closing_note",
    "frame_latencies_ns",
    "incomplete_reason",
    "print_result",
    "read",
    "report_sections",
    "sweepable",
    "warnings",
]


class Printed(abc.ABC):
    """A console summary of its own (and the exit code of ``streambench run``)."""

    @abc.abstractmethod
    def print_result(self, console: Console, outcome: Outcome) -> int:
        """The console summary of a finished run; returns the exit code of ``streambench run``."""

    def closing_note(self, outcome: Outcome) -> str | None:
        """A last word for stderr after the files are written (e.g. how to finish an incomplete run)."""
        return None


class Resumable(abc.ABC):
    """Finishes an interrupted run (``streambench run --resume DIR``)."""

    @abc.abstractmethod
    def can_resume(self, run_dir: Path) -> bool:
        """Whether :meth:`resume` can finish ``run_dir`` (an interrupted run of this protocol)."""

    @abc.abstractmethod
    def resume(self, run_dir: Path, progress: ProgressHook | None) -> Outcome:
        """Finish the run in ``run_dir`` with its own configuration."""


class Reported:
    """What the run store, ``compare`` and the report read of it beyond its result file and headline."""

    def warnings(self, result: BaseModel) -> list[str]:
        """Warnings shown beside the headline."""
        return []

    def incomplete_reason(self, result: BaseModel) -> str | None:
        """Why a result does not finish its run (a sweep runs it again); None: it does."""
        return None

    def frame_latencies_ns(self, run_dir: Path) -> npt.NDArray[np.int64] | None:
        """The per-frame latencies of the run's scored frames, for the rank test of ``compare``; None
        where the protocol keeps none."""
        return None

    def read(self, run_dir: Path, bundle: RunBundle) -> None:
        """Load what the report draws of this protocol into ``bundle`` (see :func:`read`)."""
        _read_result_file(self, run_dir, bundle)  # type: ignore[arg-type]

    def report_sections(self) -> tuple[SectionSpec, ...]:
        """Its sections of the run report, drawn whether or not the run holds its result (a section says
        why it is absent). Empty: the report lists its headline figures instead."""
        return ()


class Swept:
    """Runs in sweeps (``[protocols.<name>]`` of a sweep file)."""

    def sweep_points(self, points: list[dict[str, Any]]) -> list[SweepPoint | None]:
        """The runs one ``[protocols.<name>]`` entry expands into: ``[None]`` (one run) unless the
        protocol splits into points."""
        if points:
            name = getattr(self, "name", "?")
            raise ValueError(f"[protocols.{name}]: points apply to the robustness protocol only")
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
        model: type[BaseModel] | None = getattr(self, "config_model", None)
        return None if model is None else model.model_validate(protocol_tree)

    sweep_headline_timed: bool = False
    """Whether the figure :meth:`sweep_headline` declares depends on the machine (the sweep report then
    shows it per environment fingerprint, never mixed across them)."""

    def sweep_headline(self, result: BaseModel) -> tuple[Figure, str] | None:
        """The one figure of a finished run the sweep report plots against the knobs (``low``/``high``:
        its interval, ``high`` None: open) and how it was reached, in words; None: no such figure
        (:mod:`streambench.harness.sweep.report_headline`)."""
        return None


# -- what the callers use: the part's hook where the protocol has it, else what a protocol without it gets


def print_result(protocol: RunProtocol, console: Console, outcome: Outcome) -> int:
    """Its own summary (:class:`Printed`), or its headline figures; the exit code of ``run``."""
    if isinstance(protocol, Printed):
        return protocol.print_result(console, outcome)
    from streambench.harness.io.safe_text import safe
    from streambench.harness.results.markdown import format_value

    console.print(f"[bold]{safe(protocol.name)}[/]: {safe(protocol.summary)}", highlight=False)
    for figure in protocol.headline(outcome.result):
        shown = format_value(figure.value, figure.unit) if figure.value is not None else "–"
        shown += f" ({figure.reason})" if figure.value is None and figure.reason else ""
        console.print(f"  {safe(figure.label)}: {safe(shown)}", highlight=False)
    return 0


def closing_note(protocol: RunProtocol, outcome: Outcome) -> str | None:
    return protocol.closing_note(outcome) if isinstance(protocol, Printed) else None


def can_resume(protocol: RunProtocol, run_dir: Path) -> bool:
    return isinstance(protocol, Resumable) and protocol.can_resume(run_dir)


def warnings(protocol: RunProtocol, result: BaseModel) -> list[str]:
    return protocol.warnings(result) if isinstance(protocol, Reported) else []


def incomplete_reason(protocol: RunProtocol, result: BaseModel) -> str | None:
    return protocol.incomplete_reason(result) if isinstance(protocol, Reported) else None


def frame_latencies_ns(protocol: RunProtocol, run_dir: Path) -> npt.NDArray[np.int64] | None:
    return protocol.frame_latencies_ns(run_dir) if isinstance(protocol, Reported) else None


def read(protocol: RunProtocol, run_dir: Path, bundle: RunBundle) -> None:
    """Load what the report draws of ``protocol`` into ``bundle``: its result, or why it is absent."""
    if isinstance(protocol, Reported):
        protocol.read(run_dir, bundle)
    else:
        _read_result_file(protocol, run_dir, bundle)


def report_sections(protocol: RunProtocol) -> tuple[SectionSpec, ...]:
    return protocol.report_sections() if isinstance(protocol, Reported) else ()


def sweepable(protocol: RunProtocol) -> bool:
    return isinstance(protocol, Swept)


def _read_result_file(protocol: RunProtocol, run_dir: Path, bundle: RunBundle) -> None:
    path = run_dir / protocol.result_file
    if not path.is_file():
        bundle.missing[protocol.name] = f"no {protocol.result_file} in this run directory"
        return
    try:
        bundle.results[protocol.name] = protocol.load_result(run_dir)
    except ResultFileError as exc:
        bundle.missing[protocol.name] = str(exc).splitlines()[0]
