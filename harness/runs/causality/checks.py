"""Runs the causality protocol's variant runs and judges them (protocols/causality.py).

Checks (``../shared/DESIGN.md``, "Causality" and "Audits"; seed 004 §6.2.3). The streams run on the
instances of an :class:`~streambench.harness.runs.causality.variants.AuditRunner`: by default a **sealed
worker** (``sealed``), where the future does not exist in the adapter's process, so look-ahead through the
harness is impossible by construction and what follows checks the model's own computation; every
instance is warmed up like a scored run's.

* **determinism** (first): the first stream on two fresh instances in two processes.
  A model whose outputs differ is *nondeterministic* (the check fails with the size), and every later
  comparison allows twice that difference, so noise is not called look-ahead.
* **shared_state** (sealed only): the first stream on a fresh instance in the process that already ran
  it vs the fresh process's: a difference is state shared across instances (module or class globals),
  reported as such; the comparisons across instances it would confound (occlusion, state leak, reset,
  timed/untimed, replay) are then listed in ``skipped`` instead of failing under a wrong name.
* **occlusion**: for the first ``streams`` streams, a clean run and, per cut of
  :func:`~streambench.protocols.causality.plan_occlusion` (random by default, from a seed drawn per run and
  recorded with every stream's cuts in :attr:`CausalityResult.cut_seed` / :attr:`CausalityResult.cuts`) and
  per occluder, a run of the stream whose frames after the cut are replaced (seeded noise, zeros, another
  stream's frames), each on a fresh instance; every prediction emitted at a frame ``<= cut`` must be
  unchanged. One aggregated ``occlusion`` check; every variant's result in ``occlusion_runs``.
* **state_leak**: the streams in order on one instance and in reverse order on another; every stream's
  predictions must agree. **reset_idempotent**: stream A after a double reset vs a single one.
* **caching** (audit, :mod:`streambench.harness.runs.causality.caching`): stream A once, then
  ``caching_rounds``
  interleaved rounds of a repeat of A, an unseen control of the same cost (A mixed with another stream)
  and a one-ulp copy of A (reported, not judged), judged by a sign test
  (:func:`~streambench.protocols.causality.judge_caching`).
* **timed_untimed** (audit): the streams through the timed loop on one instance and through the same
  loop reading no clock (``Engine.run_stream(untimed=True)``: the same call path) on another: identical
  predictions (the detail names both F1@Δt at the run's smallest Δt, 0 ms by default, counting the
  classes the online F1 counts: :func:`timed_untimed_f1`).
* **scored_replay** (when the run directory holds an online run of the same adapter and data): the
  online run's *own recorded outputs* (``arrays.npz``) are evidence. A random subset of its streams is
  replayed on fresh instances, clean and occluded at hidden cuts, and must reproduce the saved
  predictions (the clean replay in full, each occluded one up to its cut): a model that cheated in the
  scored run, however it told the scored run from an audit, is caught by its own outputs.
* **gradient_flow**, **stream_sequence**, **sequence_perturbation**: the sequence mode
  (:mod:`streambench.harness.runs.causality.sequence`).

An adapter failure inside one check is that check's recorded failure (:func:`_guarded`).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Sequence

from pydantic import Field

from streambench.adapters.contract import Stream
from streambench.harness.datasets.catalog import background_class_of
from streambench.harness.execution.adapter_errors import AdapterError
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.setup import build_adapter
from streambench.harness.results.files import EnvironmentRecord
from streambench.harness.runs.causality.caching import caching_audit, caching_partners
from streambench.harness.runs.causality.replay import Replayed, replay_plan, scored_replay
from streambench.harness.runs.causality.sequence import SEQUENCE_TOLERANCE, sequence_checks, sequence_plan
from streambench.harness.runs.causality.variants import (
    AuditRunner,
    aggregate_runs,
    donor_for,
    nudge,
    occlude,
    occlusion_runs,
)
from streambench.harness.runs.context import RunContext
from streambench.protocols import online
from streambench.protocols.causality import (
    CausalityConfig,
    CausalityReport,
    CheckResult,
    compare_recordings,
    plan_occlusion,
    summarize,
)
from streambench.protocols.recording import StreamRecording

__all__ = [
    "RESULT_FILE",
    "SEQUENCE_TOLERANCE",
    "CausalityResult",
    "measure_causality",
    "nudge",
    "occlude",
    "timed_untimed_f1",
]

RESULT_FILE = "causality.json"


class CausalityResult(EnvironmentRecord):
    """``results/<run_id>/causality.json``."""

    config: CausalityConfig
    run: RunConfig
    streams: list[str] = Field(description="streams the occlusion check ran on (the first is stream A)")
    report: CausalityReport
    occlusion_runs: tuple[CheckResult, ...] = Field(
        default=(), description="every occluded variant's own result (detail prefixed by its occluder)"
    )
    skipped: dict[str, str] = Field(default_factory=dict, description="checks not run, and why")
    cut_seed: int | None = Field(None, description="the seed the random cuts were drawn from (None: fixed)")
    cuts: dict[str, list[int]] = Field(
        default_factory=dict, description="every checked stream's cut frames (frames after a cut occluded)"
    )
    sealed: bool = Field(
        True, description="the checks ran in a sealed worker (the future not in its process)"
    )
    tolerance: float = Field(0.0, description="the tolerance the comparisons used (widened for noise)")


def measure_causality(run: RunContext[CausalityConfig, CausalityResult]) -> CausalityResult:
    """Run every causality check on ``run``'s adapter and data, on the first ``streams`` streams of its
    configuration (``run.step`` after each variant run); the result, with every check's verdict."""
    causality = run.config
    if causality.cuts is None and causality.cut_seed is None:  # drawn per run, recorded in the result
        causality = causality.model_copy(update={"cut_seed": secrets.randbits(32)})
    cut_seed = causality.cut_seed if causality.cut_seed is not None else 0
    config = run.run
    all_streams = run.streams()
    streams = all_streams[: min(causality.streams, len(all_streams))]
    probe = build_adapter(config, streams[0])  # fails early on a class mismatch; tells the sequence mode
    plan = sequence_plan(probe)
    cuts = {s.stream_id: plan_occlusion(s.num_frames, causality, cut_seed, i) for i, s in enumerate(streams)}
    replayed, replay_reason = replay_plan(config, run.run_id, all_streams, causality, cut_seed)
    planned = (
        2  # determinism, shared state (the other process is not counted)
        + sum(1 + len(c) * len(causality.occluders) for c in cuts.values())
        + 2 * len(streams)  # state leak, both orders
        + 1  # reset twice
        + 1
        + 3 * causality.caching_rounds  # caching: repeat, unseen control, one-ulp copy
        + 2 * len(streams)  # timed and untimed
        + sum(1 + len(c) * len(causality.occluders) for _, _, c in replayed)
    )
    runner = AuditRunner(config, streams[0], causality.sealed, planned, run.progress)
    try:
        checks, skipped, tolerance, occlusion_runs = _run_checks(
            runner, streams, all_streams, cuts, causality, replayed, replay_reason
        )
    finally:
        runner.close()
    skipped.update(plan.skipped)
    if plan.failure is not None:
        checks.append(plan.failure)
    if plan.run:
        checks += _guarded(plan.run, lambda: sequence_checks(config, probe, streams[0], causality, plan))

    run.adapter_module = type(probe).__module__
    return run.result(
        config=causality,
        run=config,
        streams=[s.stream_id for s in streams],
        report=summarize(checks),
        occlusion_runs=tuple(occlusion_runs),
        skipped=skipped,
        cut_seed=causality.cut_seed,
        cuts=cuts,
        sealed=causality.sealed,
        tolerance=tolerance,
        execution_mode="sealed" if causality.sealed else "in-process",
    )


