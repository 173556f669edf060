"""A measurement-quality verdict on every timed run: VALID or INVALID, with reasons.

After MLPerf LoadGen, whose result is VALID or INVALID with the reasons printed beside the figures (a run
too short, too few queries for the percentile it reports, a latency bound missed): a latency figure is
only as good as the conditions it was measured in. INVALID when

* **too few frames for a percentile reported**: a p-th percentile of fewer than ``100 / (100 - p)`` frames
  is the largest sample, not a percentile (p95 needs 20, p99 100);
* **latency spread**: IQR / median of the per-frame latencies above ``max_spread`` (the frames of one
  model on one input size do not differ by that much unless something else ran);
* **preemption**: the timing thread's involuntary context switches (``getrusage``, per stream) per frame
  above ``max_preempted_share`` — an upper bound on the share of frames that include another process's
  time (a switch is counted per stream, so which frames it hit is unknown); where the model's own other
  threads ran beside the timing thread (their CPU time, read by the harness, above ``own_threads_share``
  of the timing thread's), the switches may be its own threads' and are a note, not a reason;
* **clock resolution**: the clock's resolution above ``max_resolution_share`` of the median latency.

Machine interference below those limits is a *note* ("machine busy"), not a verdict: the interleaved gate
(harness/results/gate.py) is built to judge through it. A figure the harness could not read (no context
switch counts, no CPU frequency) is ``None`` with the reason. Pure: the caller gathers the readings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "NOT_RECORDED",
    "MeasurementQuality",
    "QualityLimits",
    "invalid_reason",
    "judge_quality",
    "refusal",
    "short_reasons",
    "verdict_line",
]

_TAIL_FRAMES = {"p50": 2, "p95": 20, "p99": 100}


class QualityLimits(BaseModel):
    """The limits past which a run is INVALID."""

    model_config = ConfigDict(extra="forbid")

    max_spread: float = Field(1.0, gt=0, description="IQR / median of the per-frame latencies")
    max_preempted_share: float = Field(0.5, gt=0, description="involuntary context switches per frame")
    busy_share: float = Field(
        0.02, gt=0, description="switches per frame above which the machine is noted busy"
    )
    max_resolution_share: float = Field(0.01, gt=0, description="clock resolution / median latency")
    own_threads_share: float = Field(
        0.1,
        gt=0,
        description="the model's own other threads' CPU / the engine thread's, above which preemptions are "
        "noted as possibly its own",
    )


class MeasurementQuality(BaseModel):
    """The verdict and what it was judged on."""

    verdict: Literal["VALID", "INVALID"]
    reasons: list[str] = Field(default_factory=list, description="why INVALID")
    notes: list[str] = Field(
        default_factory=list, description="what is worth knowing but does not invalidate"
    )
    frames: int
    streams: int
    latency_spread: float | None
    preempted_share: float | None = Field(description="involuntary context switches per frame (upper bound)")
    preempted_reason: str | None = None
    clock_resolution_ns: float | None
    cpu_frequency_khz: list[int] | None = None
    cpu_frequency_reason: str | None = None
    limits: QualityLimits


def judge_quality(
    latency_ns: npt.ArrayLike,
    streams: int,
    involuntary_switches: int | None,
    clock_resolution_ns: float | None,
    percentiles: Sequence[str] = ("p50", "p95", "p99"),
    limits: QualityLimits | None = None,
    cpu_frequency: tuple[list[int] | None, str | None] = (None, "not read"),
    own_threads_share: float | None = None,
) -> MeasurementQuality:
    """Judge one run's (or one side's) per-frame latencies and readings. ``own_threads_share``: the CPU
    time of the model's own threads other than the one that ran the engine, as a share of that one's
    (None: not read): above ``limits.own_threads_share`` the timing thread's preemptions may be the
    model's own threads', not another process's, and are noted, not judged."""
    limits = limits or QualityLimits()
    lat = np.asarray(latency_ns, dtype=np.float64)
    n = int(lat.size)
    reasons: list[str] = []
    notes: list[str] = []
    for key in percentiles:
        need = _TAIL_FRAMES.get(key, 1)
        if n < need:
            reasons.append(f"{key} of {n} frames is not a percentile: it needs at least {need} frames")
    spread = None
    median = float(np.median(lat)) if n else 0.0
    if n and median > 0:
        q1, q3 = np.percentile(lat, [25, 75])
        spread = float((q3 - q1) / median)
        if spread > limits.max_spread:
            reasons.append(f"latency spread IQR/median = {spread:.0%} exceeds {limits.max_spread:.0%}")
    elif n:
        reasons.append("median latency is 0: below the clock's resolution")
    share, share_reason = None, None
    if involuntary_switches is None:
        share_reason = "context switches not readable on this platform (getrusage RUSAGE_THREAD)"
    elif n:
        share = involuntary_switches / n
        own = own_threads_share is not None and own_threads_share > limits.own_threads_share
        if share > limits.max_preempted_share and own:
            notes.append(
                f"{involuntary_switches} involuntary context switches in {n} frames, while the model's own "
                f"other threads ran {own_threads_share:.0%} of the engine thread's CPU: the preemptions may "
                "be its own threads', not another process's (not judged)"
            )
        elif share > limits.max_preempted_share:
            reasons.append(
                f"{involuntary_switches} involuntary context switches in {n} frames: up to {share:.0%} of "
                f"frames include another process's time (limit {limits.max_preempted_share:.0%})"
            )
        elif share > limits.busy_share:
            notes.append(
                f"machine busy: up to {share:.1%} of frames were preempted ({involuntary_switches} "
                "involuntary context switches)"
            )
    too_coarse = (
        clock_resolution_ns is not None and clock_resolution_ns > limits.max_resolution_share * median
    )
    if median > 0 and too_coarse:
        reasons.append(
            f"clock resolution {clock_resolution_ns:g} ns exceeds {limits.max_resolution_share:.0%} of "
            f"the median latency ({median:.0f} ns)"
        )
    freq, freq_reason = cpu_frequency
    if freq is not None and len(set(freq)) > 1:
        notes.append(f"CPU frequencies differ between cores: {min(freq)}–{max(freq)} kHz")
    return MeasurementQuality(
        verdict="INVALID" if reasons else "VALID",
        reasons=reasons,
        notes=notes,
        frames=n,
        streams=streams,
        latency_spread=spread,
        preempted_share=share,
        preempted_reason=share_reason,
        clock_resolution_ns=clock_resolution_ns,
        cpu_frequency_khz=freq,
        cpu_frequency_reason=freq_reason,
        limits=limits,
    )


