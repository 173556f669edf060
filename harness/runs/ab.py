"""An A/B latency comparison in one job: interleaved (or duet) rounds, the three-valued gate, the quality
verdict of each side (issue 16). Shared by ``streambench ab`` and the pytest plugin's gate.

:func:`run_ab` runs the rounds (harness/execution/rounds.py), judges the pairs of rounds
(harness/results/gate.py; on wall time, or with ``on="cpu"`` on the CPU time of the thread that ran
``predict()``), judges each side's measurement quality (harness/results/quality.py) and, when either side
is INVALID, refuses to call a regression unless forced (the verdict is then *inconclusive*).

Both sides run the same streams: a data set whose seed is unset gets **one** secret seed, drawn here in
the parent (:func:`streambench.harness.datasets.catalog.seeded`) and given to both sides, so the gate compares
the two models on the same data. Each side's worker builds its streams itself (it may be an older checkout),
so it is told the seed: that costs nothing here, where only latency is judged, and the report records
the seed and whether it was secret (``data_seed``, ``data_seed_kind``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from streambench.harness.datasets.catalog import SeedKind, seeded
from streambench.harness.execution.config import IsolationConfig
from streambench.harness.execution.rounds import (
    Rounds,
    RoundsConfig,
    Side,
    SideRounds,
    planned_looks,
    run_rounds,
)
from streambench.harness.instruments.interference import cpu_frequency_khz
from streambench.harness.results.compare import FailRule
from streambench.harness.results.framing import side_differences
from streambench.harness.results.gate import (
    EXIT_CODES,
    GateResult,
    Verdict,
    check_gate,
    judge,
    per_look_confidence,
)
from streambench.harness.results.quality import MeasurementQuality, judge_quality, refusal

__all__ = ["ABReport", "SideReport", "ab_markdown", "interval_levels", "run_ab", "side_titles"]


class SideReport(BaseModel):
    label: str
    adapter: str
    adapter_name: str
    adapter_options: dict[str, Any]
    python: str
    pythonpath: list[str]
    frames: int
    quality: MeasurementQuality
    clock: Literal["agree", "disagree"] | None = Field(
        None,
        description="sealed jobs: the parent's clock against this side's worker's, over the rounds "
        "(disagree: most rounds disagreed, its latencies are not the model's); null: isolated workers",
    )
    clock_rounds: list[str] = Field(default_factory=list, description="the verdict of each round")


class ABReport(BaseModel):
    """Everything ``streambench ab`` prints and exits on."""

    verdict: Verdict
    exit_code: int
    mode: Literal["interleaved", "duet"]
    mode_reason: str
    execution: Literal["sealed", "isolated"] = Field(
        "isolated",
        description="sealed: both sides in sealed workers fed by this process (issue 24); isolated: each "
        "side's worker builds its own streams (another checkout or interpreter, or --no-sealed)",
    )
    execution_reason: str = ""
    on: Literal["wall", "cpu"]
    cpu_clock: str | None = Field(description="on cpu: which CPU clock (thread / process)")
    pairs: int
    workers: int = Field(
        description="worker processes started per side (fresh ones every restart_every pairs)"
    )
    looks: int
    planned_looks: int
    confidence: float = Field(description="two-sided level for the whole job (its lower half: false alarms)")
    confidence_per_look: float
    pass_confidence: float = Field(description="one-sided level of the upper bound a pass needs (whole job)")
    pass_confidence_per_look: float
    orders: list[str] = Field(description="per pair: the order (interleaved) or the cores (duet)")
    streams_per_round: int
    sides: list[SideReport]
    gate: GateResult
    refusal: str | None = Field(description="why a regression the gate saw was not called (INVALID side)")
    forced: bool
    seconds: float
    data_seed: int | None = Field(None, description="the seed both sides' streams were built from")
    data_seed_kind: SeedKind | None = Field(
        None, description="secret: drawn for this job; public: given (--seed, --config); null: no seed"
    )


def _rounds_of(side: SideRounds, on: Literal["wall", "cpu"]) -> list[np.ndarray]:
    if on == "wall":
        return side.latency_ns
    if side.cpu_ns is None:
        raise ValueError(f"{side.label}: no CPU time was recorded (its engine does not support cpu_time)")
    return side.cpu_ns


def _quality(side: SideRounds) -> MeasurementQuality:
    switches = side.involuntary_switches
    latency = np.concatenate(side.latency_ns) if side.latency_ns else np.zeros(0, dtype=np.int64)
    return judge_quality(
        latency,
        streams=sum(len(r) for r in side.recordings),
        involuntary_switches=None if None in switches else sum(s or 0 for s in switches),
        clock_resolution_ns=time.get_clock_info("perf_counter").resolution * 1e9,
        cpu_frequency=cpu_frequency_khz(),
    )


def _same_streams(base: Side, head: Side) -> tuple[Side, Side, SeedKind | None]:
    """Both sides with their data set's seed fixed: one secret seed for both where it is unset."""
    base_data, kind = seeded(base.run.data)
    secret = getattr(base_data, "seed", None) if kind == "secret" else None
    head_data, head_kind = seeded(head.run.data, secret)
    if kind != head_kind:
        raise ValueError(
            f"{base.label} and {head.label} must both give the data set's seed or both leave it unset "
            "(one secret seed is then drawn for both)"
        )

    def fixed(side: Side, data: Any) -> Side:
        return side.model_copy(update={"run": side.run.model_copy(update={"data": data})})

    return fixed(base, base_data), fixed(head, head_data), kind