_CROSS_INSTANCE = ("occlusion", "state_leak", "reset_idempotent", "timed_untimed", "scored_replay")
"""Checks that compare runs on different instances: confounded by state shared across instances."""


def _run_checks(
    runner: AuditRunner,
    streams: Sequence[Stream],
    all_streams: Sequence[Stream],
    cuts: dict[str, list[int]],
    causality: CausalityConfig,
    replayed: Replayed,
    replay_reason: str | None,
) -> tuple[list[CheckResult], dict[str, str], float, list[CheckResult]]:
    tolerance = causality.tolerance
    shared_failed = False

    def determinism() -> list[CheckResult]:
        nonlocal tolerance, shared_failed
        found, tolerance = _determinism(runner, streams[0], causality)
        shared_failed = any(c.name == "shared_state" and not c.passed for c in found)
        return found

    checks = _guarded(("determinism", "shared_state") if runner.sealed else ("determinism",), determinism)
    skipped: dict[str, str] = {}
    if not runner.sealed:
        skipped["shared_state"] = "needs a sealed worker (sealed = true) to tell shared state from noise"
    variants: list[CheckResult] = []
    if shared_failed:
        reason = "not judged: state shared across instances (see shared_state) confounds this comparison"
        skipped.update(dict.fromkeys(_CROSS_INSTANCE, reason))
    else:
        strict = causality.model_copy(update={"tolerance": tolerance})

        def occlusion() -> list[CheckResult]:
            variants.extend(occlusion_runs(runner, streams, all_streams, cuts, strict))
            return [aggregate_runs(variants, strict, "occlusion")]

        checks += _guarded(("occlusion",), occlusion)
        checks += _guarded(("state_leak", "reset_idempotent"), lambda: _state_leak(runner, streams, strict))
        checks += _guarded(("timed_untimed",), lambda: [_timed_untimed(runner, streams, strict)])
        if replayed:
            checks += _guarded(
                ("scored_replay",),
                lambda: [scored_replay(runner, replayed, all_streams, strict)],
            )
        elif replay_reason is not None:
            skipped["scored_replay"] = replay_reason
    partners = caching_partners(runner.config, all_streams, streams[0], causality.caching_rounds)
    checks += _guarded(("caching",), lambda: [caching_audit(runner, streams[0], partners, causality)])
    return checks, skipped, tolerance, variants