def refusal(
    qualities: Mapping[str, MeasurementQuality | None], consequence: str = "a regression is not called"
) -> str | None:
    """Why a regression (or, as ``consequence`` says, any verdict) must not be called between these
    measurements (None: it may be)."""
    bad = [
        f"{name}: {'; '.join(q.reasons)}"
        for name, q in qualities.items()
        if q is not None and q.verdict == "INVALID"
    ]
    if not bad:
        return None
    return "measurement INVALID (" + " | ".join(bad) + f"); {consequence} (--force to call it anyway)"


NOT_RECORDED = "measurement quality not recorded (a result written before the verdict existed)"


def short_reasons(quality: MeasurementQuality) -> str:
    """The reasons of an INVALID verdict, each cut at its first ": " (``2298 involuntary context switches
    in 375 frames``, ``p99 of 50 frames is not a percentile``): what a table cell has room for; the full
    reasons are :func:`verdict_line`'s."""
    return "; ".join(reason.split(": ", 1)[0] for reason in quality.reasons)


def invalid_reason(quality: MeasurementQuality | None) -> str | None:
    """Why the run's timings are not a measurement of the model (its INVALID reasons, short), or None when
    they are (VALID, or no verdict recorded)."""
    if quality is None or quality.verdict != "INVALID":
        return None
    return f"measurement INVALID: {short_reasons(quality)}"


def verdict_line(quality: MeasurementQuality | None) -> str:
    """The verdict as every view prints it beside the figures: ``measurement VALID``, ``measurement
    INVALID: <reasons>``, then the notes (``machine busy: ...``); the line for a result that has none."""
    if quality is None:
        return NOT_RECORDED
    why = "; ".join(quality.reasons + quality.notes)
    return f"measurement {quality.verdict}" + (f": {why}" if why else "")
