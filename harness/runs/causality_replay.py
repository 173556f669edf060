"""The causality protocol's **scored_replay** check (harness/runs/causality_checks.py; issue 15 item 3):
the online run's own recorded outputs are evidence. When the run directory holds an online run of the
same adapter, options and data, a random subset of its streams (drawn from the run's cut seed, any of
them, not only the first) is replayed on fresh instances, clean and occluded at hidden cuts, and must
reproduce the saved predictions of ``arrays.npz``: in full for the clean replay, up to its cut for each
occluded one. A model that cheated in the scored run — however it told the scored run from an audit —
is caught by its own outputs."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from adapters.contract import Stream
from harness.execution.config import RunConfig
from harness.results.files import RESULT_FILE as ONLINE_RESULT_FILE
from harness.results.files import load_recordings, load_result
from harness.runs.catalog import measured_differences
from harness.runs.causality_variants import AuditRunner, aggregate_runs, occlusion_runs
from protocols.causality import CausalityConfig, CheckResult, compare_recordings, plan_occlusion
from protocols.recording import StreamRecording

__all__ = ["Replayed", "replay_plan", "scored_replay"]

Replayed = list[tuple[StreamRecording, Stream, list[int]]]
"""Per replayed stream: the saved recording, the stream, its hidden cuts."""


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
    saved = [r for r in load_recordings(run_dir) if r.stream_id in by_id]
    if not saved:
        return [], "the run directory's online run recorded no stream of this data set"
    rng = np.random.default_rng([seed, 0x5C])
    picks = sorted(rng.choice(len(saved), size=min(causality.streams, len(saved)), replace=False))
    plan = []
    for i, k in enumerate(picks):
        rec = saved[int(k)]
        plan.append((rec, by_id[rec.stream_id], plan_occlusion(rec.num_frames, causality, seed, 1000 + i)))
    return plan, None


def scored_replay(
    runner: AuditRunner,
    replayed: Replayed,
    all_streams: Sequence[Stream],
    causality: CausalityConfig,
) -> CheckResult:
    """The online run's saved predictions must be reproduced by a clean replay (in full) and by every
    occluded replay (up to its cut), each on a fresh instance."""
    results: list[CheckResult] = []
    for saved, stream, cuts in replayed:
        runner.fresh()
        clean = compare_recordings(saved, runner.run(stream), causality.tolerance, name="scored_replay")
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