def _guarded(names: Sequence[str], check: Callable[[], list[CheckResult]]) -> list[CheckResult]:
    """Run one check; an adapter failure inside it is that check's recorded failure (named stream and
    frame), so the other checks still run and ``causality.json`` is written."""
    try:
        return check()
    except AdapterError as exc:
        return [
            CheckResult(
                name=name,
                passed=False,
                first_stream=exc.stream_id,
                first_frame=exc.frame,
                max_difference=math.inf,
                detail=f"the adapter failed during this check: {type(exc).__name__}: {exc.problem}",
            )
            for name in names
        ]


def _determinism(
    runner: AuditRunner, stream: Stream, causality: CausalityConfig
) -> tuple[list[CheckResult], float]:
    """The first stream on two fresh instances (two processes when sealed) and, sealed, on a fresh
    instance in the first process again; returns the checks and the tolerance later checks use."""
    runner.fresh()
    first = runner.run(stream)
    if runner.sealed:
        other = runner.fresh_process()
        try:
            second = other.run(stream)
        finally:
            other.close()
        where = "two fresh instances in two processes"
    else:
        runner.fresh()
        second = runner.run(stream)
        where = "two fresh instances in this process"
    check = compare_recordings(first, second, causality.tolerance, name="determinism")
    noise = check.max_difference if not check.passed else 0.0
    tolerance = max(causality.tolerance, 2 * noise) if math.isfinite(noise) else causality.tolerance
    if check.passed:
        detail = f"{stream.stream_id} on {where}: identical; {check.detail}"
    else:
        blame = (
            "the model is nondeterministic"
            if runner.sealed
            else "the model is nondeterministic, or its instances share state (run sealed to tell which)"
        )
        detail = (
            f"{stream.stream_id} on {where} differs by up to {noise:.3g}: {blame}; the later checks "
            f"compare within {tolerance:.3g} (twice that); {check.detail}"
        )
    checks = [check.model_copy(update={"detail": detail})]
    if runner.sealed:
        runner.fresh()
        again = runner.run(stream)
        shared = compare_recordings(second, again, tolerance, name="shared_state")
        detail = (
            f"{stream.stream_id} on a fresh instance in the process that already ran it vs one in a new "
            + (
                "process: identical"
                if shared.passed
                else "process: they differ: state shared across instances (module or class globals), "
                "which no reset_state() clears"
            )
        )
        checks.append(shared.model_copy(update={"detail": f"{detail}; {shared.detail}"}))
    return checks, tolerance


