"""An A/B latency comparison in one job: interleaved (or duet) rounds, the three-valued gate, the quality
verdict of each side. Shared by ``streambench ab`` and the pytest plugin's gate.

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

import time
from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from streambench.harness.datasets.catalog import SeedKind, seeded
from streambench.harness.execution.code_identity import CodeFile
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.rounds import (
    Rounds,
    RoundsConfig,
    Side,
    SideRounds,
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
from streambench.harness.results.gate_clocks import both_clocks, split_confidence
from streambench.harness.results.gate_noise import streams_for
from streambench.harness.results.quality import MeasurementQuality, judge_quality, refusal
from streambench.harness.results.trust import trust_gaps
from streambench.harness.runs.ab_settings import DEFAULT_GATE, On

MOST_GROWTH = 4
"""Rounds grow from the noise measured (harness/results/gate_noise.py) to at most this many times the
streams per round asked for."""

__all__ = ["ABReport", "On", "SideReport", "run_ab"]


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
    trust_gaps: list[str] = Field(
        default_factory=list,
        description="what of the sealed, sandboxed worker this side did without (harness/results/trust.py)",
    )
    code: list[CodeFile] | None = Field(
        None,
        description="the files this side's adapter code was imported from (its class, and every option "
        "naming module:callable, e.g. a torch-module factory), each hashed by the harness; null: the "
        "side's worker does not say (an older checkout)",
    )


class ABReport(BaseModel):
    """Everything ``streambench ab`` prints and exits on."""

    verdict: Verdict
    exit_code: int
    mode: Literal["alternate", "interleaved", "duet"]
    mode_reason: str
    execution: Literal["sealed", "isolated"] = Field(
        "isolated",
        description="sealed: both sides in sealed workers fed by this process; isolated: each "
        "side's worker builds its own streams (another checkout or interpreter, or --no-sealed)",
    )
    execution_reason: str = ""
    on: On = Field(
        description="the clock judged: wall, cpu, or both (a regression on either, a pass on wall)"
    )
    cpu_clock: str | None = Field(description="on cpu and both: which CPU clock (thread / process)")
    pairs: int
    workers: int = Field(
        description="worker processes started per side (fresh ones every restart_every pairs)"
    )
    looks: int
    planned_looks: int
    look_at: list[int] = Field(default_factory=list, description="pairs at each planned look")
    look_bound: str = Field("", description="what set the last planned look (max_rounds, the budget)")
    stop: str = Field("", description="why the job ended: decided, budget, max_rounds, one look")
    budget_s: float | None = Field(None, description="the job's wall-time budget")
    resized: list[str] = Field(
        default_factory=list, description="each growth of the rounds after a look, from the noise measured"
    )
    differs_from_run: list[str] = Field(
        default_factory=list,
        description="what this job measures differently from streambench run with its defaults (the mode, "
        "fresh workers, the CPU clock, the data...)",
    )
    confidence: float = Field(description="two-sided level for the whole job (its lower half: false alarms)")
    confidence_per_look: float
    pass_confidence: float = Field(description="one-sided level of the upper bound a pass needs (whole job)")
    pass_confidence_per_look: float
    orders: list[str] = Field(description="per pair: the order (interleaved) or the cores (duet)")
    streams_per_round: int
    sides: list[SideReport]
    gate: GateResult
    gate_cpu: GateResult | None = Field(
        None,
        description="on both: the CPU-time gate of the same pairs (its regressions count; a pass does not)",
    )
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


_MODES = {
    "alternate": "the sides' frames in turn, both workers on one core (run: frames back to back, the worker "
    "on any core)",
    "interleaved": "rounds of the two sides in turn (run: one stream after another in one worker)",
    "duet": "both sides' rounds at once, one core each (run: one worker on any core)",
}


def differs_from_run(job: Rounds, side: Side, restart_every: int | None) -> list[str]:
    """What this job measures differently from ``streambench run`` with its defaults (the same model, the
    same frames otherwise: the sealed worker, its threads, its warm-up, the timed window)."""
    run, default = side.run, RunConfig()
    found = [_MODES[job.mode]]
    if restart_every:
        found.append(f"fresh worker processes every {restart_every} pair(s) (run: one worker for the run)")
    if job.execution != "sealed":
        found.append(f"{job.execution} workers: {job.execution_reason} (run: sealed)")
    if run.engine.cpu_time != default.engine.cpu_time:
        clock = run.engine.cpu_time
        found.append(
            f"the CPU clock ({clock}) read beside the wall clock, outside the timed window (run: not read)"
        )
    for name in ("warmup_frames", "pacing", "device_timing"):
        mine, theirs = getattr(run.engine, name), getattr(default.engine, name)
        if mine != theirs:
            found.append(f"engine.{name} = {mine} (run: {theirs})")
    if run.threads != default.threads:
        found.append(f"threads {run.threads.model_dump(exclude_defaults=True)} (run: streambench's default)")
    if run.data != default.data:
        found.append(f"data: {describe_data(run.data)} (run: {describe_data(default.data)})")
    return found


def describe_data(data: Any) -> str:
    """A data set in a few words (its kind, and the size of a synthetic one)."""
    if getattr(data, "kind", None) == "synthetic":
        return f"{data.num_streams} synthetic streams of {data.duration_s:g} s"
    return f"the {getattr(data, 'kind', 'configured')} data set"


def _with_cpu_time(side: Side) -> Side:
    """The side with its engine recording each ``predict()``'s thread CPU time (outside the timed window)."""
    engine = side.run.engine
    if engine.cpu_time != "off":
        return side
    run = side.run.model_copy(update={"engine": engine.model_copy(update={"cpu_time": "thread"})})
    return side.model_copy(update={"run": run})


