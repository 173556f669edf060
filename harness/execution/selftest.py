"""``streambench selftest``: the floor of every measurement, and a check that the clock measures right.

``../shared/DESIGN.md``, "The engine": "A null adapter run (``streambench selftest``) publishes that
overhead and the clock's resolution as the floor of every measurement." The timing point is the one
of seed 004 §6.2.3 ("计时点"): ``time.perf_counter_ns()`` around ``predict()``. The report holds

- the clock (:func:`streambench.harness.engine.clock_info`) and its resolution, declared and measured: the
  smallest non-zero step between consecutive ``perf_counter_ns()`` reads. A Python-level read costs
  tens of nanoseconds, so the measured figure is an upper bound of the true tick;
- the overhead floor: the latency the engine records for the null adapter (median, p99), i.e. what
  a model that does nothing is measured at; and the loop overhead per frame, the engine's frame loop
  (``Engine._feed``) against a bare loop over the same frames, interleaved repeats, medians compared
  (as ``benchmarks/test_engine_overhead.py`` does). The bare loop calls a stand-in with the null
  adapter's call shape (a bound method returning a stored object), not the adapter's ``predict``:
  only the engine calls ``predict()`` (``tests/test_layering.py``);
- for each busy-wait duration (:class:`streambench.adapters.null.BusyWaitAdapter`): the median latency the
  engine measured, its relative error ``(median - nominal) / nominal``, p99, and pass/fail against
  the duration's tolerance. The busy-wait spins on the engine's own clock, so every frame must be
  measured at least at its duration; a frame below it fails the check whatever the median.

Busy waits on a loaded machine are pre-empted: that only adds time to a frame, so the timer is judged on
the low end (p1) and interference is reported apart ("timer accurate, machine busy" is not a failure).
The machine is *busy* when the median is off by more than the duration's tolerance **or** the
tail is (a quiet median can hide a 100 µs busy-wait's p99 of 4 ms): p99 above
``nominal * (1 + tail_tolerance) + tail_slack_us`` (defaults 0.5 and 50 µs: 200 µs for 100 µs, 1.55 ms
for 1 ms, 15.05 ms for 10 ms). Each duration's status is PASS (timer accurate, machine quiet), WARN
(timer accurate, machine busy: the figures are named, the floor measured now is an upper bound) or FAIL
(timer inaccurate). The report passes (exit 0) when the timer passes at every duration; its
:attr:`SelfTestReport.status` is WARN when any duration is. The two checks of the timer (the resolution
and the judgement of one busy-wait run) live in :mod:`streambench.harness.execution.selftest_checks`;
this module runs them and the overhead floor, and prints the report.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator
from rich.console import Console
from rich.table import Table

from streambench.adapters.contract import Adapter, Frame, Stream
from streambench.adapters.null import BusyWaitAdapter, BusyWaitOptions, NullAdapter
from streambench.harness.execution.engine import ClockInfo, Engine, EngineConfig, clock_info
from streambench.harness.execution.selftest_checks import (
    TAIL_SLACK_US,
    TAIL_TOLERANCE,
    BusyWaitFigures,
    ResolutionFigures,
    Status,
    judge_busy_wait,
    measure_resolution,
)

__all__ = [
    "OverheadFigures",
    "SelfTestConfig",
    "SelfTestReport",
    "print_selftest",
    "run_selftest",
]

CLASSES = ("background", "event")


class SelfTestConfig(BaseModel):
    """What the selftest runs. Tolerances are relative errors of the median busy-wait latency."""

    model_config = ConfigDict(extra="forbid")

    frames: int = Field(2000, ge=1, description="frames of the null-adapter stream")
    busy_frames: int = Field(200, ge=1, description="frames of each busy-wait stream")
    durations_us: tuple[float, ...] = Field((100.0, 1000.0, 10000.0), min_length=1)
    default_tolerance: float = Field(
        0.02, gt=0, description="relative tolerance of a duration without its own (the 1 ms and 10 ms bar)"
    )
    tolerances: dict[float, float] = Field(
        default_factory=lambda: {100.0: 0.10},
        description="per-duration tolerances (µs -> relative); 100 µs is looser: the overhead floor "
        "and the scheduler weigh more at that scale",
    )
    warmup_frames: int = Field(100, ge=0, description="engine warm-up before the null-adapter stream")
    busy_warmup_frames: int = Field(
        10, ge=0, description="engine warm-up per busy-wait run (nothing to warm but the loop itself)"
    )
    overhead_repeats: int = Field(11, ge=1, description="interleaved bare/engine loop pairs")
    tail_tolerance: float = Field(
        TAIL_TOLERANCE, ge=0, description="a quiet machine's p99 is at most nominal * (1 + this) + slack"
    )
    tail_slack_us: float = Field(TAIL_SLACK_US, ge=0, description="the slack of the p99 rule (µs)")
    resolution_samples: int = Field(100_000, ge=2, description="consecutive clock reads")

    @field_validator("durations_us")
    @classmethod
    def _positive_durations(cls, value: tuple[float, ...]) -> tuple[float, ...]:
        if any(not d > 0 for d in value):
            raise ValueError(f"durations must be > 0 µs, got {value}")
        return value

    @field_validator("tolerances")
    @classmethod
    def _positive_tolerances(cls, value: dict[float, float]) -> dict[float, float]:
        if any(not t > 0 for t in value.values()):
            raise ValueError(f"tolerances must be > 0, got {value}")
        return value

    def tolerance_for(self, duration_us: float) -> float:
        return self.tolerances.get(duration_us, self.default_tolerance)


class OverheadFigures(BaseModel):
    """The null adapter as the engine measures it: the floor of every latency."""

    frames: int
    latency_median_ns: float
    latency_p99_ns: float
    latency_min_ns: int
    bare_loop_ns_per_frame: float
    engine_loop_ns_per_frame: float
    loop_overhead_ns_per_frame: float = Field(description="engine loop minus bare loop, medians")
    repeats: int


class SelfTestReport(BaseModel):
    config: SelfTestConfig
    clock: ClockInfo
    resolution: ResolutionFigures
    overhead: OverheadFigures
    busy_wait: list[BusyWaitFigures]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return all(b.passed for b in self.busy_wait)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> Status:
        """The worst duration's status: FAIL, else WARN (a busy machine), else PASS."""
        statuses = {b.status for b in self.busy_wait}
        return "FAIL" if "FAIL" in statuses else "WARN" if "WARN" in statuses else "PASS"


