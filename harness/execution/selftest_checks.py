"""The selftest's checks of the timer (``streambench selftest``: harness/execution/selftest.py runs them
and the null adapter's floor, and prints the report).

``../shared/DESIGN.md``, "The engine": the null adapter run publishes "the clock's resolution as the floor
of every measurement"; the timing point is seed 004 §6.2.3's ("计时点"): ``time.perf_counter_ns()`` around
``predict()``. Two checks, each a function of its measurement:

- :func:`measure_resolution`: the clock's resolution, declared and measured (the smallest non-zero step
  between consecutive ``perf_counter_ns()`` reads; a Python-level read costs tens of nanoseconds, so the
  measured figure is an upper bound of the true tick) — :class:`ResolutionFigures`;
- :func:`judge_busy_wait`: a busy-wait run of a known duration
  (:class:`streambench.adapters.null.BusyWaitAdapter`) as the engine measured it, and its verdict —
  :class:`BusyWaitFigures`. A busy wait spins on the engine's own clock, so another process can only
  add time to a frame: the timer is judged on the low end (p1) and no frame may be below the duration;
  interference is reported apart ("timer accurate, machine busy" is not a failure). The
  machine is *busy* when the median is off by more than the duration's tolerance **or** the tail is:
  p99 above ``nominal * (1 + tail_tolerance) + tail_slack_us``
  (:data:`TAIL_TOLERANCE`, :data:`TAIL_SLACK_US`). Each duration's :data:`Status` is PASS (timer
  accurate, machine quiet), WARN (timer accurate, machine busy) or FAIL (timer inaccurate).
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, computed_field

__all__ = [
    "TAIL_SLACK_US",
    "TAIL_TOLERANCE",
    "BusyWaitFigures",
    "ResolutionFigures",
    "Status",
    "judge_busy_wait",
    "measure_resolution",
]

TAIL_TOLERANCE = 0.5
"""Relative excess of p99 over the nominal duration a quiet machine stays within (plus the slack)."""
TAIL_SLACK_US = 50.0
"""Absolute excess of p99 allowed on top (µs): the loop's own cost and timer reads weigh at 100 µs."""
Status = Literal["PASS", "WARN", "FAIL"]
"""A duration's (and the report's) outcome: PASS timer accurate, machine quiet; WARN timer accurate,
machine busy; FAIL timer inaccurate."""


class ResolutionFigures(BaseModel):
    declared_ns: float = Field(description="time.get_clock_info('perf_counter').resolution")
    measured_ns: int = Field(description="smallest non-zero step between consecutive reads (0: none seen)")
    read_cost_ns: float = Field(description="mean time per perf_counter_ns() read in a Python loop")
    samples: int


class BusyWaitFigures(BaseModel):
    duration_us: float
    frames: int
    median_ns: float
    p99_ns: float
    min_ns: int
    max_ns: int
    below_nominal: int = Field(description="frames measured below the busy-wait's duration (must be 0)")
    low_ns: float = Field(0.0, description="the 1st percentile: the frames the machine left alone")
    timer_error: float = Field(0.0, description="(p1 - nominal) / nominal: the clock's own error")
    relative_error: float = Field(description="(median - nominal) / nominal: clock error plus interference")
    tolerance: float
    tail_limit_ns: float | None = Field(
        None, description="the p99 a quiet machine stays within (null: judged before 0.2.0)"
    )
    machine: Literal["quiet", "busy"] = Field(
        "quiet", description="busy: the median is off by more than the tolerance, or p99 above the tail limit"
    )
    verdict: str = Field("", description="timer accurate, machine quiet | timer accurate, machine busy | ...")
    passed: bool = Field(description="the timer is accurate: judged on the low end, never on interference")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> Status:
        """FAIL: timer inaccurate; WARN: accurate on a busy machine; PASS: accurate, machine quiet."""
        return "FAIL" if not self.passed else "WARN" if self.machine == "busy" else "PASS"


def judge_busy_wait(
    duration_us: float,
    latency_ns: np.ndarray,
    tolerance: float,
    tail_tolerance: float = TAIL_TOLERANCE,
    tail_slack_us: float = TAIL_SLACK_US,
) -> BusyWaitFigures:
    """Figures of one busy-wait run and its verdict. The busy-wait ends at the first clock
    read past its deadline, so another process can only *add* time to a frame: the clock's own error
    shows at the low end (the 1st percentile, the frames the machine left alone), interference in the
    median and the tail. The timer passes when ``|p1 - nominal| / nominal <= tolerance``, no frame is
    below nominal and the error is finite; the machine is *busy* when the median's error exceeds the
    tolerance or p99 exceeds ``nominal * (1 + tail_tolerance) + tail_slack_us`` — a separate finding
    ("timer accurate, machine busy", with the figure that says so), not a failure."""
    lat = np.asarray(latency_ns, dtype=np.int64)
    if lat.ndim != 1 or lat.size == 0:
        raise ValueError("latency_ns must be a non-empty 1-D array")
    nominal = duration_us * 1000.0
    median = float(np.median(lat))
    error = (median - nominal) / nominal
    below = int(np.count_nonzero(lat < round(nominal)))
    low = float(np.percentile(lat, 1, method="lower"))
    timer_error = (low - nominal) / nominal
    p99 = float(np.percentile(lat, 99))
    tail_limit = nominal * (1.0 + tail_tolerance) + tail_slack_us * 1000.0
    accurate = bool(np.isfinite(timer_error) and abs(timer_error) <= tolerance and below == 0)
    busy_median, busy_tail = bool(abs(error) > tolerance), bool(p99 > tail_limit)
    busy = busy_median or busy_tail
    if accurate:
        verdict = f"timer accurate, machine {'busy' if busy else 'quiet'}"
        if busy_tail:  # the figure that makes it busy, beside the rule
            verdict += (
                f": p99 {p99 / 1e6:.3g} ms is {p99 / nominal:.3g}x the {duration_us:g} µs asked "
                f"(a quiet machine stays within {tail_limit / 1e6:.3g} ms)"
            )
        elif busy_median:
            verdict += f": median off by {error:+.1%} (tolerance {tolerance:.0%})"
    elif below:
        verdict = f"timer inaccurate: {below} frame(s) measured below the busy-wait's duration"
    else:
        verdict = f"timer inaccurate: p1 off by {timer_error:+.2%} (tolerance {tolerance:.0%})"
    return BusyWaitFigures(
        duration_us=duration_us,
        frames=int(lat.size),
        median_ns=median,
        p99_ns=p99,
        min_ns=int(lat.min()),
        max_ns=int(lat.max()),
        below_nominal=below,
        low_ns=low,
        timer_error=timer_error,
        relative_error=error,
        tolerance=tolerance,
        tail_limit_ns=tail_limit,
        machine="busy" if busy else "quiet",
        verdict=verdict,
        passed=accurate,
    )


def measure_resolution(samples: int) -> ResolutionFigures:
    """Read ``perf_counter_ns()`` ``samples`` times back to back; the smallest non-zero step."""
    clock = time.perf_counter_ns
    reads = [0] * samples
    for i in range(samples):
        reads[i] = clock()
    steps = np.diff(np.asarray(reads, dtype=np.int64))
    nonzero = steps[steps > 0]
    return ResolutionFigures(
        declared_ns=time.get_clock_info("perf_counter").resolution * 1e9,
        measured_ns=int(nonzero.min()) if nonzero.size else 0,
        read_cost_ns=(reads[-1] - reads[0]) / (samples - 1),
        samples=samples,
    )
