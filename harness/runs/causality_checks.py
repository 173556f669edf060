"""Runs the causality protocol's variant runs through the engine and judges them (protocols/causality.py).

Checks (``../shared/DESIGN.md``, "Causality" and "Audits"; seed 004 §6.2.3):

* **occlusion**: for the first ``streams`` streams of the configuration, a clean run and, per cut of
  :func:`~protocols.causality.plan_occlusion` (random by default, from a seed drawn per run and recorded
  with every stream's cuts in :attr:`CausalityResult.cut_seed` / :attr:`CausalityResult.cuts`) and per
  occluder, a run of the stream whose frames after
  the cut are replaced (seeded noise, zeros, another stream's frames); every prediction emitted at a frame
  ``<= cut`` must be unchanged. The report holds one aggregated ``occlusion`` check (the first offending
  variant, in stream, cut, occluder order); every variant's own result is kept in
  :attr:`CausalityResult.occlusion_runs`.
* **state_leak** (also the audit "results do not depend on stream order"): the streams in order on one
  adapter and in reverse order on another; every stream's predictions must agree, so a stream that runs
  first (fresh) in one order and last (after the others) in the other is checked both ways.
* **reset_idempotent**: stream A after a double reset vs a single one.
* **caching** (audit): warm up and run stream A once, then ``caching_rounds`` interleaved rounds of a
  repeat of A and a fresh control whose payloads differ by one ulp (:func:`nudge`), in a seeded random
  order; the repeat must not be markedly faster than its control (a paired sign test over the rounds:
  :func:`~protocols.causality.judge_caching`), so one slow run on a busy machine is not a cache.
* **timed_untimed** (audit): the warm-up and the streams through the timed loop on one adapter, and the
  same sequence through :meth:`~harness.engine.Engine.run_untimed` (no clock read) on another; the
  predictions, hence every accuracy figure, must be identical (nothing changes under measurement). The
  detail names both F1@0 ms (Strict, frame, micro).
* **gradient_flow** and **stream_sequence**: only for adapters with a differentiable sequence mode
  (``sequence_outputs(inputs [T, D]) -> [T, C]`` and ``stack(frames) -> [T, D]``, as
  :class:`adapters.offenders.OffByOneMaskAdapter` has); otherwise listed in
  :attr:`CausalityResult.skipped`, not reported as passed.

Every variant run gets a FRESH adapter instance (``build_adapter`` again), so no state leaks between the
runs being compared (except in the state-leak check, where that is the point). Streaming runs go through
:class:`~harness.engine.Engine` only (the only module that calls ``predict``); the engine is forced to
unpaced feeding, since paced dropping would make two runs of the same stream differ.

The planted offender :class:`adapters.offenders.PeekingAdapter` reads the future through a back door
that must be filled before each run: the harness calls ``PeekingAdapter.leak(frames of the stream being
run)`` before and ``unleak()`` after every run of that adapter, so occlusion can catch it.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from adapters.contract import Adapter, Frame, Stream
from adapters.offenders import PeekingAdapter, sequence_gradient_support
from harness.datasets.catalog import make_streams, make_warmup_stream
from harness.execution.adapter_errors import AdapterError
from harness.execution.config import RunConfig, run_id_for
from harness.execution.engine import Engine, EngineConfig
from harness.execution.executor import ProgressHook
from harness.execution.sealing import seal_frames
from harness.execution.setup import build_adapter, environment_for
from harness.results.files import EnvironmentRecord
from harness.runs.catalog import write_indexed
from protocols import online
from protocols.causality import (
    CausalityConfig,
    CausalityReport,
    CheckResult,
    compare_prefix,
    compare_recordings,
    judge_caching,
    judge_gradient,
    plan_gradient,
    plan_occlusion,
    summarize,
)
from protocols.recording import StreamRecording

__all__ = [
    "RESULT_FILE",
    "SEQUENCE_TOLERANCE",
    "CausalityResult",
    "execute_causality",
    "occlude",
]

RESULT_FILE = "causality.json"
SEQUENCE_TOLERANCE = 1e-5
"""Largest |score difference| between streaming and sequence mode still counted as equal (float32 sums
are taken in another order in the two modes)."""


class CausalityResult(EnvironmentRecord):
    """``results/<run_id>/causality.json``."""

    schema_version: int = 1
    run_id: str
    created_at: datetime
    adapter: str
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


def occlude(stream: Stream, cut: int, occluder: str, donor: Stream | None = None, seed: int = 0) -> Stream:
    """The stream with every frame after ``cut`` replaced: seeded Gaussian noise, zeros, or the donor's
    frame of the same index (``occluder="other_stream"``, the donor must be at least as long)."""
    if occluder == "other_stream" and donor is None:
        raise ValueError("the other_stream occluder needs a donor stream")

    def replace(frame: Frame, donor_frames: Sequence[Frame]) -> Frame:
        if frame.index <= cut:
            return frame
        if occluder == "other_stream":
            inputs: dict[str, Any] = dict(donor_frames[frame.index].inputs)
        else:
            rng = np.random.default_rng([seed, cut, frame.index])
            inputs = {}
            for name, payload in frame.inputs.items():
                if payload is None:
                    inputs[name] = None
                    continue
                arr = np.asarray(payload)
                if occluder == "zeros":
                    inputs[name] = np.zeros_like(arr)
                else:
                    inputs[name] = rng.standard_normal(arr.shape).astype(arr.dtype)
        return dataclasses.replace(frame, inputs=inputs)

    def frames() -> list[Frame]:
        donor_frames = list(donor.frames()) if donor is not None and occluder == "other_stream" else []
        return [replace(f, donor_frames) for f in stream.frames()]

    return dataclasses.replace(stream, frame_source=frames, stream_id=f"{stream.stream_id}~{occluder}@{cut}")


class _Runner:
    """Builds fresh adapters and runs streams through the engine, filling the peeking back door."""

    def __init__(
        self, config: RunConfig, sample: Stream, planned: int, progress: ProgressHook | None
    ) -> None:
        self.config = config
        self.sample = sample
        self.engine_config: EngineConfig = config.engine.model_copy(update={"pacing": "unpaced"})
        self.planned = planned
        self.done = 0
        self.progress = progress

    def fresh(self, warmup_frames: int = 0) -> Engine:
        adapter = build_adapter(self.config, self.sample)
        return Engine(adapter, self.engine_config.model_copy(update={"warmup_frames": warmup_frames}))

    def run(self, engine: Engine, stream: Stream, untimed: bool = False) -> StreamRecording:
        """One engine run (``untimed``: :meth:`Engine.run_untimed`). The peeking offender's back door gets
        the stream itself, as an offender that reads the real future would."""
        peeking = isinstance(engine.adapter, PeekingAdapter)
        if peeking:
            PeekingAdapter.leak(stream.frames())
        try:
            recording = engine.run_untimed(stream) if untimed else engine.run_stream(stream)
        finally:
            if peeking:
                PeekingAdapter.unleak()
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, max(self.planned, self.done), stream.stream_id)
        return recording


def execute_causality(
    config: RunConfig,
    causality: CausalityConfig,
    progress: ProgressHook | None = None,
    max_streams: int | None = None,
) -> tuple[CausalityResult, Path]:
    """Run every causality check on ``config``'s adapter and data; write ``<run_dir>/causality.json``.

    ``max_streams`` (default: the configuration's ``streams``) bounds the streams used (occlusion runs
    ``1 + cuts x occluders`` variants of each;
    the state-leak check runs stream A after the others). ``progress`` is called after each engine run.
    """
    import torch

    max_streams = causality.streams if max_streams is None else max_streams
    if max_streams < 1:
        raise ValueError(f"max_streams must be >= 1, got {max_streams}")
    if causality.cuts is None and causality.cut_seed is None:  # drawn per run, recorded in the result
        causality = causality.model_copy(update={"cut_seed": secrets.randbits(32)})
    cut_seed = causality.cut_seed if causality.cut_seed is not None else 0
    torch.manual_seed(config.torch_seed)
    all_streams = make_streams(config.data)
    streams = all_streams[: min(max_streams, len(all_streams))]
    probe = build_adapter(config, streams[0])  # fails early on a class mismatch; tells the sequence mode
    has_sequence = callable(getattr(probe, "sequence_outputs", None)) and callable(
        getattr(probe, "stack", None)
    )
    cuts = {s.stream_id: plan_occlusion(s.num_frames, causality, cut_seed, i) for i, s in enumerate(streams)}
    planned = (
        sum(1 + len(c) * len(causality.occluders) for c in cuts.values())
        + 2 * len(streams)  # state leak, both orders
        + 1  # reset twice
        + 1
        + 2 * causality.caching_rounds  # caching
        + 2 * len(streams)  # timed and untimed
        + (1 if has_sequence else 0)
    )
    runner = _Runner(config, streams[0], planned, progress)

    occlusion_runs: list[CheckResult] = []

    def occlusion() -> list[CheckResult]:
        occlusion_runs.extend(_occlusion(runner, streams, all_streams, cuts, causality))
        return [_aggregate_occlusion(occlusion_runs, causality)]

    checks = _guarded(("occlusion",), occlusion)
    checks += _guarded(("state_leak", "reset_idempotent"), lambda: _state_leak(runner, streams, causality))
    checks += _guarded(("caching",), lambda: [_caching(runner, streams[0], causality)])
    checks += _guarded(("timed_untimed",), lambda: [_timed_untimed(runner, streams, causality)])
    skipped: dict[str, str] = {}
    if has_sequence:
        checks += _guarded(
            ("gradient_flow", "stream_sequence"), lambda: _sequence_checks(runner, streams[0], causality)
        )
    else:
        reason = (
            f"adapter {type(probe).__name__} has no differentiable sequence mode (sequence_outputs + stack)"
        )
        skipped = {"gradient_flow": reason, "stream_sequence": reason}

    run_id = config.run_id or run_id_for(config.adapter, "causality")
    environment, fingerprint = environment_for(config, all_streams, type(probe).__module__)
    result = CausalityResult(
        run_id=run_id,
        created_at=datetime.now(timezone.utc),
        adapter=config.adapter,
        config=causality,
        run=config,
        streams=[s.stream_id for s in streams],
        report=summarize(checks),
        occlusion_runs=tuple(occlusion_runs),
        skipped=skipped,
        cut_seed=causality.cut_seed,
        cuts=cuts,
        environment=environment,
        fingerprint=fingerprint,
    )
    return result, write_indexed(config.output_dir, run_id, RESULT_FILE, result)


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


def _occlusion(
    runner: _Runner,
    streams: Sequence[Stream],
    all_streams: Sequence[Stream],
    cuts: dict[str, list[int]],
    causality: CausalityConfig,
) -> list[CheckResult]:
    results: list[CheckResult] = []
    for k, stream in enumerate(streams):
        clean = runner.run(runner.fresh(), stream)
        donor = _donor(runner, all_streams, k, stream.num_frames)
        for cut in cuts[stream.stream_id]:
            for occluder in causality.occluders:
                variant = occlude(stream, cut, occluder, donor, seed=causality.noise_seed)
                occluded = runner.run(runner.fresh(), variant)
                result = compare_prefix(clean, occluded, cut, causality.tolerance)
                results.append(
                    result.model_copy(
                        update={
                            "first_stream": stream.stream_id if not result.passed else None,
                            "detail": f"{occluder}: {result.detail}",
                        }
                    )
                )
    return results


def _donor(runner: _Runner, all_streams: Sequence[Stream], k: int, num_frames: int) -> Stream:
    """The next stream of the data set, or the warm-up stream when there is no other long enough one."""
    if len(all_streams) > 1:
        other = all_streams[(k + 1) % len(all_streams)]
        if other.num_frames >= num_frames:
            return other
    return make_warmup_stream(runner.config.data, num_frames)


def _aggregate_occlusion(results: Sequence[CheckResult], causality: CausalityConfig) -> CheckResult:
    if not results:
        return CheckResult(name="occlusion", passed=True, detail="no stream long enough to cut")
    failed = [r for r in results if not r.passed]
    max_diff = max(r.max_difference for r in results)
    if not failed:
        return CheckResult(
            name="occlusion",
            passed=True,
            max_difference=max_diff,
            detail=f"{len(results)} occluded runs: every prefix unchanged "
            f"(max |diff| {max_diff:.3g} <= {causality.tolerance:g})",
        )
    first = failed[0]
    max_diff = max(r.max_difference for r in failed)
    return CheckResult(
        name="occlusion",
        passed=False,
        first_stream=first.first_stream,
        first_frame=first.first_frame,
        max_difference=max_diff,
        detail=f"{len(failed)} of {len(results)} occluded runs changed the past; first, "
        f"{first.name}, {first.detail}",
    )


def _state_leak(runner: _Runner, streams: Sequence[Stream], causality: CausalityConfig) -> list[CheckResult]:
    order = list(streams) if len(streams) > 1 else [*streams, _donor(runner, [], 0, 1)]
    forward_engine, reverse_engine = runner.fresh(), runner.fresh()
    forward = {s.stream_id: runner.run(forward_engine, s) for s in order}
    reverse = {s.stream_id: runner.run(reverse_engine, s) for s in reversed(order)}
    leaks = [
        compare_recordings(forward[s.stream_id], reverse[s.stream_id], causality.tolerance, name="state_leak")
        for s in streams
    ]
    leak = next((c for c in leaks if not c.passed), leaks[0])
    target = streams[0]
    twice = runner.fresh()
    twice.adapter.reset_state()
    twice.adapter.reset_state()  # the engine resets once more
    reset_twice = runner.run(twice, target)
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


def nudge(stream: Stream, ulps: int) -> Stream:
    """The stream with every numeric payload moved ``ulps`` units in the last place: floats up by
    ``numpy.nextafter`` in their own dtype, integers by ``ulps`` (down where that would overflow). The
    same work for an honest model, other bytes for a cache keyed on them; other payloads unchanged."""

    def moved(payload: Any) -> Any:
        if not isinstance(payload, np.ndarray):
            return payload
        if payload.dtype.kind == "f":
            out, up = payload, np.array(np.inf, dtype=payload.dtype)  # the target in the payload's dtype
            for _ in range(ulps):
                out = np.nextafter(out, up)
            return out
        if payload.dtype.kind in "iu":
            top = np.iinfo(payload.dtype).max
            return np.where(payload <= top - ulps, payload + ulps, payload - ulps).astype(payload.dtype)
        return payload

    def frames() -> list[Frame]:
        return [
            dataclasses.replace(f, inputs={k: moved(v) for k, v in f.inputs.items()}) for f in stream.frames()
        ]

    return dataclasses.replace(stream, frame_source=frames, stream_id=f"{stream.stream_id}~ulp{ulps}")


def _caching(runner: _Runner, stream: Stream, causality: CausalityConfig) -> CheckResult:
    """Warm up, run ``stream`` once, then ``caching_rounds`` rounds of a repeat of it and a fresh one-ulp
    control (a new one each round, so no control is ever a repeat), in a seeded random order."""
    warmup_frames = runner.config.engine.warmup_frames
    engine = runner.fresh(warmup_frames)
    if warmup_frames:
        engine.warm_up(make_warmup_stream(runner.config.data, warmup_frames))
    runner.run(engine, stream)
    order = np.random.default_rng([causality.noise_seed, 0xCA])
    rounds = []
    for r in range(causality.caching_rounds):
        pair = {"repeat": stream, "control": nudge(stream, r + 1)}
        names = ["repeat", "control"] if order.random() < 0.5 else ["control", "repeat"]
        latency = {name: runner.run(engine, pair[name]).latency_ns for name in names}
        rounds.append((latency["repeat"], latency["control"]))
    return judge_caching(rounds, causality.caching_ratio, stream.stream_id, causality.caching_alpha)


def _timed_untimed(runner: _Runner, streams: Sequence[Stream], causality: CausalityConfig) -> CheckResult:
    warmup_frames = runner.config.engine.warmup_frames
    warmup = make_warmup_stream(runner.config.data, warmup_frames) if warmup_frames else None
    timed_engine, untimed_engine = runner.fresh(warmup_frames), runner.fresh()
    if warmup is not None:
        timed_engine.warm_up(warmup)
        untimed_engine.run_untimed(warmup, max_frames=warmup_frames)
    timed = [runner.run(timed_engine, s) for s in streams]
    untimed = [runner.run(untimed_engine, s, untimed=True) for s in streams]
    checks = [
        compare_recordings(a, b, causality.tolerance, name="timed_untimed")
        for a, b in zip(timed, untimed, strict=True)
    ]
    check = next((c for c in checks if not c.passed), checks[0])
    config = runner.config.protocol
    f1 = [online.score(recs, config, streams[0].classes).f1_at(0) for recs in (timed, untimed)]
    verdict = "every prediction identical" if check.passed else f"{check.first_stream} differs"
    return check.model_copy(
        update={
            "detail": f"{len(streams)} streams timed vs untimed: {verdict}; F1@0ms {100 * f1[0]:.2f} % "
            f"timed, {100 * f1[1]:.2f} % untimed; {check.detail}"
        }
    )


def _sequence_checks(runner: _Runner, stream: Stream, causality: CausalityConfig) -> list[CheckResult]:
    import torch

    engine = runner.fresh()
    adapter: Adapter = engine.adapter
    model_fn: Callable[[torch.Tensor], torch.Tensor] = getattr(adapter, "sequence_outputs")  # noqa: B009
    stack: Callable[[Sequence[Frame]], torch.Tensor] = getattr(adapter, "stack")  # noqa: B009
    frames = seal_frames(stream.frames())
    inputs = stack(frames)
    sampled = plan_gradient(len(frames), causality)
    if sampled:
        support = sequence_gradient_support(model_fn, inputs, sampled)
        gradient = judge_gradient(support, sampled, stream_id=stream.stream_id)
    else:
        gradient = CheckResult(name="gradient_flow", passed=True, detail="stream too short to probe")

    streamed = runner.run(engine, stream)
    with torch.no_grad():
        scores = model_fn(inputs).detach().cpu().numpy().astype(np.float32)
    refs = np.array([f.index for f in frames], dtype=np.int64)
    sequence = dataclasses.replace(streamed, emitted_at=refs, refers_to=refs.copy(), scores=scores)
    equivalence = compare_recordings(streamed, sequence, SEQUENCE_TOLERANCE, name="stream_sequence")
    return [gradient, equivalence]