def _frames(n: int) -> list[Frame]:
    payload = {"audio": np.zeros(64, dtype=np.float32), "visual": np.zeros(128, dtype=np.float32)}
    return [Frame(index=i, t=(i + 1) / 25, inputs=payload) for i in range(n)]


def _stream(stream_id: str, frames: list[Frame]) -> Stream:
    return Stream(
        stream_id=stream_id,
        classes=CLASSES,
        labels=np.zeros((len(frames), len(CLASSES)), dtype=bool),
        frame_times=np.array([f.t for f in frames]),
        frame_source=lambda: frames,
        modalities=("audio", "visual"),
    )


def _engine_latency(adapter: Adapter, frames: int, warmup_frames: int, name: str) -> np.ndarray:
    """Per-frame latency (ns) the engine records for ``adapter`` on a ``frames``-frame stream."""
    engine = Engine(adapter, EngineConfig(warmup_frames=warmup_frames))
    if warmup_frames:
        engine.warm_up(_stream(f"{name}-warmup", _frames(warmup_frames)))
    return engine.run_stream(_stream(name, _frames(frames))).latency_ns


class _Baseline:
    """The null adapter's call shape: a bound method that returns a stored object."""

    def __init__(self, out: object) -> None:
        self._out = out

    def step(self, frame: Frame) -> object:
        return self._out


def _bare_loop(step: Callable[[Frame], object], frames: Sequence[Frame]) -> None:
    for frame in frames:
        step(frame)


def _loop_overhead(frames: int, repeats: int) -> tuple[float, float]:
    """Median ns per frame of a bare loop and of the engine's frame loop, interleaved repeats."""
    adapter = NullAdapter(NullAdapter.Options(classes=CLASSES))
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    step = _Baseline(object()).step
    fed = _frames(frames)
    bare, timed = [], []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        _bare_loop(step, fed)
        bare.append(time.perf_counter_ns() - start)
        start = time.perf_counter_ns()
        engine._feed(fed, "selftest-loop", frames)
        timed.append(time.perf_counter_ns() - start)
    return statistics.median(bare) / frames, statistics.median(timed) / frames


