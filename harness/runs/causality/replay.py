"""The causality protocol's **scored_replay** check (harness/runs/causality/checks.py):
the online run's own recorded outputs are evidence. When the run directory holds an online run of the
same adapter, options and data, a random subset of its streams (drawn from the run's cut seed, any of
them, not only the first) is replayed on fresh instances, clean and occluded at hidden cuts, and must
reproduce the saved predictions of ``arrays.npz``: in full for the clean replay, up to its cut for each
occluded one. A model that cheated in the scored run — however it told the scored run from an audit —
is caught by its own outputs.

The streams the adapter failed on in the scored run are drawn like any other (a failed
stream is scored as answered wrongly, and audited): each is replayed clean on a fresh instance and must
fail again. One that the replay answers is a finding — the model behaves differently when audited — and
so is the reverse, a stream the scored run answered that the replay fails on. Where the scored failure
was a timeout or a worker crash the finding says the machine may be the cause."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from streambench.adapters.contract import Stream
from streambench.harness.execution.adapter_errors import AdapterError
from streambench.harness.execution.config import RunConfig
from streambench.harness.results.files import RESULT_FILE as ONLINE_RESULT_FILE
from streambench.harness.results.files import FailureRecord, load_recordings, load_result
from streambench.harness.runs.catalog import measured_differences
from streambench.harness.runs.causality.variants import AuditRunner, aggregate_runs, occlusion_runs
from streambench.protocols.causality import CausalityConfig, CheckResult, compare_recordings, plan_occlusion
from streambench.protocols.recording import StreamRecording

__all__ = ["Replayed", "replay_plan", "scored_replay"]

Replayed = list[tuple[StreamRecording | FailureRecord, Stream, list[int]]]
"""Per replayed stream: the saved recording (or the failure, for a stream the scored run failed on: no
cuts), the stream, its hidden cuts."""


def replay_plan(
    config: RunConfig, run_id: str, all_streams: Sequence[Stream], causality: CausalityConfig, seed: int
) -> tuple[Replayed, str | None]:
    """The online run's streams to replay (saved recording, stream, hidden cuts), or why none."""
    run_dir = config.output_dir / run_id
    if not (run_dir / ONLINE_RESULT_FILE).is_file():
        return [], None  # no online run in this directory: nothing to replay, nothing to say
    scored = load_result(run_dir / ONLINE_RESULT_FILE)
    if measured_differences(scored, config):
        return [], "the run directory's online run used another adapter, adapter options or data set"
    by_id = {s.stream_id: s for s in all_streams}
    position = {stream_id: k for k, stream_id in enumerate(by_id)}
    recorded = [r for r in load_recordings(run_dir) if r.stream_id in by_id]
    done = {r.stream_id for r in recorded}
    failed = {f.stream_id: f for f in scored.failures if f.stream_id in by_id and f.stream_id not in done}
    # every stream of the scored run is eligible, a failed one too, in the data set's order
    saved: list[StreamRecording | FailureRecord] = sorted(
        [*recorded, *failed.values()], key=lambda item: position[item.stream_id]
    )
    if not saved:
        return [], "the run directory's online run recorded no stream of this data set"
    rng = np.random.default_rng([seed, 0x5C])
    picks = sorted(rng.choice(len(saved), size=min(causality.streams, len(saved)), replace=False))
    plan: Replayed = []
    for i, k in enumerate(picks):
        item = saved[int(k)]
        stream = by_id[item.stream_id]
        cuts = (
            plan_occlusion(item.num_frames, causality, seed, 1000 + i)
            if isinstance(item, StreamRecording)
            else []  # nothing of a failed stream was saved: no prefix to compare
        )
        plan.append((item, stream, cuts))
    return plan, None


def scored_replay(
    runner: AuditRunner,
    replayed: Replayed,
    all_streams: Sequence[Stream],
    causality: CausalityConfig,
) -> CheckResult:
    """The online run's saved predictions must be reproduced by a clean replay (in full) and by every
    occluded replay (up to its cut), each on a fresh instance; a stream the scored run failed on must
    fail again, and one it answered must not fail (module docstring)."""
    results: list[CheckResult] = []
    for saved, stream, cuts in replayed:
        runner.fresh()
        if isinstance(saved, FailureRecord):
            results.append(_failed_replay(runner, saved, stream))
            continue
        try:
            replay = runner.run(stream)
        except AdapterError as exc:
            results.append(
                CheckResult(
                    name="scored_replay",
                    passed=False,
                    first_stream=stream.stream_id,
                    first_frame=exc.frame,
                    max_difference=math.inf,
                    detail="behaves differently when audited: the scored run answered every frame of "
                    f"{stream.stream_id}, the clean replay failed at frame {exc.frame} "
                    f"({type(exc).__name__}: {exc.problem})",
                )
            )
            continue
        clean = compare_recordings(saved, replay, causality.tolerance, name="scored_replay")
        results.append(
            clean.model_copy(
                update={
                    "first_stream": None if clean.passed else stream.stream_id,
                    "detail": f"clean replay of the scored run: {clean.detail}",
                }
            )
        )
        results += occlusion_runs(
            runner, [stream], all_streams, {stream.stream_id: cuts}, causality, {stream.stream_id: saved}
        )
    check = aggregate_runs(results, causality, "scored_replay")
    ids = ", ".join(s.stream_id for _, s, _ in replayed)
    return check.model_copy(update={"detail": f"the online run's saved outputs of {ids}: {check.detail}"})


def _failed_replay(runner: AuditRunner, failure: FailureRecord, stream: Stream) -> CheckResult:
    """A stream the scored run failed on, replayed clean on the fresh instance: it must fail again (at
    any frame: where a model fails is not compared, that it fails is)."""
    scored = f"frame {failure.frame}" if failure.frame is not None else "before its first frame"
    try:
        replay = runner.run(stream)
    except AdapterError as exc:
        return CheckResult(
            name="scored_replay",
            passed=True,
            detail=f"{stream.stream_id} failed in the scored run ({scored}) and again in the clean replay "
            f"(frame {exc.frame}): consistent",
        )
    machine = (
        "; the scored failure was a timeout or a crash, which a busy machine can cause: repeat the run "
        "before concluding"
        if failure.error_type in ("AdapterTimeoutError", "AdapterCrashError")
        else ""
    )
    return CheckResult(
        name="scored_replay",
        passed=False,
        first_stream=stream.stream_id,
        first_frame=failure.frame,
        max_difference=math.inf,
        detail=f"behaves differently when audited: {stream.stream_id} failed in the scored run ({scored}: "
        f"{failure.error_type}: {failure.message}), the clean replay answered all its {replay.num_frames} "
        f"frames{machine}",
    )
