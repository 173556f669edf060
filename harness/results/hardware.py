"""The hardware-normalised view across machines — seed 004 §6.3.1 "硬件归一化与公平对比".

Online runs from several machines (stores, or run directories copied from elsewhere) are grouped by
machine: the environment fingerprint (:func:`streambench.harness.instruments.manifest.fingerprint`), which
hashes the items that change timings. On each machine every method's latency, FPS and energy is divided
by the baseline method's measured **on the same machine** (§6.3.1 (2)), so the quotients can be set side by
side across machines while raw latencies never are:

* speed-up ``Latency_baseline / Latency_method`` of the mean latency per frame, which is also the FPS ratio
  (FPS = 1 / mean latency), with the two-sample bootstrap interval from both runs' streams
  (:func:`streambench.protocols.metrics.speedup_interval.bootstrap_speedup`); the relative latency
  ``1 / speed-up`` with ``[1 / high, 1 / low]``;
* FLOPs-normalised latency ``Latency_measured × FLOPs_baseline / FLOPs_measured`` (ms, on that machine) and
  the same over the baseline's latency (normalised units), where both runs counted FLOPs per frame
  (``resources.flops_per_frame``: torch's flop counter; adapters declare no FLOPs of their own);
* energy per frame of the method over the baseline's, GPU (NVML) and CPU (RAPL) apart, where both runs
  measured it: one reading per run (its measured window), so no interval.

A method is what a run names as its adapter (registry name or ``module:Class``). One run per method and
machine is used: the newest; the others are listed as unused. A machine with no run of the baseline is
refused, with the reason. Quality figures (F1@Δt) are the runs' own: the algorithmic clock does not
depend on the hardware. Only ``result.json`` is read (the per-stream latency sums are in it).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from streambench.harness.instruments.manifest import fingerprint
from streambench.harness.results.files import RunResult
from streambench.harness.results.online_runs import HardwareInputError, collect_runs
from streambench.protocols.metrics import bootstrap_ratio, flops_normalised_latency
from streambench.protocols.metrics.speedup_interval import bootstrap_speedup

__all__ = [
    "INTERVAL_METHOD",
    "Estimate",
    "HardwareInputError",
    "HardwareView",
    "Machine",
    "NormalisedRow",
    "RawRun",
    "build_view",
    "collect_runs",
]

INTERVAL_METHOD = (
    "two-sample percentile bootstrap over streams: each resample draws the baseline run's streams and, "
    "independently, the method run's streams with replacement and recomputes the ratio of their mean "
    "latencies (total time / frames); the interval is the quantiles of the resampled ratios (Efron & "
    "Tibshirani 1993, §8.3 and §13.3)"
)
_ENERGY_NO_INTERVAL = "one energy reading per run (its measured window): no per-stream samples to resample"
_HARDWARE_ITEMS = ("cpu_model", "cpu_count", "gpu_model", "torch_version", "os")


class Estimate(BaseModel):
    """A figure, with its interval where it has one, or ``value=None`` with the reason."""

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = Field(None, description="why the value is null, or why it has no interval")


class RawRun(BaseModel):
    """One run's own figures on its machine (never compared across machines)."""

    run_id: str
    path: str
    method: str = Field(description="the adapter the run names (registry name or module:Class)")
    adapter_options: dict[str, Any]
    created_at: datetime
    streams: int
    frames: int
    mean_latency_ms: Estimate
    p50_ms: float
    p95_ms: float
    fps: float | None
    f1: Estimate = Field(description="frame-level micro F1@Δt (Strict) with its interval over streams")
    gpu_energy_per_frame_j: Estimate
    cpu_energy_per_frame_j: Estimate
    flops_per_frame: int | None
    flops_reason: str | None
    quality: str | None = Field(description="VALID / INVALID (measurement quality); None in older runs")
    stream_ms: list[float] = Field(exclude=True, description="each measured stream's total latency (ms)")
    stream_frames: list[int] = Field(exclude=True, description="each measured stream's frames")