def run_selftest(config: SelfTestConfig | None = None) -> SelfTestReport:
    """Run the null adapter and every busy-wait duration through the engine; nothing is written."""
    config = config or SelfTestConfig()
    resolution = measure_resolution(config.resolution_samples)
    null = NullAdapter(NullAdapter.Options(classes=CLASSES))
    lat = _engine_latency(null, config.frames, config.warmup_frames, "selftest-null")
    bare_ns, engine_ns = _loop_overhead(config.frames, config.overhead_repeats)
    overhead = OverheadFigures(
        frames=config.frames,
        latency_median_ns=float(np.median(lat)),
        latency_p99_ns=float(np.percentile(lat, 99)),
        latency_min_ns=int(lat.min()),
        bare_loop_ns_per_frame=bare_ns,
        engine_loop_ns_per_frame=engine_ns,
        loop_overhead_ns_per_frame=engine_ns - bare_ns,
        repeats=config.overhead_repeats,
    )
    busy = []
    for duration in config.durations_us:
        adapter = BusyWaitAdapter(BusyWaitOptions(duration_us=duration, classes=CLASSES))
        measured = _engine_latency(adapter, config.busy_frames, config.busy_warmup_frames, "selftest-busy")
        tolerance = config.tolerance_for(duration)
        busy.append(
            judge_busy_wait(duration, measured, tolerance, config.tail_tolerance, config.tail_slack_us)
        )
    return SelfTestReport(
        config=config, clock=clock_info("cpu"), resolution=resolution, overhead=overhead, busy_wait=busy
    )


_STATUS_MARKUP: dict[str, str] = {
    "PASS": "[green]PASS[/]",
    "WARN": "[yellow]WARN[/]",
    "FAIL": "[bold red]FAIL[/]",
}


def _us(ns: float) -> str:
    return f"{ns / 1000:.3f}"


def print_selftest(console: Console, report: SelfTestReport) -> None:
    """The report as two rich tables and a verdict line."""
    clock, res, ov = report.clock, report.resolution, report.overhead
    console.print(
        f"clock [bold]{clock.name}[/] ({clock.implementation}, monotonic={clock.monotonic}); "
        f"resolution declared {res.declared_ns:g} ns, measured {res.measured_ns} ns "
        f"(smallest step of {res.samples} reads; {res.read_cost_ns:.0f} ns per read)",
        highlight=False,
    )
    floor = Table(title=f"Overhead floor: null adapter, {ov.frames} frames (µs)", title_justify="left")
    columns = {
        "latency p50": ov.latency_median_ns,
        "latency p99": ov.latency_p99_ns,
        "latency min": ov.latency_min_ns,
        "bare loop/frame": ov.bare_loop_ns_per_frame,
        "engine loop/frame": ov.engine_loop_ns_per_frame,
        "loop overhead/frame": ov.loop_overhead_ns_per_frame,
    }
    for name in columns:
        floor.add_column(name, justify="right")
    floor.add_row(*(_us(v) for v in columns.values()))
    console.print(floor)
    busy = Table(title="Busy-wait adapter: measured against nominal (µs)", title_justify="left")
    for name in (
        "nominal",
        "frames",
        "p1",
        "p50",
        "p99",
        "timer error %",
        "p50 error %",
        "tolerance %",
        "below",
        "",
    ):
        busy.add_column(name, justify="right")
    for b in report.busy_wait:
        busy.add_row(
            f"{b.duration_us:g}",
            str(b.frames),
            _us(b.low_ns),
            _us(b.median_ns),
            _us(b.p99_ns),
            f"{100 * b.timer_error:+.3f}",
            f"{100 * b.relative_error:+.3f}",
            f"{100 * b.tolerance:g}",
            str(b.below_nominal),
            _STATUS_MARKUP[b.status] + " " + b.verdict,
        )
    console.print(busy)
    if report.status == "FAIL":
        console.print("[bold red]selftest FAILED[/]")
    elif report.status == "WARN":
        at = ", ".join(f"{b.duration_us:g} µs" for b in report.busy_wait if b.status == "WARN")
        console.print(
            f"[bold yellow]selftest WARN[/]: the timer is accurate, but the machine is busy at {at} (the "
            "figures above): every latency measured now carries that interference; rerun on a quiet machine",
            highlight=False,
        )
    else:
        console.print("[bold green]selftest passed[/]: timer accurate, machine quiet")
