"""A sweep's runs grouped by configuration: every run of one adapter label, protocol, perturbation point
and grid values, whatever its seed and repeat, is one configuration, shown as the median and range of
its runs (so a model is never shown "dominated" by its own repeat).

Median and range (min–max), not mean and standard deviation: a sweep has few repeats (often 2-5), where
the median is not pulled by one disturbed run and the range shows every run (Tukey 1977, the summary of
a small batch). Timings are grouped per environment fingerprint as well and never pooled across
fingerprints (DESIGN.md "Results"). Nothing is computed that the runs did not measure: a
figure no run of a configuration measured has no spread, only the reason.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence

from pydantic import BaseModel, Field

__all__ = ["ConfigRow", "RunFacts", "Spread", "group_quality", "group_timings"]


class Spread(BaseModel):
    """The median and range of a figure over the ``n`` runs of a configuration that measured it."""

    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Spread | None:
        """The spread of the measured values (``None`` ones left out); ``None`` when none is."""
        measured = [float(v) for v in values if v is not None]
        if not measured:
            return None
        return cls(median=statistics.median(measured), low=min(measured), high=max(measured), n=len(measured))

    @property
    def varies(self) -> bool:
        """Whether the runs disagree (a range worth showing)."""
        return self.high > self.low


class RunFacts(BaseModel):
    """What the grouping reads of one run (a :class:`streambench.harness.sweep.report.RunRow` satisfies
    it)."""

    run_id: str
    label: str
    protocol: str
    config: str = Field(description="point and grid values: the configuration without seed and repeat")
    seed: int
    repeat: int
    status: str
    fingerprint: str | None = None
    quality: dict[str, float | None] = Field(default_factory=dict)
    timings: dict[str, float | None] = Field(default_factory=dict)
    speedup: float | None = None
    speedup_reason: str | None = None


class ConfigRow(BaseModel):
    """One configuration: its runs (planned, done, failed), seeds and repeats, and each figure's spread
    (``None``: no run measured it). ``fingerprint``: set for a timing row (its runs' environment)."""

    label: str
    protocol: str
    config: str
    fingerprint: str | None = None
    run_ids: list[str]
    planned: int
    done: int
    failed: int
    seeds: list[int]
    repeats: int
    figures: dict[str, Spread | None]
    speedup: Spread | None = None
    speedup_reason: str | None = None

    @property
    def name(self) -> str:
        """How the configuration is named in tables and plots: its label, then its point and grid."""
        return f"{self.label} {self.config}".strip()


def _groups(rows: Iterable[RunFacts], key: Callable[[RunFacts], tuple[str, ...]]) -> list[list[RunFacts]]:
    """The runs grouped by ``key``, groups in order of first appearance (the sweep's order)."""
    grouped: dict[tuple[str, ...], list[RunFacts]] = {}
    for row in rows:
        grouped.setdefault(key(row), []).append(row)
    return list(grouped.values())


def _figures(
    done: Sequence[RunFacts], which: Callable[[RunFacts], dict[str, float | None]]
) -> dict[str, Spread | None]:
    keys = list(dict.fromkeys(k for row in done for k in which(row)))
    return {k: Spread.of(which(row).get(k) for row in done) for k in keys}


def _config_row(
    runs: Sequence[RunFacts], done: Sequence[RunFacts], figures: dict[str, Spread | None]
) -> ConfigRow:
    first = runs[0]
    return ConfigRow(
        label=first.label,
        protocol=first.protocol,
        config=first.config,
        run_ids=[r.run_id for r in runs],
        planned=len(runs),
        done=len(done),
        failed=sum(1 for r in runs if r.status == "failed"),
        seeds=sorted({r.seed for r in runs}),
        repeats=len({r.repeat for r in runs}),
        figures=figures,
    )


def group_quality(rows: Sequence[RunFacts]) -> list[ConfigRow]:
    """One row per configuration over every run (quality does not depend on the machine)."""
    out = []
    for runs in _groups(rows, lambda r: (r.label, r.protocol, r.config)):
        done = [r for r in runs if r.status == "done"]
        out.append(_config_row(runs, done, _figures(done, lambda r: r.quality)))
    return out


def group_timings(rows: Sequence[RunFacts], fingerprint: str) -> list[ConfigRow]:
    """One row per configuration over its finished runs with timings on ``fingerprint``, with the spread
    of their speed-ups against the baseline (the reason when none has one)."""
    out = []
    timed = [r for r in rows if r.fingerprint == fingerprint and r.status == "done" and r.timings]
    for runs in _groups(timed, lambda r: (r.label, r.protocol, r.config)):
        row = _config_row(runs, runs, _figures(runs, lambda r: r.timings))
        row.fingerprint = fingerprint
        row.speedup = Spread.of(r.speedup for r in runs)
        reasons = sorted({r.speedup_reason for r in runs if r.speedup is None and r.speedup_reason})
        row.speedup_reason = "; ".join(reasons) or None
        out.append(row)
    return out