class NormalisedRow(BaseModel):
    """One method on one machine, divided by that machine's baseline run."""

    method: str
    machine: str
    fingerprint: str
    run_id: str
    baseline_run_id: str
    speedup: Estimate = Field(description="Latency_baseline / Latency_method (mean per frame) = FPS ratio")
    relative_latency: Estimate = Field(description="Latency_method / Latency_baseline = 1 / speed-up")
    flops_normalised_latency_ms: Estimate = Field(
        description="Latency_measured x FLOPs_baseline / FLOPs_measured, ms on this machine"
    )
    relative_flops_normalised_latency: Estimate = Field(
        description="the FLOPs-normalised latency over the baseline's latency (normalised units)"
    )
    relative_gpu_energy: Estimate = Field(description="GPU energy per frame, method / baseline")
    relative_cpu_energy: Estimate = Field(description="CPU (RAPL) energy per frame, method / baseline")
    f1: Estimate
    notes: list[str] = Field(default_factory=list)


class Machine(BaseModel):
    """The runs of one environment fingerprint, and their normalisation (or the refusal, with the reason)."""

    name: str
    fingerprint: str
    hardware: dict[str, str] = Field(description="the manifest items that say what the machine is")
    baseline_run_id: str | None
    refused: str | None = Field(description="why this machine's runs are not normalised; None: they are")
    runs: list[RawRun]
    unused: dict[str, str] = Field(default_factory=dict, description="run id -> why it is not used")
    rows: list[NormalisedRow] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class HardwareView(BaseModel):
    """Every machine's runs, normalised by the baseline method on that machine."""

    baseline: str
    delta_ms: float = Field(description="the Δt of the F1 shown (and drawn in the Pareto plot)")
    confidence: float
    n_resamples: int
    interval_method: str = INTERVAL_METHOD
    machines: list[Machine]
    skipped: dict[str, str] = Field(default_factory=dict, description="path -> why it was not read")
    notes: list[str] = Field(default_factory=list)

    def rows(self) -> list[NormalisedRow]:
        """Every normalised row, a method's machines side by side: the baseline first, then by name."""
        rows = [row for machine in self.machines for row in machine.rows]
        order = {m: i for i, m in enumerate(dict.fromkeys([self.baseline, *sorted(r.method for r in rows)]))}
        return sorted(rows, key=lambda row: order[row.method])  # stable: machines in their order


# --- one run's figures ----------------------------------------------------------------------------------


def _deltas(result: RunResult) -> list[float]:
    return [p.delta_ms for p in result.metrics.overall.accuracy.curves["frame"]["strict"]]


def _common_delta(runs: list[tuple[Path, RunResult]], delta_ms: float | None) -> float:
    if delta_ms is not None:
        for run_dir, result in runs:
            if delta_ms not in _deltas(result):
                raise HardwareInputError(
                    f"--delta-ms {delta_ms:g}: run {run_dir} scored F1 only at "
                    f"{', '.join(f'{d:g}' for d in _deltas(result))} ms"
                )
        return delta_ms
    common = set(_deltas(runs[0][1])).intersection(*(_deltas(r) for _, r in runs[1:]))
    if not common:
        raise HardwareInputError("the runs share no Δt of F1@Δt; give runs scored at a common --delta-ms")
    return max(common)


def _raw(run_dir: Path, result: RunResult, delta_ms: float, resamples: int, confidence: float) -> RawRun:
    measured = [s.speed.latency for s in result.metrics.streams if s.speed.latency.n > 0]
    stream_ms = [lat.mean_ms * lat.n for lat in measured]
    frames = [lat.n for lat in measured]
    if measured and sum(stream_ms) > 0:
        mean = bootstrap_ratio(stream_ms, frames, n_resamples=resamples, confidence=confidence)
        mean_latency = Estimate(value=mean.estimate, low=mean.low, high=mean.high)
    else:
        mean_latency = Estimate(value=None, reason="no measured frame, or every latency below the clock")
    f1 = result.metrics.headline.f1_strict[_deltas(result).index(delta_ms)]
    res = result.resources
    rapl = res.cpu_energy.energy_per_frame_j(res.frames_measured)
    overall = result.metrics.overall.speed.latency
    return RawRun(
        run_id=result.run_id,
        path=str(run_dir),
        method=result.adapter,
        adapter_options=result.adapter_options,
        created_at=result.created_at,
        streams=len(measured),
        frames=sum(frames),
        mean_latency_ms=mean_latency,
        p50_ms=overall.p50_ms,
        p95_ms=overall.p95_ms,
        fps=overall.fps,
        f1=Estimate(value=f1.estimate, low=f1.low, high=f1.high),
        gpu_energy_per_frame_j=Estimate(value=res.energy_per_frame_j, reason=res.energy_per_frame_reason),
        cpu_energy_per_frame_j=Estimate(
            value=rapl, reason=None if rapl is not None else res.cpu_energy.reason
        ),
        flops_per_frame=res.flops_per_frame,
        flops_reason=res.flops_reason,
        quality=result.measurement_quality.verdict if result.measurement_quality else None,
        stream_ms=stream_ms,
        stream_frames=frames,
    )


