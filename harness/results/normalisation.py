"""Hardware normalisation of a run against a baseline run (seed 004 §6.3.1 (2)): speed-up and
FLOPs-normalised latency, only between runs of the same environment fingerprint."""

from __future__ import annotations

from pathlib import Path

from harness.results.files import NormalisationRecord, RunResult, load_result
from protocols.metrics import flops_normalised_latency, speedup

__all__ = ["normalise"]


def normalise(result: RunResult, baseline_dir: Path) -> NormalisationRecord:
    """Speed-up and FLOPs-normalised latency against a baseline run on the same environment fingerprint."""
    base = load_result(baseline_dir)
    record = {"baseline_run": base.run_id, "baseline_path": str(baseline_dir)}
    if base.fingerprint != result.fingerprint:
        return NormalisationRecord(
            **record,
            speedup=None,
            flops_normalised_latency_ms=None,
            reason=f"environment fingerprints differ ({base.fingerprint} vs {result.fingerprint}): "
            "latencies from different environments are not compared",
        )
    mean_ms = result.metrics.overall.speed.latency.mean_ms
    base_ms = base.metrics.overall.speed.latency.mean_ms
    flops, base_flops = result.resources.flops_per_frame, base.resources.flops_per_frame
    normalised = (
        None if flops is None or base_flops is None else flops_normalised_latency(mean_ms, flops, base_flops)
    )
    return NormalisationRecord(
        **record,
        speedup=speedup(base_ms, mean_ms) if mean_ms > 0 and base_ms > 0 else None,
        flops_normalised_latency_ms=normalised,
        reason=None if normalised is not None else "FLOPs per frame unknown for this run or the baseline",
    )
