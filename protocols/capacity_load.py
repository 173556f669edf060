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

A point that failed on accuracy is the model's.
"""

from __future__ import annotations

from collections.abc import Sequence

from streambench.protocols.capacity_records import Interference
from streambench.protocols.capacity_score import CapacityPoint

__all__ = ["OTHER_LOAD_CORES", "SATURATED", "judge_bound"]

OTHER_LOAD_CORES = 0.5
"""Other processes using this many cores during a point is load enough to bound the figure."""
SATURATED = 0.8
"""Workers busy this share of their cores are saturated: the model's cost bounds the figure."""


def judge_bound(curve: Sequence[CapacityPoint], lanes: int, cores: int, probe: Sequence[str]) -> Interference:
    """What bounded the search whose points are ``curve`` (``lanes`` serving workers on ``cores`` cores;
    ``probe``: the busy-wait probe's verdicts)."""
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
