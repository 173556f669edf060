"""Hardware normalisation of a run against a baseline run (seed 004 §6.3.1 (2)): speed-up and
FLOPs-normalised latency, only between runs of the same environment fingerprint.

``--baseline`` is checked before any stream is measured (:func:`check_baseline`); a baseline that cannot be
read once the streams are measured (deleted meanwhile, or on ``--resume``) costs the normalisation, never
the run (:func:`normalise_measured`).
"""

from __future__ import annotations

from pathlib import Path

from streambench.harness.results.files import NormalisationRecord, ResultFileError, RunResult, load_result
from streambench.protocols.metrics import flops_normalised_latency, speedup

__all__ = ["check_baseline", "normalise", "normalise_measured"]


def check_baseline(baseline_dir: Path) -> RunResult:
    """The baseline run's result, read before the run measures anything; ValueError naming the option
    and the file when there is none to compare with (no such directory, no readable ``result.json``)."""
    try:
        return load_result(baseline_dir)
    except ResultFileError as exc:
        raise ValueError(
            f"--baseline {baseline_dir}: not a run to compare with ({exc}); give the directory of a "
            "finished online run, or leave --baseline out"
        ) from None


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


def normalise_measured(result: RunResult, baseline_dir: Path) -> NormalisationRecord:
    """:func:`normalise` after the streams are measured: a baseline that cannot be read gives a record
    with no figures and the ``error`` (the run is written all the same, and ``run`` exits 2)."""
    try:
        return normalise(result, baseline_dir)
    except ResultFileError as exc:
        error = f"--baseline {baseline_dir}: could not be read after the streams were measured ({exc})"
        return NormalisationRecord(
            baseline_run="",
            baseline_path=str(baseline_dir),
            speedup=None,
            flops_normalised_latency_ms=None,
            reason=error,
            error=error,
        )
