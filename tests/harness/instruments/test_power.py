"""GPU energy over a window on replayed sensor logs (DESIGN.md "Instruments"; seed 004 §6.3.3
Energy/frame and W@RTF=1): counter, trapezoid, stuck counter, throttling, idle baseline, no GPU."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from streambench.harness.instruments import power
from streambench.harness.instruments.nvml import GpuSensor
from streambench.harness.instruments.power import EnergyReport, PowerConfig, PowerMeter, trapezoid_j
from streambench.harness.instruments.replay import (
    LOG_COLUMNS,
    ManualClock,
    ReplayGpuSensor,
    read_log,
    record_log,
)


def write_log(path: Path, rows: list[dict[str, Any]], extra: tuple[str, ...] = ()) -> Path:
    columns = (*LOG_COLUMNS, *extra)
    lines = [",".join(columns)]
    lines += [",".join("" if row.get(c) is None else str(row[c]) for c in columns) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def meter_on(path: Path, clock: ManualClock, **config: Any) -> tuple[PowerMeter, ReplayGpuSensor]:
    sensor = ReplayGpuSensor.from_csv(path, now=clock)
    meter = PowerMeter(sensor, PowerConfig(**config), clock=clock, sleep=clock.sleep, threaded=False)
    return meter, sensor


def run_window(meter: PowerMeter, clock: ManualClock, times: list[float]) -> EnergyReport:
    """start at times[0], one sample at each later time but the last, stop at times[-1]."""
    clock.t = times[0]
    meter.start()
    for t in times[1:-1]:
        clock.t = t
        meter.sample()
    clock.t = times[-1]
    return meter.stop()


def test_energy_counter_delta_in_joules(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "counter.csv",
        [
            {"t_s": 0.0, "power_w": 200.0, "energy_mj": 1_000_000, "throttle": "0x1"},
            {"t_s": 1.0, "power_w": 200.0, "energy_mj": 1_200_000, "throttle": "0x1"},
            {"t_s": 2.0, "power_w": 200.0, "energy_mj": 1_400_500, "throttle": "0x1"},
        ],
    )
    clock = ManualClock()
    meter, _ = meter_on(log, clock)
    report = run_window(meter, clock, [0.0, 1.0, 2.0])
    assert report.available and report.reason is None
    assert report.method == "nvml_energy_counter"
    assert report.energy_j == pytest.approx(400.5)  # (1_400_500 - 1_000_000) mJ
    assert report.duration_s == 2.0 and report.mean_power_w == pytest.approx(200.25)
    assert report.throttled is False and report.edge_end is not None
    assert report.edge_end["throttle_reasons"] == ["gpu_idle"]
    assert report.energy_per_frame_j(100) == pytest.approx(4.005)
    assert any("no idle baseline" in note for note in report.notes) and report.net_energy_j is None


def test_no_counter_integrates_a_linear_ramp_exactly(tmp_path: Path) -> None:
    # P(t) = 100 + 100 t W over [0, 2] s: ∫ = 100·2 + 50·2² = 400 J; the trapezoid rule is exact on a ramp.
    times = [k / 10 for k in range(21)]
    log = write_log(tmp_path / "ramp.csv", [{"t_s": t, "power_w": 100 + 100 * t} for t in times])
    clock = ManualClock()
    meter, _ = meter_on(log, clock)
    report = run_window(meter, clock, times)
    assert report.method == "nvml_power_instant_trapezoid"
    assert report.samples == 21
    assert report.energy_j == pytest.approx(400.0, rel=1e-12)
    assert report.mean_power_w == pytest.approx(200.0, rel=1e-12)


def test_no_counter_hand_computed_trapezoid(tmp_path: Path) -> None:
    # samples 100, 200, 200, 100 W one second apart: 150 + 200 + 150 = 500 J (by hand)
    rows = [
        {"t_s": float(t), "power_w": p, "power_method": "nvml_power_average"}
        for t, p in enumerate([100, 200, 200, 100])
    ]
    log = write_log(tmp_path / "steps.csv", rows, extra=("power_method",))
    clock = ManualClock()
    meter, _ = meter_on(log, clock)
    report = run_window(meter, clock, [0.0, 1.0, 2.0, 3.0])
    assert report.method == "nvml_power_average_trapezoid"
    assert report.energy_j == 500.0
    assert trapezoid_j([(0.0, 100.0, "m"), (1.0, 200.0, "m"), (2.0, 200.0, "m"), (3.0, 100.0, "m")]) == 500.0


def test_counter_that_does_not_advance_falls_back_to_samples(tmp_path: Path) -> None:
    times = [0.0, 0.01, 0.02, 0.03, 0.04, 0.05]
    log = write_log(tmp_path / "stuck.csv", [{"t_s": t, "power_w": 80.0, "energy_mj": 5000} for t in times])
    clock = ManualClock()
    meter, _ = meter_on(log, clock)
    report = run_window(meter, clock, times)
    assert report.method == "nvml_power_instant_trapezoid"
    assert report.energy_j == pytest.approx(80.0 * 0.05)
    assert any("did not advance" in note and "fell back" in note for note in report.notes)


def test_counter_that_goes_backwards_is_not_trusted(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "reset.csv",
        [{"t_s": 0.0, "power_w": 100.0, "energy_mj": 9000}, {"t_s": 1.0, "power_w": 100.0, "energy_mj": 10}],
    )
    clock = ManualClock()
    report = run_window(meter_on(log, clock)[0], clock, [0.0, 1.0])
    assert report.method == "nvml_power_instant_trapezoid" and report.energy_j == 100.0
    assert any("went back" in note for note in report.notes)


@pytest.mark.parametrize(
    ("start", "end", "throttled", "reasons"),
    [
        ("0x1", "0x4", True, ["sw_power_cap"]),
        ("0x20", "0x0", True, []),
        ("0x1", "0x1", False, ["gpu_idle"]),
        (None, None, None, None),
    ],
)
def test_throttle_reasons_at_the_edges(
    tmp_path: Path, start: str | None, end: str | None, throttled: bool | None, reasons: list[str] | None
) -> None:
    log = write_log(
        tmp_path / "throttle.csv",
        [
            {"t_s": 0.0, "power_w": 300.0, "energy_mj": 0, "sm_clock_mhz": 1980, "throttle": start},
            {"t_s": 1.0, "power_w": 300.0, "energy_mj": 300_000, "sm_clock_mhz": 1410, "throttle": end},
        ],
    )
    clock = ManualClock()
    report = run_window(meter_on(log, clock)[0], clock, [0.0, 1.0])
    assert report.throttled is throttled
    assert report.edge_end is not None and report.edge_start is not None
    assert report.edge_end["throttle_reasons"] == reasons
    assert (report.edge_start["sm_clock_mhz"], report.edge_end["sm_clock_mhz"]) == (1980, 1410)


IDLE_THEN_RUN = [  # idle at 50 W until t = 2, then 250 W
    {"t_s": 0.0, "power_w": 50.0, "energy_mj": 0},
    {"t_s": 1.0, "power_w": 50.0, "energy_mj": 50_000},
    {"t_s": 2.0, "power_w": 250.0, "energy_mj": 100_000},
    {"t_s": 3.0, "power_w": 250.0, "energy_mj": 350_000},
    {"t_s": 4.0, "power_w": 250.0, "energy_mj": 600_000},
]


@pytest.mark.parametrize("counter", [True, False])
def test_idle_baseline_subtraction(tmp_path: Path, counter: bool) -> None:
    rows = [dict(row, energy_mj=row["energy_mj"] if counter else None) for row in IDLE_THEN_RUN]
    clock = ManualClock()
    meter, _ = meter_on(write_log(tmp_path / "idle.csv", rows), clock, idle_s=1.0, sample_interval_s=0.25)
    assert meter.measure_idle() == pytest.approx(50.0)
    assert clock.t == pytest.approx(1.0)  # the idle wait ran on the injected clock
    report = run_window(meter, clock, [2.0, 2.5, 3.0, 3.5, 4.0])
    assert report.idle_method == ("nvml_energy_counter" if counter else "nvml_power_instant_trapezoid")
    assert report.idle_power_w == pytest.approx(50.0)
    assert report.energy_j == pytest.approx(500.0)
    assert report.net_energy_j == pytest.approx(500.0 - 50.0 * 2.0)  # net = gross − idle × duration
    assert report.energy_per_frame_j(100, net=True) == pytest.approx(4.0)


def test_idle_baseline_can_be_skipped(tmp_path: Path) -> None:
    clock = ManualClock()
    meter, _ = meter_on(write_log(tmp_path / "idle.csv", IDLE_THEN_RUN), clock, idle_s=0)
    assert meter.measure_idle() is None
    report = run_window(meter, clock, [2.0, 4.0])
    assert report.net_energy_j is None and report.idle_power_w is None
    assert "idle baseline skipped (idle_s = 0)" in report.notes


def test_no_gpu_every_figure_is_none() -> None:
    meter = PowerMeter(None, reason="unavailable: no GPU here")
    assert not meter.available and meter.measure_idle() is None
    meter.start()
    report = meter.stop()
    assert report == EnergyReport(available=False, reason="unavailable: no GPU here")
    figures = report.model_dump(exclude={"available", "reason", "notes"})
    assert all(value is None for value in figures.values())
    assert report.energy_per_frame_j(10) is None
    with pytest.raises(ValueError, match="reason"):
        PowerMeter(None)


def test_open_on_this_machine_names_the_reason_or_measures() -> None:
    meter = PowerMeter.open(PowerConfig(idle_s=0))
    try:
        if meter.available:
            pytest.skip("this machine has a GPU")
        report = meter.stop()
        assert report.available is False and report.reason is not None
        assert report.reason.startswith("unavailable:") and report.energy_j is None
    finally:
        meter.close()


def test_open_picks_the_configured_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = write_log(tmp_path / "g.csv", [{"t_s": 0.0, "power_w": 10.0}])
    closed: list[int] = []

    class Closing(ReplayGpuSensor):
        def close(self) -> None:
            closed.append(self.index)

    sensors: list[GpuSensor] = [Closing(read_log(log), time.monotonic, index=i) for i in range(2)]
    monkeypatch.setattr(power, "open_gpu_sensors", lambda: (sensors, None))
    assert PowerMeter.open(PowerConfig(gpu_index=1)).sensor is sensors[1] and closed == [0]
    meter = PowerMeter.open(PowerConfig(gpu_index=5))
    assert not meter.available and meter.reason is not None and "index 5" in meter.reason


class Counting:
    """Wraps a sensor and records which thread called it."""

    def __init__(self, inner: GpuSensor) -> None:
        self.inner, self.name, self.index = inner, inner.name, inner.index
        self.threads: list[int] = []

    def _seen(self) -> None:
        self.threads.append(threading.get_ident())

    def energy_counter_mj(self) -> int | None:
        self._seen()
        return self.inner.energy_counter_mj()

    def power_w(self) -> tuple[float, str]:
        self._seen()
        return self.inner.power_w()

    def edge_state(self) -> dict[str, Any]:
        self._seen()
        return self.inner.edge_state()

    def close(self) -> None:
        pass


def test_the_timed_region_never_touches_the_sensor(tmp_path: Path) -> None:
    clock = ManualClock()
    log = write_log(
        tmp_path / "c.csv",
        [{"t_s": 0.0, "power_w": 90.0, "energy_mj": 0}, {"t_s": 5.0, "power_w": 90.0, "energy_mj": 450_000}],
    )
    sensor = Counting(ReplayGpuSensor.from_csv(log, now=clock))
    meter = PowerMeter(sensor, clock=clock, threaded=False)
    meter.start()
    calls = len(sensor.threads)
    clock.advance(5.0)  # the frame loop
    assert len(sensor.threads) == calls
    assert meter.stop().energy_j == pytest.approx(450.0)


def test_sampler_thread_with_a_short_real_interval(tmp_path: Path) -> None:
    log = write_log(tmp_path / "flat.csv", [{"t_s": 0.0, "power_w": 120.0}])
    sensor = Counting(ReplayGpuSensor.from_csv(log, now=time.monotonic))
    meter = PowerMeter(sensor, PowerConfig(sample_interval_s=0.005))
    meter.start()
    main = threading.get_ident()
    calls_from_main = sensor.threads.count(main)
    time.sleep(0.1)  # the "frame loop": only the sampler thread reads the sensor meanwhile
    assert sensor.threads.count(main) == calls_from_main
    report = meter.stop()
    meter.close()
    assert report.method == "nvml_power_instant_trapezoid"
    assert report.samples is not None and report.samples >= 4
    assert report.duration_s is not None and report.duration_s >= 0.1
    assert report.energy_j == pytest.approx(120.0 * report.duration_s, rel=0.05)


def test_unreadable_power_and_no_counter_is_unavailable(tmp_path: Path) -> None:
    log = write_log(tmp_path / "blank.csv", [{"t_s": 0.0, "sm_clock_mhz": 1000}])
    clock = ManualClock()
    report = run_window(meter_on(log, clock)[0], clock, [0.0, 1.0, 2.0])
    assert not report.available and report.energy_j is None
    assert report.reason == "unavailable: no advancing energy counter and fewer than two power samples"
    assert any("3 sensor read(s) failed" in note for note in report.notes)


def test_config_validation() -> None:
    assert PowerConfig() == PowerConfig(sample_interval_s=0.1, idle_s=1.0, gpu_index=0)
    for bad in ({"sample_interval_s": 0}, {"idle_s": -1}, {"gpu_index": -1}, {"nope": 1}):
        with pytest.raises(ValidationError):
            PowerConfig(**bad)


def test_record_log_round_trip(tmp_path: Path) -> None:
    source = write_log(
        tmp_path / "src.csv",
        [
            {"t_s": 0.0, "power_w": 70.5, "energy_mj": 10, "temperature_c": 40.0, "throttle": "0x5"},
            {"t_s": 0.5, "power_w": 71.5, "energy_mj": 45, "power_limit_w": 250.0},
        ],
    )
    clock = ManualClock()
    out = record_log(
        ReplayGpuSensor.from_csv(source, now=clock),
        tmp_path / "out.csv",
        2,
        0.5,
        now=clock,
        sleep=clock.sleep,
    )
    assert read_log(out) == read_log(source)


def test_read_log_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("t_s,power_w\n0.0,10\n1.0,ten\n")
    with pytest.raises(ValueError, match=r"bad\.csv:3: column power_w"):
        read_log(bad)
    bad.write_text("t_s,power_w\n1.0,10\n0.5,10\n")
    with pytest.raises(ValueError, match="t_s must increase"):
        read_log(bad)


def test_windows_do_not_nest(tmp_path: Path) -> None:
    clock = ManualClock()
    meter, _ = meter_on(write_log(tmp_path / "w.csv", IDLE_THEN_RUN), clock)
    meter.start()
    with pytest.raises(RuntimeError, match="window is open"):
        meter.start()
    with pytest.raises(RuntimeError, match="window is open"):
        meter.measure_idle()
    clock.t = 4.0
    assert meter.stop().energy_j == pytest.approx(600.0)
    with pytest.raises(RuntimeError, match="without start"):
        meter.stop()
