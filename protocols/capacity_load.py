"""What bounded a capacity figure: the model, or the machine's other load.

Pure: the curve's measured CPU shares in, a verdict out. The harness measures, around each point, the CPU
time its serving workers used and the CPU time the rest of the machine used (``/proc/stat`` less the run's
own processes: harness/instruments/interference.py), and before and after the search the selftest's
busy-wait probe (harness/execution/selftest_checks.py: "timer accurate, machine busy"). At the smallest N
that failed on time:

- the workers busy at least :data:`SATURATED` of their cores: the model's cost bounds the figure;
- otherwise, other processes using at least :data:`OTHER_LOAD_CORES` cores, or the probe finding the machine
  busy: the machine's load bounds it, not the model (a model at 5 % of a core a stream does not fail at
  N = 2 on its own);
- otherwise undecided (the harness's round trip, or a stall).

A point that failed on accuracy is the model's. Before the cores are read, the load generator's own pace: a
point whose frames it released late (release lag p99 at least :data:`GENERATOR_BEHIND` of the deadline)
measured the harness falling behind as much as the model (every response counts from the *scheduled*
arrival, so the late release is in the misses): undecided, or the machine's load when other processes held
the cores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from streambench.protocols.capacity_records import Interference
from streambench.protocols.capacity_score import CapacityPoint

__all__ = ["GENERATOR_BEHIND", "OTHER_LOAD_CORES", "SATURATED", "judge_bound"]

OTHER_LOAD_CORES = 0.5
"""Other processes using this many cores during a point is load enough to bound the figure."""
SATURATED = 0.8
"""Workers busy this share of their cores are saturated: the model's cost bounds the figure."""
GENERATOR_BEHIND = 0.25
"""A release lag (p99) of this share of the deadline: the load generator fell behind its schedule."""


def judge_bound(
    curve: Sequence[CapacityPoint],
    lanes: int,
    cores: int,
    probe: Sequence[str],
    deadline_ms: float | None = None,
) -> Interference:
    """What bounded the search whose points are ``curve`` (``lanes`` serving workers on ``cores`` cores;
    ``probe``: the busy-wait probe's verdicts; ``deadline_ms``: the points' deadline, None: the load
    generator's pace is not judged)."""
    busy_probe = any("busy" in verdict for verdict in probe)
    failed = sorted((p for p in curve if not p.passed), key=lambda p: p.streams)
    if not failed:
        return Interference(
            probe=list(probe), bound_by=None, reason="no N failed: nothing bounded the search"
        )
    point = failed[0]
    n = point.streams
    if point.latency_pass:
        return Interference(
            probe=list(probe), bound_by="model", reason=f"N = {n} failed on accuracy: the model's answers"
        )
    workers, others = point.workers_cpu_share, point.others_cpu
    used = "unknown" if workers is None else f"{workers:.2f}"
    lag_ms = None if point.release_lag_p99_us is None else point.release_lag_p99_us / 1e3
    if deadline_ms is not None and lag_ms is not None and lag_ms >= GENERATOR_BEHIND * deadline_ms:
        held = others is not None and others >= OTHER_LOAD_CORES
        reason = (
            f"at N = {n}, the smallest N that failed, the load generator released frames up to "
            f"{lag_ms:.3g} ms late (p99; deadline {deadline_ms:g} ms): it fell behind its schedule, so the "
            "harness bounds this figure as much as the model"
        )
        if held:
            reason += f" (other processes used {others:.2f} of {cores} core(s))"
        bound: Literal["machine load", "undecided"] = "machine load" if held else "undecided"
        return Interference(probe=list(probe), bound_by=bound, reason=reason)
    if workers is not None and workers >= SATURATED * lanes:
        reason = (
            f"at N = {n}, the smallest N that failed, the serving workers were busy {used} of {lanes} core(s)"
        )
        return Interference(
            probe=list(probe), bound_by="model", reason=reason + ": the model's cost bounds it"
        )
    loaded = others is not None and others >= OTHER_LOAD_CORES
    if loaded or busy_probe:
        other = "unknown" if others is None else f"{others:.2f}"
        reason = (
            f"at N = {n}, the smallest N that failed, other processes used {other} of {cores} core(s) while "
            f"the serving workers used {used} of their {lanes}"
            + ("; the busy-wait probe found the machine busy" if busy_probe else "")
            + ": the machine's load, not the model, bounds this figure (rerun on a quiet machine)"
        )
        return Interference(probe=list(probe), bound_by="machine load", reason=reason)
    other = "unknown" if others is None else f"{others:.2f}"
    reason = (
        f"at N = {n} neither the serving workers ({used} of {lanes} core(s)) nor other processes ({other}) "
        "filled the cores: the harness's round trip or a stall bounds it"
    )
    return Interference(probe=list(probe), bound_by="undecided", reason=reason)
