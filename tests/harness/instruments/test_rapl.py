"""CPU package energy from powercap RAPL on a fake sysfs tree (DESIGN.md "Instruments": RAPL where
readable, otherwise null with the reason; seed 004 §6.3.3)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streambench.harness.instruments.rapl import RaplMeter, RaplReport, find_rapl_zones
from streambench.harness.instruments.replay import ManualClock

MAX_RANGE = 262_143_328_850  # a typical max_energy_range_uj


def zone(root: Path, name: str, label: str, energy_uj: int, max_range: int | None = MAX_RANGE) -> Path:
    path = root / name
    path.mkdir(parents=True)
    (path / "name").write_text(label + "\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    if max_range is not None:
        (path / "max_energy_range_uj").write_text(f"{max_range}\n")
    return path


def set_uj(path: Path, energy_uj: int) -> None:
    (path / "energy_uj").write_text(f"{energy_uj}\n")


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    root = tmp_path / "powercap"
    zone(root, "intel-rapl:0", "package-0", 1_000_000)
    zone(root, "intel-rapl:0:0", "core", 500_000)  # sub-zone: inside package-0
    zone(root, "intel-rapl:1", "package-1", 2_000_000)
    zone(root, "intel-rapl:2", "psys", 9_000_000)  # platform: contains the packages
    return root


def test_package_zones_only(sysfs: Path) -> None:
    zones, reason = find_rapl_zones(sysfs)
    assert reason is None
    assert [(z.path.name, z.name, z.max_range_uj) for z in zones] == [
        ("intel-rapl:0", "package-0", MAX_RANGE),
        ("intel-rapl:1", "package-1", MAX_RANGE),
    ]


def test_energy_over_a_window(sysfs: Path) -> None:
    clock = ManualClock(10.0)
    meter = RaplMeter.open(sysfs, clock=clock, poll_interval_s=None)
    meter.start()
    set_uj(sysfs / "intel-rapl:0", 31_000_000)  # +30 J
    set_uj(sysfs / "intel-rapl:1", 12_000_000)  # +10 J
    set_uj(sysfs / "intel-rapl:0:0", 99_000_000)  # ignored
    clock.advance(2.0)
    report = meter.stop()
    assert report.available and report.method == "rapl_energy_uj"
    assert report.zones_j == {"package-0": pytest.approx(30.0), "package-1": pytest.approx(10.0)}
    assert report.energy_j == pytest.approx(40.0) and report.mean_power_w == pytest.approx(20.0)
    assert report.duration_s == 2.0 and report.wraps == 0
    assert report.energy_per_frame_j(40) == pytest.approx(1.0)


def test_wrap_around(sysfs: Path) -> None:
    package = sysfs / "intel-rapl:0"
    set_uj(package, MAX_RANGE - 1_000_000)
    clock = ManualClock()
    meter = RaplMeter.open(sysfs, clock=clock, poll_interval_s=None)
    meter.start()
    set_uj(package, 4_000_000)  # wrapped: 1 J before the wrap, 4 J after
    clock.advance(1.0)
    report = meter.stop()
    assert report.zones_j is not None and report.zones_j["package-0"] == pytest.approx(5.0)
    assert report.wraps == 1


def test_polling_catches_two_wraps(sysfs: Path) -> None:
    package = sysfs / "intel-rapl:0"
    set_uj(package, 0)
    clock = ManualClock()
    meter = RaplMeter.open(sysfs, clock=clock, poll_interval_s=None)
    meter.start()
    for value in (MAX_RANGE - 10, 5, MAX_RANGE - 10, 5):  # each poll sees less than one wrap
        set_uj(package, value)
        meter.poll()
    report = meter.stop()
    assert report.zones_j is not None
    assert report.zones_j["package-0"] == pytest.approx((2 * MAX_RANGE + 5) * 1e-6)
    assert report.wraps == 2


def test_decrease_without_max_range_is_unavailable(tmp_path: Path) -> None:
    package = zone(tmp_path, "intel-rapl:0", "package-0", 5_000, max_range=None)
    meter = RaplMeter.open(tmp_path, clock=ManualClock(), poll_interval_s=None)
    meter.start()
    set_uj(package, 10)
    report = meter.stop()
    assert not report.available and report.energy_j is None
    assert report.reason is not None and "max_energy_range_uj unknown" in report.reason


def test_absent_directory(tmp_path: Path) -> None:
    missing = tmp_path / "no-powercap"
    reason = f"unavailable: {missing} does not exist (no powercap RAPL on this machine)"
    assert find_rapl_zones(missing) == ([], reason)
    meter = RaplMeter.open(missing)
    assert not meter.available
    meter.start()
    assert meter.stop() == RaplReport(available=False, reason=meter.reason)


def test_no_package_zone(tmp_path: Path) -> None:
    (tmp_path / "dtpm").mkdir()
    assert find_rapl_zones(tmp_path) == ([], f"unavailable: no intel-rapl package zone under {tmp_path}")


def test_unreadable_energy_file(tmp_path: Path) -> None:
    package = zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (package / "energy_uj").unlink()
    (package / "energy_uj").mkdir()  # reading it fails with an OSError even as root
    zones, reason = find_rapl_zones(tmp_path)
    assert zones == [] and reason is not None
    assert reason.startswith(f"unavailable: cannot read {package / 'energy_uj'} (IsADirectoryError")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_permission_denied(tmp_path: Path) -> None:
    package = zone(tmp_path, "intel-rapl:0", "package-0", 1)
    (package / "energy_uj").chmod(0)
    zones, reason = find_rapl_zones(tmp_path)
    assert zones == [] and reason is not None and "PermissionError" in reason


def test_file_that_disappears_mid_window(sysfs: Path) -> None:
    meter = RaplMeter.open(sysfs, clock=ManualClock(), poll_interval_s=None)
    meter.start()
    (sysfs / "intel-rapl:1" / "energy_uj").unlink()
    report = meter.stop()
    assert not report.available and report.energy_j is None
    assert report.reason is not None and "intel-rapl:1" in report.reason


def test_background_polling_thread(sysfs: Path) -> None:
    meter = RaplMeter.open(sysfs, poll_interval_s=0.005)
    meter.start()
    set_uj(sysfs / "intel-rapl:0", 2_000_000)
    report = meter.stop()
    meter.close()
    assert report.available and report.zones_j is not None
    assert report.zones_j["package-0"] == pytest.approx(1.0)


def test_this_machine() -> None:
    meter = RaplMeter.open(poll_interval_s=None)
    meter.start()
    report = meter.stop()
    if report.available:
        assert report.energy_j is not None and report.energy_j >= 0
    else:
        assert report.reason is not None and report.reason.startswith("unavailable:")
        assert report.energy_j is None and report.mean_power_w is None