def run_ab(
    base: Side,
    head: Side,
    rounds: RoundsConfig,
    rules: tuple[FailRule, ...],
    on: Literal["wall", "cpu"] = "wall",
    confidence: float = 0.95,
    force: bool = False,
    progress: Callable[[Rounds], None] | None = None,
    isolation: IsolationConfig | None = None,
    pass_confidence: float = 0.995,
) -> ABReport:
    """Run and judge; ``on="cpu"`` needs both sides' engines to record CPU time (``engine.cpu_time``).
    Both error rates (``confidence``'s lower half, ``1 - pass_confidence``) are spread over the planned
    looks (:func:`~streambench.harness.results.gate.per_look_confidence`)."""
    check_gate(rules, confidence, pass_confidence)  # before any round: a bad rule costs no measuring
    differ = side_differences(base.run, head.run, (base.label, head.label))
    if differ is not None:  # issue 27 item 5: a per-frame latency compares only over the same frames
        raise ValueError(f"{differ}; ab sets two models against each other on the same data")
    base, head, seed_kind = _same_streams(base, head)
    started = time.monotonic()
    looks = planned_looks(rounds)
    level = per_look_confidence(confidence, looks)
    pass_level = per_look_confidence(pass_confidence, looks)

    def judged(job: Rounds) -> GateResult:
        base_rounds, head_rounds = _rounds_of(job.base, on), _rounds_of(job.head, on)
        return judge(base_rounds, head_rounds, rules, level, on, pass_level)

    job = run_rounds(
        base,
        head,
        rounds,
        decide=lambda job: judged(job).verdict != "inconclusive",
        progress=progress,
        isolation=isolation,
    )
    gate = judged(job)
    qualities = {job.base.label: _quality(job.base), job.head.label: _quality(job.head)}
    refused = refusal(qualities) if gate.verdict == "regression" and not force else None
    stopped = [s.label for s in (job.base, job.head) if s.clock_verdict() == "disagree"]
    if stopped:  # no verdict on figures a side's own clock made up, pass or fail, --force or not
        refused = (
            f"the parent's clock disagrees with the worker's of {' and '.join(stopped)} in most rounds "
            "(a stopped or slowed clock, or work after predict() returned): its latencies are not the "
            "model's; no verdict is called"
        )
    verdict: Verdict = "inconclusive" if refused else gate.verdict
    sides = [
        SideReport(
            label=spec.label,
            adapter=spec.run.adapter,
            adapter_name=measured.adapter,
            adapter_options=spec.run.adapter_options,
            python=spec.command.python,
            pythonpath=spec.command.pythonpath,
            frames=int(sum(r.size for r in measured.latency_ns)),
            quality=qualities[spec.label],
            clock=measured.clock_verdict(),
            clock_rounds=measured.clocks,
        )
        for spec, measured in ((base, job.base), (head, job.head))
    ]
    return ABReport(
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        mode=job.mode,
        mode_reason=job.mode_reason,
        execution=job.execution,
        execution_reason=job.execution_reason,
        on=on,
        cpu_clock=job.base.cpu_clock if on == "cpu" else None,
        pairs=job.pairs,
        workers=job.workers,
        looks=job.looks,
        planned_looks=looks,
        confidence=confidence,
        confidence_per_look=level,
        pass_confidence=pass_confidence,
        pass_confidence_per_look=pass_level,
        orders=job.orders,
        streams_per_round=rounds.streams_per_round,
        sides=sides,
        gate=gate,
        refusal=refused,
        forced=force,
        seconds=time.monotonic() - started,
        data_seed=getattr(base.run.data, "seed", None),
        data_seed_kind=seed_kind,
    )