def _state_leak(
    runner: AuditRunner, streams: Sequence[Stream], causality: CausalityConfig
) -> list[CheckResult]:
    order = list(streams) if len(streams) > 1 else [*streams, donor_for(runner.config, [], 0, 1)]
    runner.fresh()
    forward = {s.stream_id: runner.run(s) for s in order}
    runner.fresh()
    reverse = {s.stream_id: runner.run(s) for s in reversed(order)}
    leaks = [
        compare_recordings(forward[s.stream_id], reverse[s.stream_id], causality.tolerance, name="state_leak")
        for s in streams
    ]
    leak = next((c for c in leaks if not c.passed), leaks[0])
    target = streams[0]
    runner.fresh()
    reset_twice = runner.run(target, resets=2)
    idem = compare_recordings(
        forward[target.stream_id], reset_twice, causality.tolerance, name="reset_idempotent"
    )
    ids = [s.stream_id for s in order]
    where = (
        f"{', '.join(ids)} vs the reverse order: every stream agrees"
        if leak.passed
        else f"{', '.join(ids)} vs the reverse order: {leak.first_stream} differs"
    )
    return [
        leak.model_copy(update={"detail": f"{where}; {leak.detail}"}),
        idem.model_copy(update={"detail": f"{target.stream_id} reset twice vs once: {idem.detail}"}),
    ]


def _timed_untimed(runner: AuditRunner, streams: Sequence[Stream], causality: CausalityConfig) -> CheckResult:
    runner.fresh()
    timed = [runner.run(s) for s in streams]
    runner.fresh()
    untimed = [runner.run(s, untimed=True) for s in streams]
    checks = [
        compare_recordings(a, b, causality.tolerance, name="timed_untimed")
        for a, b in zip(timed, untimed, strict=True)
    ]
    check = next((c for c in checks if not c.passed), checks[0])
    f1 = timed_untimed_f1(timed, untimed, runner.config, streams[0].classes)
    verdict = "every prediction identical" if check.passed else f"{check.first_stream} differs"
    return check.model_copy(
        update={"detail": f"{len(streams)} streams timed vs untimed: {verdict}; {f1}; {check.detail}"}
    )


def timed_untimed_f1(
    timed: Sequence[StreamRecording],
    untimed: Sequence[StreamRecording],
    run: RunConfig,
    classes: Sequence[str],
) -> str:
    """The ``timed_untimed`` detail's F1@Δt of both runs at the smallest Δt of the run's online
    configuration (0 ms by default; Strict, frame): the online protocol's, the data's ``background_class``
    bound as in an online run, so it counts the classes the online F1 counts (every class but the
    background; protocols/online.py), and says which."""
    background = background_class_of(run.data)
    delta = run.protocol.deltas_ms[0]
    scores = [online.score(recs, run.protocol, classes, background=background) for recs in (timed, untimed)]
    return (
        f"F1@{delta:g}ms {100 * scores[0].f1_at(delta):.2f} % timed, {100 * scores[1].f1_at(delta):.2f} % "
        f"untimed (F1 counts {scores[0].scored_rule}, as the online F1@Δt)"
    )
