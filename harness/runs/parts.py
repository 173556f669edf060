"""0.2's opt-in parts of a protocol, kept so that a protocol written against them still runs. Their hooks
are now methods of every protocol (:class:`~streambench.harness.runs.contract.ProtocolContract`) with the
defaults a protocol without the part got, so a protocol lists no part. Listing one still works: it adds
nothing but :class:`Swept`'s ``sweepable``; and ``isinstance(protocol, Part)`` says whether a protocol has
the part's behaviour of its own (it overrides the part's hooks, or is sweepable). The functions below call
the protocol's method, as the callers did before the parts became methods.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from streambench.harness.runs.contract import ProtocolContract

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from pydantic import BaseModel
    from rich.console import Console

    from streambench.harness.report.bundle import RunBundle, SectionSpec
    from streambench.harness.runs.contract import Outcome

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

_Protocol = ProtocolContract[Any, Any]


class _Part(abc.ABC):  # noqa: B024  # no abstract method: a part adds nothing a protocol must write
    hooks: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __subclasshook__(cls, candidate: type) -> bool | Any:
        """A protocol has the part when it overrides one of the part's hooks (asked of the part itself
        only; by the MRO, never ``issubclass``, which would ask every protocol class again)."""
        if cls not in _PARTS or ProtocolContract not in candidate.__mro__:
            return NotImplemented
        own = any(getattr(candidate, hook) is not getattr(ProtocolContract, hook) for hook in cls.hooks)
        return own or NotImplemented


class Printed(_Part):
    """A console summary of its own (``print_result``, ``closing_note``)."""

    hooks: ClassVar[tuple[str, ...]] = ("print_result", "closing_note")


class Resumable(_Part):
    """Finishes an interrupted run (``can_resume``, ``resume``)."""

    hooks: ClassVar[tuple[str, ...]] = ("can_resume", "resume")


class Reported(_Part):
    """What the store, ``compare`` and the report read beyond the result file and headline."""

    hooks: ClassVar[tuple[str, ...]] = (
        "warnings",
        "incomplete_reason",
        "frame_latencies_ns",
        "read",
        "report_sections",
    )


class Swept(_Part):
    """Runs in sweeps (``sweepable``)."""

    hooks: ClassVar[tuple[str, ...]] = ("sweepable",)
    sweepable: ClassVar[bool] = True


_PARTS = (Printed, Resumable, Reported, Swept)


def print_result(protocol: _Protocol, console: Console, outcome: Outcome[Any]) -> int:
    return protocol.print_result(console, outcome)


def closing_note(protocol: _Protocol, outcome: Outcome[Any]) -> str | None:
    return protocol.closing_note(outcome)


def can_resume(protocol: _Protocol, run_dir: Path) -> bool:
    return protocol.can_resume(run_dir)


def warnings(protocol: _Protocol, result: BaseModel) -> list[str]:
    return protocol.warnings(result)


def incomplete_reason(protocol: _Protocol, result: BaseModel) -> str | None:
    return protocol.incomplete_reason(result)


def frame_latencies_ns(protocol: _Protocol, run_dir: Path) -> npt.NDArray[np.int64] | None:
    return protocol.frame_latencies_ns(run_dir)


def read(protocol: _Protocol, run_dir: Path, bundle: RunBundle) -> None:
    protocol.read(run_dir, bundle)


def report_sections(protocol: _Protocol) -> tuple[SectionSpec, ...]:
    return protocol.report_sections()


def sweepable(protocol: _Protocol) -> bool:
    return protocol.sweepable