def interval_levels(report: ABReport) -> str:
    """What the intervals are: their two one-sided levels per look, and the looks."""
    return (
        f"intervals: lower bound {1 - (1 - report.confidence_per_look) / 2:.4g}, upper bound "
        f"{report.pass_confidence_per_look:.4g} (one-sided; {report.looks} of {report.planned_looks} planned "
        "looks)"
    )


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{(value - 1) * 100:+.1f} %"


def side_titles(report: ABReport) -> tuple[str, str]:
    """What tells the two sides apart, for a header (issue 27, item 8: not "X vs X" when only options,
    the checkout or the interpreter differ): the adapter, plus whatever differs of its options, its
    ``PYTHONPATH`` and its interpreter."""
    base, head = report.sides
    titles = [[side.adapter] for side in (base, head)]
    keys = sorted(set(base.adapter_options) | set(head.adapter_options))
    differing = [k for k in keys if base.adapter_options.get(k) != head.adapter_options.get(k)]
    for title, side in zip(titles, (base, head), strict=True):
        if differing:
            shown = ", ".join(f"{k}={side.adapter_options.get(k, '(default)')}" for k in differing)
            title.append(f"({shown})")
        if base.pythonpath != head.pythonpath:
            title.append(f"[PYTHONPATH {os.pathsep.join(side.pythonpath)}]")
        if base.python != head.python:
            title.append(f"[{side.python}]")
    return " ".join(titles[0]), " ".join(titles[1])


def ab_markdown(report: ABReport) -> str:
    """The report as Markdown (a CI job summary)."""
    base, head = report.sides
    base_title, head_title = side_titles(report)
    lines = [
        f"### streambench ab: **{report.verdict}** (exit {report.exit_code})",
        "",
        f"{base.label} `{base_title}` vs {head.label} `{head_title}` · {report.mode} mode "
        f"({report.mode_reason}) · {report.execution} workers ({report.execution_reason}) · "
        f"{report.pairs} pairs of rounds, {report.streams_per_round} streams each, "
        f"{report.workers} worker processes per side · "
        f"judged on {'CPU time (' + str(report.cpu_clock) + ')' if report.on == 'cpu' else 'wall time'} · "
        f"{interval_levels(report)}",
        "",
        "| figure | base (median of rounds) | head | head / base | interval | noise between pairs |",
        "|---|---:|---:|---:|---|---:|",
    ]
    for e in report.gate.effects:
        lines.append(
            f"| {e.key} | {e.base_median / 1e6:.4g} ms | {e.head_median / 1e6:.4g} ms | {_pct(e.ratio)} | "
            f"[{_pct(e.low)}, {_pct(e.high)}] | ±{e.pair_spread:.1%} |"
        )
    lines += ["", "| rule | verdict | why |", "|---|---|---|"]
    for v in report.gate.rules:
        label = v.verdict + (" (improvement)" if v.improvement else "")
        lines.append(f"| `{v.rule.describe()}` | {label} | {v.reason} |")
    lines += ["", "| side | measurement | reasons / notes |", "|---|---|---|"]
    for side in report.sides:
        why = "; ".join(side.quality.reasons + side.quality.notes) or "–"
        lines.append(f"| {side.label} | {side.quality.verdict} | {why} |")
    if report.refusal:
        lines += ["", f"**Not called:** {report.refusal}"]
    return "\n".join(lines) + "\n"
