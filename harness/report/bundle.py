"""What one report shows of one run: its result files, read once, and the sections that draw them
(DESIGN.md "Results"). :func:`streambench.harness.runs.catalog.load_bundle` fills a bundle through the
protocol registry; the report only draws it. A part that is missing or unreadable is absent with the reason,
which the report shows in its place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from markupsafe import Markup
from pydantic import BaseModel

from streambench.harness.results.files import RunResult
from streambench.harness.results.headline import Figure
from streambench.protocols.recording import StreamRecording

__all__ = ["RunBundle", "SectionSpec"]


@dataclass(frozen=True)
class SectionSpec:
    """One section of a run's report: its id (``run<i>-<key>``), its title and how it is drawn: ``render``
    returns the section's HTML as a :class:`markupsafe.Markup` built by
    :mod:`streambench.harness.report.html` (a plain ``str`` is shown as text, escaped)."""

    key: str
    title: str
    render: Callable[[RunBundle], Markup]


@dataclass
class RunBundle:
    """Everything the report reads of one run directory.

    ``results``: each protocol's result, by protocol name; ``missing``: a part (a protocol's name, or
    ``arrays``) -> why it is absent; ``recordings``: the online run's arrays; ``sections``: the sections
    the protocols draw, in registry order (added by :meth:`add_sections`); ``owners``: a section's key ->
    the protocol that draws it; ``headlines``: the figures of the protocols present that draw no section
    of their own; ``others``: every such protocol's result file, by name.
    """

    run_dir: Path
    name: str
    title: str = ""
    """How the run is named before its id: the model's name, then its adapter (results/headline.py
    ``run_title``); empty: only the name (the id) is known."""
    results: dict[str, BaseModel] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    recordings: list[StreamRecording] | None = None
    sections: list[SectionSpec] = field(default_factory=list)
    headlines: dict[str, list[Figure]] = field(default_factory=dict)
    others: dict[str, str] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)
    result_reason: str = "no result.json in this run directory"
    """Why :attr:`result` is None, set by the protocol that writes ``result.json``."""

    def add_sections(self, protocol: str, sections: Sequence[SectionSpec]) -> None:
        """The sections ``protocol`` draws, in its order; the report says once which protocol's run a
        run directory lacks instead of drawing an empty box per section."""
        self.sections.extend(sections)
        self.owners.update((spec.key, protocol) for spec in sections)

    def sections_without_data(self) -> dict[str, list[SectionSpec]]:
        """The sections whose protocol has no result here, by protocol (in section order)."""
        lacking: dict[str, list[SectionSpec]] = {}
        for spec in self.sections:
            owner = self.owners.get(spec.key)
            if owner is not None and owner not in self.results:
                lacking.setdefault(owner, []).append(spec)
        return lacking

    @property
    def label(self) -> str:
        """The run's name first, its id second: ``kws-spotter (torch-module) · 20261129-…``."""
        return f"{self.title} · {self.name}" if self.title and self.title != self.name else self.name

    @property
    def result(self) -> RunResult | None:
        """The run's ``result.json`` (most sections draw it), if it holds a readable one."""
        return next((r for r in self.results.values() if isinstance(r, RunResult)), None)
