"""Interleaved rounds of two sides, base and head, for the A/B latency gate (``streambench ab``).

Each side runs in its own worker process (:class:`~streambench.harness.execution.isolation.IsolatedEngine`
with a :class:`~streambench.harness.execution.worker_process.WorkerCommand`: its own interpreter,
``PYTHONPATH``, adapter and options), warmed up once. A **pair** is one round of each side on the same few
streams:

* ``interleaved``: the two rounds of a pair run one after the other, in an order drawn at random per pair
  (ABBA-free randomisation, so neither side always runs first, when the caches are cold or a periodic
  load starts); a drift in the machine's load between pairs hits both sides of a pair alike.
* ``duet`` (Bulej et al., "Duet Benchmarking: Improving Measurement Accuracy in the Cloud", ICPE 2020):
  the two rounds of a pair run **at the same time**, each worker pinned (``sched_setaffinity``) to its
  own core, in lockstep (a pair ends when both rounds have), so both sides share the interference of
  that moment. Which side gets which core is drawn at random per pair, so a core that is busier than the
  other does not favour one side. ``auto`` picks duet where this process may use at least
  :data:`DUET_MIN_CORES` cores (one per side, one for the harness and the rest of the machine), else
  interleaved, and says why.

Worker processes: by default each pair runs on **fresh workers** of both sides (pyperf's convention of
many worker processes): two processes of the same code differ in speed by a few per cent for the whole
of their life (memory layout, hash seed; measured here at -1 .. +4 % for one loop), an effect rounds inside
one pair of processes never see and an interval over them would not cover. ``restart_every`` trades that
for fewer starts.

Sequential stopping: the first look after ``rounds`` pairs, then one every ``step`` pairs up to
``max_rounds``; the caller's ``decide`` says whether the verdict is reached (it spends its error rate over
:func:`planned_looks`, :func:`streambench.harness.results.gate.per_look_confidence`).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from streambench.harness.execution.code_identity import CodeFile, same_code
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.host_timing import judge_host_timing
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.lockstep import Lockstep
from streambench.harness.execution.rounds_plan import LookPlan, Stop, fits, plan_looks
from streambench.harness.execution.sandbox import SandboxRecord
from streambench.harness.execution.worker_errors import on_side
from streambench.harness.execution.worker_process import WorkerCommand, pin, runs_this_harness
from streambench.protocols.recording import StreamRecording

__all__ = [
    "DUET_MIN_CORES",
    "Rounds",
    "RoundsConfig",
    "Side",
    "SideRounds",
    "choose_execution",
    "choose_mode",
    "planned_looks",
    "run_rounds",
]

DUET_MIN_CORES = 3
Mode = Literal["alternate", "interleaved", "duet"]
Execution = Literal["sealed", "isolated"]


def choose_execution(base: Side, head: Side, isolation: IsolationConfig | None) -> tuple[Execution, str]:
    """Sealed workers for both sides (the data, its clock and the frames' order stay in this
    process, each worker in its sandbox) when both sides run this very harness; otherwise both sides are
    isolated workers of their own checkouts, each building its streams itself: a sealed worker speaks this
    process's protocol, which another checkout's (an older commit's) need not. Both sides always run the
    same way, so that neither pays a cost the other does not."""
    if isolation is not None and not isolation.sealed:
        return "isolated", "--no-sealed"
    others = [side.label for side in (base, head) if not runs_this_harness(side.command)]
    if others:
        return "isolated", (
            f"{' and '.join(others)} run{'s' if len(others) == 1 else ''} another checkout or interpreter "
            "(its own harness builds its streams): sealed workers run this harness only"
        )
    return "sealed", "both sides run this harness: sealed workers, the data held by this process"


class Side(BaseModel):
    """One side of the comparison: the run it makes and how its worker is started."""

    model_config = ConfigDict(extra="forbid")

    label: str
    run: RunConfig
    command: WorkerCommand = Field(default_factory=WorkerCommand)


class RoundsConfig(BaseModel):
    """How many rounds, how large, in which mode, for how long."""

    model_config = ConfigDict(extra="forbid")

    rounds: int = Field(12, ge=1, description="pairs of rounds before the first look")
    max_rounds: int | None = Field(
        None, ge=1, description="sequential: add pairs up to this many (default: as many as budget_s allows)"
    )
    step: int | None = Field(
        None,
        ge=1,
        description="sequential: pairs added between looks (default: half as many again as at the last look)",
    )
    budget_s: float | None = Field(
        300.0,
        gt=0,
        description="sequential: the job's wall-time budget; pairs are added until the verdict is decided or "
        "the next look would not fit (None, with no max_rounds: one look after rounds pairs)",
    )
    streams_per_round: int = Field(2, ge=1, description="streams each side runs per round")
    mode: Literal["auto", "alternate", "interleaved", "duet"] = Field(
        "auto",
        description="alternate: the sides' frames one by one in turn (sealed workers); interleaved: rounds "
        "one after the other; duet: both rounds at once, one core each; auto: duet on 3 cores or more, "
        "else alternate where the workers are sealed, else interleaved",
    )
    seed: int = Field(0, description="seed of the order within pairs and of the cores in duet mode")
    restart_every: int | None = Field(
        1,
        ge=1,
        description="fresh worker processes for both sides every this many pairs (None: one per side for the "
        "job); a process's own speed (memory layout, hash seed) differs from the next one's by a few per "
        "cent, which rounds in one process cannot see",
    )

    @model_validator(mode="after")
    def _max_after_first(self) -> RoundsConfig:
        if self.max_rounds is not None and self.max_rounds < self.rounds:
            raise ValueError(f"max_rounds ({self.max_rounds}) is below rounds ({self.rounds})")
        return self


def planned_looks(config: RoundsConfig, seconds_per_pair: float | None = None) -> LookPlan:
    """The looks of a job of ``config`` whose first pair took ``seconds_per_pair``
    (harness/execution/rounds_plan.py)."""
    return plan_looks(config.rounds, config.max_rounds, config.step, config.budget_s, seconds_per_pair)


@dataclass
class SideRounds:
    """What one side measured, round by round (round ``k`` pairs with the other side's round ``k``)."""

    label: str
    adapter: str
    latency_ns: list[np.ndarray] = field(default_factory=list)
    cpu_ns: list[np.ndarray] | None = field(default_factory=list)
    cpu_clock: str | None = None
    involuntary_switches: list[int | None] = field(default_factory=list)
    recordings: list[list[StreamRecording]] = field(default_factory=list)
    clocks: list[str] = field(default_factory=list)
    """Per round of a sealed job: the parent's clock against the worker's (``agree``, ``disagree``,
    ``not-checked``; harness/execution/host_timing.py); empty for isolated workers (no parent clock)."""
    code: list[CodeFile] | None = None
    """The files the side's adapter code came from (its first worker's report, hashed here); None: an
    older checkout's worker does not say."""
    sandbox: SandboxRecord | None = None
    """Its first sealed worker's sandbox (None: isolated workers)."""

    def clock_verdict(self) -> Literal["agree", "disagree"] | None:
        """``disagree`` when the parent's clock disagreed with the worker's in most checked rounds (a
        stopped or slowed clock, work after predict() returned: the latencies are not the model's);
        ``agree`` when checked and not; None when no round was checked."""
        checked = [c for c in self.clocks if c != "not-checked"]
        if not checked:
            return None
        return "disagree" if 2 * checked.count("disagree") > len(checked) else "agree"

    def add(self, recordings: list[StreamRecording]) -> None:
        self.recordings.append(recordings)
        self.latency_ns.append(np.concatenate([r.latency_ns for r in recordings]))
        if self.cpu_ns is not None and all(r.cpu_ns is not None for r in recordings):
            self.cpu_ns.append(np.concatenate([r.cpu_ns for r in recordings if r.cpu_ns is not None]))
            self.cpu_clock = recordings[0].cpu_clock
        else:
            self.cpu_ns = None
        counts = [r.context_switches.get("involuntary") for r in recordings]
        self.involuntary_switches.append(None if None in counts else sum(c or 0 for c in counts))


@dataclass
class Rounds:
    """The job: both sides' rounds, the mode that ran and why, the order (or cores) of every pair."""

    mode: Mode
    mode_reason: str
    base: SideRounds
    head: SideRounds
    orders: list[str] = field(default_factory=list)
    stream_ids: list[list[str]] = field(default_factory=list)
    looks: int = 0
    workers: int = 0
    execution: Execution = "sealed"
    execution_reason: str = ""
    plan: LookPlan | None = None
    """The looks planned after the first pair (its speed and the budget)."""
    stop: Stop = "one look"
    """Why the job ended: decided, the budget or max_rounds reached, or its only look made."""
    seconds: float = 0.0
    """Wall time of the pairs (worker starts included)."""
    resized: list[str] = field(default_factory=list)
    """Each growth of the rounds after a look (from the noise measured in the pairs so far)."""

    @property
    def planned_looks(self) -> int:
        return self.plan.looks if self.plan is not None else 1

    @property
    def pairs(self) -> int:
        return len(self.orders)


def choose_mode(
    requested: Literal["auto", "alternate", "interleaved", "duet"], execution: Execution = "sealed"
) -> tuple[Mode, str]:
    """The mode to run and why (duet needs a core per side, ``auto`` also leaves one for the rest;
    alternate needs sealed workers, whose frames this process feeds)."""
    cores = len(os.sched_getaffinity(0))
    if requested == "interleaved":
        return "interleaved", "asked for"
    if requested == "alternate":
        if execution != "sealed":
            raise ValueError("alternate mode feeds both sides' frames in turn: it needs sealed workers")
        return "alternate", "asked for"
    if requested == "duet":
        if cores < 2:
            raise ValueError(f"duet mode needs 2 cores (one per side); this process may use {cores}")
        return "duet", f"asked for; {cores} usable cores"
    if cores >= DUET_MIN_CORES:
        return (
            "duet",
            f"auto: {cores} usable cores (duet needs {DUET_MIN_CORES}: one per side, one for the rest)",
        )
    if execution == "sealed":
        return "alternate", (
            f"auto: {cores} usable cores, sealed workers: the sides' frames in turn, one by one (duet needs "
            f"{DUET_MIN_CORES} cores)"
        )
    return "interleaved", (
        f"auto: {cores} usable cores and isolated workers (frames in turn need sealed ones; duet needs "
        f"{DUET_MIN_CORES} cores)"
    )


def run_rounds(
    base: Side,
    head: Side,
    config: RoundsConfig,
    decide: Callable[[Rounds], bool] | None = None,
    progress: Callable[[Rounds], None] | None = None,
    isolation: IsolationConfig | None = None,
    size: Callable[[Rounds, int], tuple[int, str] | None] | None = None,
) -> Rounds:
    """Start both workers, warm them up, run pairs until the first look (``rounds`` pairs), then,
    sequentially, until ``decide`` says the verdict is reached, the planned looks are spent or the next
    look would not fit in the budget (harness/execution/rounds_plan.py); adapter failures propagate (the
    job has no verdict). ``size``: after an undecided look, given the job and the streams per round so far,
    more streams per round for the pairs to come and why (None: as they are)."""
    execution, execution_why = choose_execution(base, head, isolation)
    mode, why = choose_mode(config.mode, execution)
    chosen_isolation = (isolation or IsolationConfig()).model_copy(update={"sealed": execution == "sealed"})
    rng = random.Random(config.seed)
    labels = (base.label, head.label)
    specs = {base.label: base, head.label: head}
    engines: dict[str, IsolatedEngine] = {}
    job: Rounds | None = None
    started = time.monotonic()
    per, fed = config.streams_per_round, 0  # streams per round now; streams fed so far (cycled)
    with ThreadPoolExecutor(2) as pool:
        try:
            while True:
                target = config.rounds if job is None or job.plan is None else job.plan.at[job.looks]
                while job is None or job.pairs < target:
                    k = job.pairs if job is not None else 0
                    if not engines or (config.restart_every and k % config.restart_every == 0):
                        _restart(engines, specs, chosen_isolation, pool)
                    if job is None:
                        refuse_same_code(base, head, engines[base.label].code, engines[head.label].code)
                        job = Rounds(
                            mode=mode,
                            mode_reason=why,
                            base=_side_rounds(base.label, engines[base.label]),
                            head=_side_rounds(head.label, engines[head.label]),
                            execution=execution,
                            execution_reason=execution_why,
                        )
                    ids = engines[base.label].stream_ids
                    chosen = [ids[(fed + j) % len(ids)] for j in range(per)]
                    fed += per
                    order = list(labels)
                    rng.shuffle(order)
                    done, placed = _pair(mode, engines, order, chosen, rng, pool)
                    job.orders.append(placed)
                    job.base.add(done[base.label])
                    job.head.add(done[head.label])
                    if execution == "sealed":
                        for label, side in ((base.label, job.base), (head.label, job.head)):
                            side.clocks.append(_clock_verdict(engines[label], done[label]))
                    job.stream_ids.append(chosen)
                    job.seconds = time.monotonic() - started
                    if job.plan is None:  # after the first pair: its speed and the budget fix the looks
                        job.plan = planned_looks(config, job.seconds)
                        target = job.plan.at[0]
                    if progress is not None:
                        progress(job)
                job.looks += 1
                assert job.plan is not None  # fixed after the first pair
                if job.looks >= job.plan.looks:
                    job.stop = "one look" if job.plan.looks == 1 else "max_rounds"
                    if job.plan.looks > 1 and config.max_rounds is None:
                        job.stop = "budget"
                    break
                if decide is None:
                    break
                if decide(job):
                    job.stop = "decided"
                    break
                grown = size(job, per) if size is not None else None
                if grown is not None and grown[0] > per:
                    job.resized.append(
                        f"{per} -> {grown[0]} streams per round after {job.pairs} pairs: {grown[1]}"
                    )
                    per = grown[0]
                more = job.plan.at[job.looks] - job.pairs
                if not fits(config.budget_s, job.seconds, job.pairs, more):
                    job.stop = "budget"
                    break
        finally:
            for engine in engines.values():
                engine.close()
    assert job is not None
    job.workers = (
        job.pairs // config.restart_every + (job.pairs % config.restart_every > 0)
        if config.restart_every
        else 1
    )
    return job


def _side_rounds(label: str, engine: IsolatedEngine) -> SideRounds:
    return SideRounds(label, engine.info.name, code=engine.code, sandbox=engine.sandbox)


def _pair(
    mode: Mode,
    engines: dict[str, IsolatedEngine],
    order: list[str],
    chosen: list[str],
    rng: random.Random,
    pool: ThreadPoolExecutor,
) -> tuple[dict[str, list[StreamRecording]], str]:
    """One pair of rounds in ``mode``: each side's recordings, and how the pair ran (the order, the side
    that went first, or the cores)."""
    if mode == "interleaved":
        return {label: _run(engines[label], chosen, label) for label in order}, " then ".join(order)
    if mode == "alternate":  # both on one core drawn per pair: the same neighbours for both sides' frames
        core = rng.choice(sorted(os.sched_getaffinity(0)))
        for label in order:
            pid = engines[label].worker_pid
            if pid is not None:
                pin(pid, (core,))
        lockstep = Lockstep(order, first=order[0])

        def in_turn(label: str) -> list[StreamRecording]:
            with engines[label].taking_turns(lockstep.turn(label)):
                return _run(engines[label], chosen, label)

        futures = {label: pool.submit(in_turn, label) for label in order}
        return {
            label: f.result() for label, f in futures.items()
        }, f"{order[0]} first, frames in turn, cpu{core}"
    placed = rng.sample(sorted(os.sched_getaffinity(0)), 2)
    for label, core in zip(order, placed, strict=True):
        pid = engines[label].worker_pid
        if pid is not None:
            pin(pid, (core,))
    futures = {label: pool.submit(_run, engines[label], chosen, label) for label in order}
    shown = ", ".join(f"{label}@cpu{core}" for label, core in zip(order, placed, strict=True))
    return {label: f.result() for label, f in futures.items()}, shown


def refuse_same_code(
    base: Side, head: Side, base_code: list[CodeFile] | None, head_code: list[CodeFile] | None
) -> None:
    """Refuse a comparison of two checkouts whose sides imported the very same files: the user named
    each side's own code (``--base-path``, ``--head-path``), yet both would measure one and the same
    model, and any verdict would compare the code with itself. (Sides that differ in their adapter or
    its options may share files: that is what they compare.)"""
    named = base.command.pythonpath != head.command.pythonpath
    same_model = (base.run.adapter, base.run.adapter_options) == (head.run.adapter, head.run.adapter_options)
    if named and same_model and same_code(base_code, head_code):
        files = ", ".join(f"{c.name} from {c.file}" for c in base_code or [])
        raise ValueError(
            f"{base.label} and {head.label} import the same files ({files}) although each names its own "
            f"code ({base.label}: {_shown(base.command.pythonpath)}, {head.label}: "
            f"{_shown(head.command.pythonpath)}): give each side the directory its own package is imported "
            "from (a src/ layout: the checkout's src)"
        )


def _shown(paths: Sequence[str]) -> str:
    return os.pathsep.join(paths) if paths else "the working directory"


def _restart(
    engines: dict[str, IsolatedEngine],
    specs: dict[str, Side],
    isolation: IsolationConfig,
    pool: ThreadPoolExecutor,
) -> None:
    """Fresh workers for both sides (started and warmed up at the same time), after closing the old;
    sealed or isolated as :func:`choose_execution` decided (``isolation.sealed``)."""
    for engine in engines.values():
        engine.close()
    engines.clear()
    for label, spec in specs.items():
        engines[label] = on_side(label, partial(IsolatedEngine, spec.run, isolation, command=spec.command))
    for future in [pool.submit(on_side, label, engine.warm_up) for label, engine in engines.items()]:
        future.result()
    first, second = engines.values()
    if first.stream_ids != second.stream_ids:
        raise ValueError("base and head see different streams: their data sets must be the same")


def _clock_verdict(engine: IsolatedEngine, recordings: list[StreamRecording]) -> str:
    """One round's check of the worker's clock against this process's (its worker's calibrated floor)."""
    return judge_host_timing(recordings, engine.floor, engine.start_times).verdict


def _run(engine: IsolatedEngine, stream_ids: Sequence[str], label: str) -> list[StreamRecording]:
    return on_side(label, lambda: [engine.run_stream(stream_id) for stream_id in stream_ids])