def _judge_job(
    job: Rounds, rules: tuple[FailRule, ...], on: On, confidence: float, pass_confidence: float
) -> tuple[GateResult, GateResult | None, float, float]:
    """The gate at this look: the verdict, the CPU-time gate beside it (``on="both"``), and the two
    per-look levels used (the lower one per clock)."""
    looks = job.planned_looks
    pass_level = per_look_confidence(pass_confidence, looks)
    level = per_look_confidence(confidence, looks)
    cpu_rounds = (job.base.cpu_ns, job.head.cpu_ns)
    if on == "both" and None not in cpu_rounds:
        level = split_confidence(level)
        wall = judge(job.base.latency_ns, job.head.latency_ns, rules, level, "wall", pass_level)
        cpu = judge(job.base.cpu_ns or [], job.head.cpu_ns or [], rules, level, "cpu", pass_level)
        return both_clocks(wall, cpu), cpu, level, pass_level
    clock: Literal["wall", "cpu"] = "cpu" if on == "cpu" else "wall"
    gate = judge(_rounds_of(job.base, clock), _rounds_of(job.head, clock), rules, level, clock, pass_level)
    return gate, None, level, pass_level


def run_ab(
    base: Side,
    head: Side,
    rounds: RoundsConfig,
    rules: tuple[FailRule, ...],
    on: On = DEFAULT_GATE.on,
    confidence: float = DEFAULT_GATE.confidence,
    force: bool = DEFAULT_GATE.force,
    progress: Callable[[Rounds], None] | None = None,
    isolation: IsolationConfig | None = None,
    pass_confidence: float = DEFAULT_GATE.pass_confidence,
) -> ABReport:
    """Run and judge. ``on``: ``wall``, ``cpu`` (the thread CPU time of ``predict()``) or ``both`` (a
    regression on either, a pass on wall time: harness/results/gate_clocks.py); CPU time is recorded for
    ``cpu`` and ``both``. Both error rates (``confidence``'s lower half, ``1 - pass_confidence``) are
    spread over the planned looks (:func:`~streambench.harness.results.gate.per_look_confidence`)."""
    check_gate(rules, confidence, pass_confidence)  # before any round: a bad rule costs no measuring
    differ = side_differences(base.run, head.run, (base.label, head.label))
    if differ is not None:  # a per-frame latency compares only over the same frames
        raise ValueError(f"{differ}; ab sets two models against each other on the same data")
    if on != "wall":
        base, head = _with_cpu_time(base), _with_cpu_time(head)
    base, head, seed_kind = _same_streams(base, head)
    started = time.monotonic()
    keys = sorted({rule.key for rule in rules})

    def size(job: Rounds, streams: int) -> tuple[int, str] | None:
        """Rounds sized from the wall-time noise of the pairs so far (CPU time's, on cpu)."""
        sides: list[list[list[np.ndarray]]] = []
        for side in (job.base, job.head):
            pairs = [[r.cpu_ns if on == "cpu" else r.latency_ns for r in pair] for pair in side.recordings]
            if any(v is None for pair in pairs for v in pair):
                return None
            sides.append([[v for v in pair if v is not None] for pair in pairs])
        return streams_for(sides[0], sides[1], keys, streams, MOST_GROWTH * rounds.streams_per_round)

    job = run_rounds(
        base,
        head,
        rounds,
        size=size,
        decide=lambda job: (
            _judge_job(job, rules, on, confidence, pass_confidence)[0].verdict != "inconclusive"
        ),
        progress=progress,
        isolation=isolation,
    )
    gate, gate_cpu, level, pass_level = _judge_job(job, rules, on, confidence, pass_confidence)
    qualities = {job.base.label: _quality(job.base), job.head.label: _quality(job.head)}
    refused = None if force else refusal(qualities, "no verdict is called, pass or fail")
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
            code=measured.code,
            trust_gaps=trust_gaps(job.execution, measured.sandbox),
        )
        for spec, measured in ((base, job.base), (head, job.head))
    ]
    assert job.plan is not None
    return ABReport(
        verdict=verdict,
        exit_code=EXIT_CODES[verdict],
        mode=job.mode,
        mode_reason=job.mode_reason,
        execution=job.execution,
        execution_reason=job.execution_reason,
        on=on,
        cpu_clock=job.base.cpu_clock if on != "wall" else None,
        pairs=job.pairs,
        workers=job.workers,
        looks=job.looks,
        planned_looks=job.planned_looks,
        look_at=job.plan.at,
        look_bound=job.plan.bound,
        stop=job.stop,
        budget_s=rounds.budget_s,
        confidence=confidence,
        confidence_per_look=level,
        pass_confidence=pass_confidence,
        pass_confidence_per_look=pass_level,
        orders=job.orders,
        streams_per_round=rounds.streams_per_round,
        resized=job.resized,
        differs_from_run=differs_from_run(job, base, rounds.restart_every),
        sides=sides,
        gate=gate,
        gate_cpu=gate_cpu,
        refusal=refused,
        forced=force,
        seconds=time.monotonic() - started,
        data_seed=getattr(base.run.data, "seed", None),
        data_seed_kind=seed_kind,
    )