def _hardware(result: RunResult) -> dict[str, str]:
    items = {name: getattr(result.environment, name) for name in _HARDWARE_ITEMS}
    return {k: str(v.value) if v.value is not None else f"null ({v.reason})" for k, v in items.items()}


# --- normalising ----------------------------------------------------------------------------------------


def _both(what: str, *reasons: str | None) -> str:
    """Why a quotient is null: the method's and the baseline's reasons, once when both runs give the same."""
    method, base = reasons
    if method is not None and method == base:
        return f"{what} (both runs: {method})"
    sides = [f"{who}: {why}" for who, why in (("method", method), ("baseline", base)) if why is not None]
    return f"{what} ({'; '.join(sides)})"


def _energy(method: Estimate, base: Estimate) -> Estimate:
    if method.value is None or base.value is None:
        why = [e.reason or "not measured" if e.value is None else None for e in (method, base)]
        return Estimate(value=None, reason=_both("energy per frame not measured", *why))
    if base.value <= 0:
        return Estimate(value=None, reason="the baseline's energy per frame is 0")
    return Estimate(value=method.value / base.value, reason=_ENERGY_NO_INTERVAL)


def _scaled(estimate: Estimate, factor: float) -> Estimate:
    return Estimate(
        value=None if estimate.value is None else estimate.value * factor,
        low=None if estimate.low is None else estimate.low * factor,
        high=None if estimate.high is None else estimate.high * factor,
        reason=estimate.reason,
    )


def _data_of(result: RunResult) -> tuple[str, dict[str, Any]]:
    """The workload a latency was measured on: the data set and its configuration, its seed aside."""
    return result.dataset, {k: v for k, v in result.dataset_config.items() if k != "seed"}


def _row(
    machine: Machine, run: RawRun, base: RawRun, same_data: bool, resamples: int, confidence: float, seed: int
) -> NormalisedRow:
    notes = [] if same_data else ["measured on other data than the baseline (data set or its settings)"]
    sides = (("this", run),) if run is base else (("this", run), ("the baseline", base))
    notes += [f"{who} run's measurement is INVALID" for who, r in sides if r.quality == "INVALID"]
    if run is base:
        one = Estimate(value=1.0, reason="the baseline itself: 1 by definition")
        speedup, relative = one, one
    elif run.mean_latency_ms.value is None or base.mean_latency_ms.value is None:
        why = run.mean_latency_ms.reason or base.mean_latency_ms.reason
        speedup = relative = Estimate(value=None, reason=f"mean latency not measured: {why}")
    else:
        try:
            ratio = bootstrap_speedup(
                base.stream_ms,
                base.stream_frames,
                run.stream_ms,
                run.stream_frames,
                resamples,
                confidence,
                seed,
            )
        except ValueError as exc:  # e.g. streams whose every latency is below the clock's resolution
            speedup = relative = Estimate(value=None, reason=f"no speed-up: {exc}")
        else:
            speedup = Estimate(value=ratio.estimate, low=ratio.low, high=ratio.high)
            relative = Estimate(value=1 / ratio.estimate, low=1 / ratio.high, high=1 / ratio.low)
    if run.flops_per_frame and base.flops_per_frame and run.mean_latency_ms.value:
        factor = base.flops_per_frame / run.flops_per_frame
        normalised = _scaled(run.mean_latency_ms, factor)
        normalised.value = flops_normalised_latency(
            run.mean_latency_ms.value, run.flops_per_frame, base.flops_per_frame
        )
        relative_normalised = _scaled(relative, factor)
    else:
        counted = [r.flops_reason or "not counted" if not r.flops_per_frame else None for r in (run, base)]
        reason = _both("FLOPs per frame unknown", *counted) if any(counted) else "mean latency not measured"
        normalised = relative_normalised = Estimate(value=None, reason=reason)
    return NormalisedRow(
        method=run.method,
        machine=machine.name,
        fingerprint=machine.fingerprint,
        run_id=run.run_id,
        baseline_run_id=base.run_id,
        speedup=speedup,
        relative_latency=relative,
        flops_normalised_latency_ms=normalised,
        relative_flops_normalised_latency=relative_normalised,
        relative_gpu_energy=_energy(run.gpu_energy_per_frame_j, base.gpu_energy_per_frame_j),
        relative_cpu_energy=_energy(run.cpu_energy_per_frame_j, base.cpu_energy_per_frame_j),
        f1=run.f1,
        notes=notes,
    )


