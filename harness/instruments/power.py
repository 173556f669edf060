"""GPU energy over a measured window: seed 004 §6.3.3 (Energy/frame, W@RTF=1), DESIGN.md "Instruments".

Method, in order of preference, always named in the report:

- ``nvml_energy_counter``: NVML's total-energy counter (mJ, Volta and newer) read at the window's
  edges; energy = counter delta. A counter that does not advance over the window (window shorter than
  its update period) or goes backwards is not trusted: the meter falls back to the samples below and
  says so in ``notes``.
- ``nvml_power_instant_trapezoid`` / ``nvml_power_average_trapezoid``: power sampled on a background
  thread every ``sample_interval_s`` (plus one sample at each edge) and integrated by the trapezoid
  rule. The sampler thread runs on its own; the caller's frame loop never touches the sensor.

An idle baseline (:meth:`PowerMeter.measure_idle`, before the model is loaded or warmed up) gives
``net_energy_j = energy_j − idle_power_w × duration_s``. Clocks, temperature, power limit and throttle
reasons are read at both edges; ``throttled`` is true when any reason other than ``gpu_idle`` appears.
With no GPU every figure is ``None`` and ``reason`` says why: never a made-up number.

W@RTF=1 is ``mean_power_w`` of a paced run; Energy/frame is :meth:`EnergyReport.energy_per_frame_j`.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from streambench.harness.instruments.nvml import IDLE_REASON, GpuSensor, SensorError, open_gpu_sensors

__all__ = ["COUNTER_METHOD", "EnergyReport", "PowerConfig", "PowerMeter", "trapezoid_j"]

COUNTER_METHOD = "nvml_energy_counter"
_J_PER_COUNTER_UNIT = 1e-3  # the NVML counter counts millijoules


class PowerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sample_interval_s: float = Field(0.1, gt=0, description="power sampling period of the sampler thread")
    idle_s: float = Field(1.0, ge=0, description="idle-baseline duration; 0 skips the baseline")
    gpu_index: int = Field(0, ge=0, description="NVML index (not renumbered by CUDA_VISIBLE_DEVICES)")


class EnergyReport(BaseModel):
    """GPU energy of one window; figures are ``None`` where unmeasured, with ``reason`` / ``notes``."""

    model_config = ConfigDict(extra="forbid")

    available: bool
    reason: str | None = None
    method: str | None = None
    gpu_name: str | None = None
    gpu_index: int | None = None
    energy_j: float | None = None
    net_energy_j: float | None = None
    idle_power_w: float | None = None
    idle_method: str | None = None
    mean_power_w: float | None = None
    duration_s: float | None = None
    samples: int | None = None
    sample_interval_s: float | None = None
    throttled: bool | None = None
    edge_start: dict[str, Any] | None = None
    edge_end: dict[str, Any] | None = None
    notes: list[str] = Field(default_factory=list)

    def energy_per_frame_j(self, frames: int, net: bool = False) -> float | None:
        """Energy/frame (seed 004 §6.3.3): gross (or net) energy of the window over its frames."""
        energy = self.net_energy_j if net else self.energy_j
        if energy is None or frames <= 0:
            return None
        return energy / frames


Sample = tuple[float, float, str]  # (time s, power W, method)


def trapezoid_j(samples: list[Sample]) -> float:
    """∫ P dt by the trapezoid rule over (t, W) samples, in joules."""
    return sum(0.5 * (p0 + p1) * (t1 - t0) for (t0, p0, _), (t1, p1, _) in itertools.pairwise(samples))


def _sampled_method(samples: list[Sample], notes: list[str]) -> str:
    methods = sorted({method for _, _, method in samples})
    if len(methods) > 1:
        notes.append(f"power read by more than one method during the window: {methods}")
        return "nvml_power_mixed_trapezoid"
    return f"{methods[0]}_trapezoid"


class PowerMeter:
    """Measures one GPU over windows bounded by :meth:`start` / :meth:`stop`, both called outside the
    timed frame loop. ``clock``/``sleep`` and ``threaded=False`` (then the caller calls :meth:`sample`)
    make it deterministic in tests."""

    def __init__(
        self,
        sensor: GpuSensor | None,
        config: PowerConfig | None = None,
        *,
        reason: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        threaded: bool = True,
    ) -> None:
        if sensor is None and not reason:
            raise ValueError("a meter without a sensor needs the reason")
        self.sensor = sensor
        self.config = config or PowerConfig()
        self.reason = reason
        self._clock, self._sleep, self._threaded = clock, sleep, threaded
        self._lock = threading.Lock()
        self._samples: list[Sample] = []
        self._sample_errors: list[str] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._idle: tuple[float, str] | None = None
        self._idle_notes: list[str] = []
        self._window: tuple[float, int | None, dict[str, Any]] | None = None

    @classmethod
    def open(cls, config: PowerConfig | None = None) -> PowerMeter:
        """The meter for ``config.gpu_index`` on this machine, or an unavailable one carrying the reason."""
        config = config or PowerConfig()
        sensors, reason = open_gpu_sensors()
        chosen = next((s for s in sensors if s.index == config.gpu_index), None)
        for sensor in sensors:
            if sensor is not chosen:
                sensor.close()
        if chosen is None:
            reason = (
                reason or f"unavailable: no GPU with NVML index {config.gpu_index} ({len(sensors)} listed)"
            )
            return cls(None, config, reason=reason)
        return cls(chosen, config)

    @property
    def available(self) -> bool:
        return self.sensor is not None

    def _counter(self) -> int | None:
        assert self.sensor is not None
        try:
            return self.sensor.energy_counter_mj()
        except SensorError as exc:
            with self._lock:
                self._sample_errors.append(str(exc))
            return None

    def sample(self) -> None:
        """Take one power sample now (the sampler thread's step; tests call it with ``threaded=False``)."""
        if self.sensor is None:
            return
        try:
            watts, method = self.sensor.power_w()
        except SensorError as exc:
            with self._lock:
                self._sample_errors.append(str(exc))
            return
        t = self._clock()
        with self._lock:
            self._samples.append((t, watts, method))

    def measure_idle(self) -> float | None:
        """Idle power (W) over ``config.idle_s``, before the model runs; blocks for that long (or advances
        the injected clock). Uses the counter when it advances, else the sampled trapezoid mean."""
        if self.sensor is None:
            return None
        if self._window is not None:
            raise RuntimeError("PowerMeter.measure_idle() while a window is open")
        self._idle, self._idle_notes = None, []
        if self.config.idle_s == 0:
            self._idle_notes.append("idle baseline skipped (idle_s = 0)")
            return None
        with self._lock:
            self._samples, self._sample_errors = [], []
        counter0, t0 = self._counter(), self._clock()
        self.sample()
        while (remaining := self.config.idle_s - (self._clock() - t0)) > 1e-9:
            self._sleep(min(self.config.sample_interval_s, remaining))
            self.sample()
        counter1, t1 = self._counter(), self._clock()
        samples, duration = list(self._samples), t1 - t0
        if self._sample_errors:
            self._idle_notes.append(f"idle baseline: {len(self._sample_errors)} sensor read(s) failed")
        if counter0 is not None and counter1 is not None and counter1 > counter0 and duration > 0:
            self._idle = ((counter1 - counter0) * _J_PER_COUNTER_UNIT / duration, COUNTER_METHOD)
        elif len(samples) >= 2 and samples[-1][0] > samples[0][0]:
            if counter0 is not None:
                self._idle_notes.append("idle baseline: energy counter did not advance; used power samples")
            span = samples[-1][0] - samples[0][0]
            self._idle = (trapezoid_j(samples) / span, _sampled_method(samples, self._idle_notes))
        else:
            self._idle_notes.append("idle baseline: fewer than two power samples and no advancing counter")
        return None if self._idle is None else self._idle[0]

    def start(self) -> None:
        """Open a window: edge state, counter, one power sample, then the sampler thread."""
        if self.sensor is None:
            return
        if self._window is not None:
            raise RuntimeError("PowerMeter.start() while a window is open")
        with self._lock:
            self._samples, self._sample_errors = [], []
        edge = self.sensor.edge_state()
        counter = self._counter()
        self._window = (self._clock(), counter, edge)
        self.sample()
        if self._threaded:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="streambench-power", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.config.sample_interval_s):
            self.sample()

    def stop(self) -> EnergyReport:
        """Close the window and return its :class:`EnergyReport`."""
        if self.sensor is None:
            return EnergyReport(available=False, reason=self.reason)
        if self._window is None:
            raise RuntimeError("PowerMeter.stop() without start()")
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        t_start, counter0, edge_start = self._window
        self._window = None
        self.sample()
        counter1, t_end = self._counter(), self._clock()
        edge_end = self.sensor.edge_state()
        with self._lock:
            samples, errors = list(self._samples), list(self._sample_errors)
        duration = t_end - t_start
        notes = list(self._idle_notes)
        if errors:
            notes.append(f"{len(errors)} sensor read(s) failed, first: {errors[0]}")
        figures: dict[str, Any] = {"available": False}
        if counter0 is not None and counter1 is not None and counter1 > counter0:
            figures.update(method=COUNTER_METHOD, energy_j=(counter1 - counter0) * _J_PER_COUNTER_UNIT)
        elif counter0 is not None:
            how = (
                "was lost" if counter1 is None else "did not advance" if counter1 == counter0 else "went back"
            )
            notes.append(f"energy counter {how} over the {duration:.3g} s window; fell back to power samples")
        if "energy_j" not in figures and len(samples) >= 2 and samples[-1][0] > samples[0][0]:
            figures.update(method=_sampled_method(samples, notes), energy_j=trapezoid_j(samples))
        if "energy_j" not in figures or duration <= 0:
            figures["reason"] = "unavailable: no advancing energy counter and fewer than two power samples"
        else:
            energy = figures["energy_j"]
            figures.update(available=True, mean_power_w=energy / duration)
            if self._idle is not None:
                idle_w, idle_method = self._idle
                net = energy - idle_w * duration
                figures.update(idle_power_w=idle_w, idle_method=idle_method, net_energy_j=net)
                if net < 0:
                    notes.append("net energy is negative: the window drew less than the idle baseline")
            elif not self._idle_notes:
                notes.append("no idle baseline measured (measure_idle() not called): net energy unknown")
        return EnergyReport(
            gpu_name=self.sensor.name,
            gpu_index=self.sensor.index,
            duration_s=duration,
            samples=len(samples),
            sample_interval_s=self.config.sample_interval_s,
            throttled=_throttled(edge_start, edge_end),
            edge_start=edge_start,
            edge_end=edge_end,
            notes=notes,
            **figures,
        )

    def close(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        if self.sensor is not None:
            self.sensor.close()


def _throttled(edge_start: dict[str, Any], edge_end: dict[str, Any]) -> bool | None:
    reasons = [edge.get("throttle_reasons") for edge in (edge_start, edge_end)]
    if all(r is None for r in reasons):
        return None
    return any(name != IDLE_REASON for r in reasons if r is not None for name in r)