def _machine(
    number: int, fp: str, members: list[tuple[Path, RunResult]], baseline: str, figures: dict[str, Any]
) -> Machine:
    """One machine: the newest run of each method, and each divided by the baseline's (or the refusal)."""
    newest: dict[str, tuple[Path, RunResult]] = {}
    unused: dict[str, str] = {}
    for run_dir, result in sorted(members, key=lambda m: (m[1].created_at, m[1].run_id), reverse=True):
        if result.adapter in newest:
            unused[result.run_id] = f"an older run of {result.adapter} on this machine (the newest is used)"
        else:
            newest[result.adapter] = (run_dir, result)
    delta, resamples, confidence = figures["delta_ms"], figures["n_resamples"], figures["confidence"]
    raw = {m: _raw(d, r, delta, resamples, confidence) for m, (d, r) in sorted(newest.items())}
    machine = Machine(
        name=f"machine {number}",
        fingerprint=fp,
        hardware=_hardware(members[0][1]),
        baseline_run_id=raw[baseline].run_id if baseline in raw else None,
        refused=None,
        runs=list(raw.values()),
        unused=unused,
    )
    stated = {fingerprint(r.environment) for _, r in members}
    if stated != {fp}:
        machine.notes.append(
            f"the recorded fingerprint {fp} does not match the environment its runs record "
            f"({', '.join(sorted(stated))}): a result file was edited, or written by another streambench"
        )
    if baseline not in raw:
        machine.refused = (
            f"no run of the baseline {baseline} on this machine (fingerprint {fp}): a latency is divided "
            f"only by the baseline's measured on the same machine; run {baseline} here to normalise it"
        )
        return machine
    base_data = _data_of(newest[baseline][1])
    machine.rows = [
        _row(
            machine,
            run,
            raw[baseline],
            _data_of(newest[m][1]) == base_data,
            resamples,
            confidence,
            figures["seed"],
        )
        for m, run in raw.items()
    ]
    return machine


def build_view(
    paths: list[Path],
    baseline: str,
    delta_ms: float | None = None,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> HardwareView:
    """The hardware-normalised view of the online runs under ``paths`` against the method ``baseline``."""
    runs, skipped = collect_runs(paths)
    if not runs:
        raise HardwareInputError(f"no finished online run under {', '.join(str(p) for p in paths)}")
    methods = sorted({r.adapter for _, r in runs})
    if baseline not in methods:
        raise HardwareInputError(
            f"--baseline {baseline}: no run of it among the {len(runs)} runs given "
            f"(their adapters: {', '.join(methods)})"
        )
    figures = {
        "delta_ms": _common_delta(runs, delta_ms),
        "n_resamples": n_resamples,
        "confidence": confidence,
    }
    by_fingerprint: dict[str, list[tuple[Path, RunResult]]] = {}
    for run_dir, result in runs:
        by_fingerprint.setdefault(result.fingerprint, []).append((run_dir, result))
    machines = [
        _machine(number, fp, members, baseline, {**figures, "seed": seed})
        for number, (fp, members) in enumerate(by_fingerprint.items(), start=1)
    ]
    view = HardwareView(baseline=baseline, machines=machines, skipped=skipped, **figures)
    workloads = {
        json.dumps(_data_of(r), sort_keys=True, default=str)
        for members in by_fingerprint.values()
        for _, r in members
        if r.adapter == baseline
    }
    if len(workloads) > 1:
        view.notes.append(
            "the baseline ran on other data on different machines (data set or its settings): speed-ups are "
            "comparable across machines only for the same workload"
        )
    return view
