"""The NVML boundary (DESIGN.md "Instruments"; seed 004 §6.3.3): unit conversion, fallbacks, a missing
library or driver giving "unavailable: <reason>", and pynvml imported in exactly one module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from streambench.harness.instruments import nvml
from streambench.harness.instruments.nvml import (
    NvmlGpuSensor,
    SensorError,
    decode_throttle_reasons,
    open_gpu_sensors,
)

ROOT = Path(__file__).resolve().parents[3]
NVML_MODULE = ROOT / "harness" / "instruments" / "nvml.py"


class FakeNVMLError(Exception):
    pass


class FakeNotSupported(FakeNVMLError):
    pass


class FakeDriverNotLoaded(FakeNVMLError):
    pass


class FakeNvml:
    """Just enough of pynvml's surface; values in NVML's own units (mW, mJ, MHz, C)."""

    NVMLError = FakeNVMLError
    NVML_SUCCESS = 0
    NVML_ERROR_NOT_SUPPORTED = 3
    NVML_FI_DEV_POWER_INSTANT = 186
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    def __init__(
        self,
        gpus: int = 1,
        counter_mj: int | None = 123_456,
        instant_mw: int | None = 150_250,
        average_mw: int = 140_000,
        mask: int = 0x1,
        init_error: Exception | None = None,
        handle_error_at: int | None = None,
        event_reasons: bool = True,
    ) -> None:
        self.gpus, self.counter_mj, self.instant_mw, self.average_mw = (
            gpus,
            counter_mj,
            instant_mw,
            average_mw,
        )
        self.mask, self.init_error, self.handle_error_at = mask, init_error, handle_error_at
        self.refs = 0
        self.calls: dict[str, int] = {}
        reasons = self._reasons
        if event_reasons:
            self.nvmlDeviceGetCurrentClocksEventReasons = reasons
        else:
            self.nvmlDeviceGetCurrentClocksThrottleReasons = reasons

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.refs += 1

    def nvmlShutdown(self) -> None:
        self.refs -= 1

    def nvmlDeviceGetCount(self) -> int:
        return self.gpus

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if index == self.handle_error_at:
            raise FakeNVMLError("GPU is lost")
        return 100 + index

    def nvmlDeviceGetName(self, handle: int) -> bytes:
        return f"Fake GPU {handle - 100}".encode()

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:
        self._count("energy")
        if self.counter_mj is None:
            raise FakeNotSupported("Not Supported")
        return self.counter_mj

    def nvmlDeviceGetFieldValues(self, handle: int, fields: list[int]) -> list[Any]:
        self._count("fields")
        assert fields == [self.NVML_FI_DEV_POWER_INSTANT]
        if self.instant_mw is None:
            return [SimpleNamespace(nvmlReturn=self.NVML_ERROR_NOT_SUPPORTED, value=SimpleNamespace(uiVal=0))]
        return [SimpleNamespace(nvmlReturn=0, value=SimpleNamespace(uiVal=self.instant_mw))]

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:
        self._count("average")
        return self.average_mw

    def nvmlDeviceGetClockInfo(self, handle: int, clock: int) -> int:
        return {1: 1410, 2: 1215}[clock]

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        raise FakeNotSupported("Not Supported")

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: int) -> int:
        return 250_000

    def _reasons(self, handle: int) -> int:
        return self.mask


def use(monkeypatch: pytest.MonkeyPatch, fake: FakeNvml) -> FakeNvml:
    monkeypatch.setattr(nvml, "_load_pynvml", lambda: fake)
    return fake


def test_converts_units_once_at_the_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use(monkeypatch, FakeNvml(mask=0x1 | 0x4))
    sensors, reason = open_gpu_sensors()
    assert reason is None and len(sensors) == 1
    sensor = sensors[0]
    assert (sensor.name, sensor.index) == ("Fake GPU 0", 0)
    assert sensor.energy_counter_mj() == 123_456
    assert sensor.power_w() == (150.25, "nvml_power_instant")
    edge = sensor.edge_state()
    assert edge["sm_clock_mhz"] == 1410 and edge["mem_clock_mhz"] == 1215
    assert edge["power_limit_w"] == 250.0
    assert edge["throttle_mask"] == 0x5 and edge["throttle_reasons"] == ["gpu_idle", "sw_power_cap"]
    assert edge["temperature_c"] is None and "NotSupported" in edge["unavailable"]["temperature_c"]
    assert fake.refs == 1  # the sensor's own reference; the enumeration's was released
    sensor.close()
    sensor.close()
    assert fake.refs == 0


def test_power_falls_back_to_the_average_once_instant_is_unsupported(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use(monkeypatch, FakeNvml(instant_mw=None))
    sensor = open_gpu_sensors()[0][0]
    assert sensor.power_w() == (140.0, "nvml_power_average")
    assert sensor.power_w() == (140.0, "nvml_power_average")
    assert fake.calls == {"fields": 1, "average": 2}  # probed once


def test_no_energy_counter_is_none_with_a_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use(monkeypatch, FakeNvml(counter_mj=None))
    sensor = open_gpu_sensors()[0][0]
    assert sensor.energy_counter_mj() is None
    assert sensor.energy_counter_mj() is None
    assert isinstance(sensor, NvmlGpuSensor) and "Not Supported" in (sensor.counter_reason or "")
    assert fake.calls["energy"] == 1


def test_a_counter_that_worked_and_then_fails_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use(monkeypatch, FakeNvml())
    sensor = open_gpu_sensors()[0][0]
    assert sensor.energy_counter_mj() == 123_456
    fake.counter_mj = None
    with pytest.raises(SensorError, match="energy counter read failed"):
        sensor.energy_counter_mj()


def test_older_pynvml_throttle_reasons_function(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, FakeNvml(mask=0x40, event_reasons=False))
    edge = open_gpu_sensors()[0][0].edge_state()
    assert edge["throttle_reasons"] == ["hw_thermal_slowdown"]


def test_decode_unknown_bits() -> None:
    assert decode_throttle_reasons(0) == []
    assert decode_throttle_reasons(0x1 | 0x1000) == ["gpu_idle", "unknown_0x1000"]


def test_driver_not_loaded_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    use(monkeypatch, FakeNvml(init_error=FakeDriverNotLoaded("Driver Not Loaded")))
    sensors, reason = open_gpu_sensors()
    assert sensors == []
    assert reason == "unavailable: NVML could not be initialised (FakeDriverNotLoaded: Driver Not Loaded)"


def test_enumeration_failure_releases_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use(monkeypatch, FakeNvml(gpus=3, handle_error_at=1))
    sensors, reason = open_gpu_sensors()
    assert sensors == [] and reason is not None and "GPU is lost" in reason
    assert fake.refs == 0


def test_no_gpu_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use(monkeypatch, FakeNvml(gpus=0))
    assert open_gpu_sensors() == ([], "unavailable: NVML lists no GPU")
    assert fake.refs == 0


def test_missing_library(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    sensors, reason = open_gpu_sensors()
    assert sensors == []
    assert reason is not None and reason.startswith("unavailable: the NVML library (module pynvml")


@pytest.mark.processes
def test_missing_library_does_not_break_importing_the_module() -> None:
    code = (
        "import sys; sys.modules['pynvml'] = None\n"
        "from streambench.harness.instruments import nvml, power\n"
        "print(nvml.open_gpu_sensors()[1]); print(power.PowerMeter.open().stop().reason)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("unavailable: the NVML library") for line in lines)


def _real_pynvml() -> Any:
    try:
        return nvml._load_pynvml()
    except ImportError:
        pytest.skip("nvidia-ml-py is not installed")


def _gpu_sensors() -> list[nvml.GpuSensor]:
    sensors, _ = open_gpu_sensors()
    return sensors


def test_throttle_table_matches_the_installed_pynvml() -> None:
    real = _real_pynvml()
    for bit, name in nvml.THROTTLE_REASONS:
        camel = "".join(part.capitalize() for part in name.split("_"))  # sw_power_cap -> SwPowerCap
        assert getattr(real, f"nvmlClocksThrottleReason{camel}") == bit, name
        assert getattr(real, f"nvmlClocksEventReason{camel}", bit) == bit, name  # newer name, same bits
    assert real.NVML_FI_DEV_POWER_INSTANT == 186


def test_real_pynvml_on_a_machine_without_a_driver() -> None:
    sensors, reason = open_gpu_sensors()
    if sensors:
        for sensor in sensors:
            sensor.close()
        pytest.skip("this machine has a working NVML")
    # here: libnvidia-ml.so.1 is absent, so nvmlInit raises NVMLError_LibraryNotFound
    assert reason is not None and reason.startswith("unavailable: NVML could not be initialised (NVMLError_")


def test_real_pynvml_driver_not_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _real_pynvml()

    def init() -> None:
        raise real.NVMLError(real.NVML_ERROR_DRIVER_NOT_LOADED)  # maps to NVMLError_DriverNotLoaded

    monkeypatch.setattr(real, "nvmlInit", init)
    sensors, reason = open_gpu_sensors()
    assert sensors == []
    assert (
        reason == "unavailable: NVML could not be initialised (NVMLError_DriverNotLoaded: Driver Not Loaded)"
    )


@pytest.mark.gpu
def test_real_gpu_readings() -> None:
    sensors = _gpu_sensors()
    if not sensors:
        pytest.skip("no GPU / NVML on this machine")
    try:
        sensor = sensors[0]
        watts, method = sensor.power_w()
        assert 0 < watts < 2000 and method in {"nvml_power_instant", "nvml_power_average"}
        first = sensor.energy_counter_mj()
        if first is not None:
            second = sensor.energy_counter_mj()
            assert second is not None and second >= first
        edge = sensor.edge_state()
        assert set(nvml.EDGE_KEYS) <= set(edge)
    finally:
        for sensor in sensors:
            sensor.close()


def _imports_pynvml(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "pynvml" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "pynvml":
            return True
        if (  # importlib.import_module("pynvml") / __import__("pynvml")
            isinstance(node, ast.Call)
            and any(isinstance(a, ast.Constant) and a.value == "pynvml" for a in node.args)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and (getattr(node.func, "id", None) or getattr(node.func, "attr", None))
            in {"import_module", "__import__"}
        ):
            return True
    return False


def test_only_the_nvml_module_imports_pynvml() -> None:
    paths = [
        p
        for p in ROOT.rglob("*.py")
        if not any(part.startswith(".") or part in {"results", "build"} for part in p.relative_to(ROOT).parts)
    ]
    assert NVML_MODULE in paths and _imports_pynvml(NVML_MODULE)
    offenders = [str(p.relative_to(ROOT)) for p in paths if p != NVML_MODULE and _imports_pynvml(p)]
    assert offenders == []


class LockFakeNvml(FakeNvml):
    def nvmlSystemGetDriverVersion(self) -> bytes:
        return b"550.54.15"

    def nvmlDeviceGetPersistenceMode(self, handle: int) -> int:
        return 1 if handle == 100 else 0

    def nvmlDeviceGetApplicationsClock(self, handle: int, clock: int) -> int:
        if handle == 101:
            raise FakeNotSupported("Not Supported")
        return {1: 1380, 2: 877}[clock]


@pytest.mark.processes
def test_lock_items_for_the_manifest(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = LockFakeNvml(gpus=2)
    monkeypatch.setattr(nvml, "_load_pynvml", lambda: fake)
    items = nvml.read_lock_items()
    assert items["nvidia_driver"] == ("550.54.15", None)
    assert items["gpu_power_limit"] == ({"0": 250.0, "1": 250.0}, None)
    assert items["gpu_persistence_mode"] == ({"0": True, "1": False}, None)
    clocks, _ = items["gpu_clock_mode"]
    assert clocks["0"] == {"applications_sm_mhz": 1380, "applications_mem_mhz": 877}
    assert clocks["1"] == {"applications_sm_mhz": None, "applications_mem_mhz": None}
    assert fake.refs == 0  # NVML's reference released

    from streambench.harness.instruments.manifest import collect_manifest

    manifest = collect_manifest({})
    assert manifest.nvidia_driver.value == "550.54.15" and manifest.gpu_power_limit.value == {
        "0": 250.0,
        "1": 250.0,
    }


def test_lock_items_without_nvml_are_null_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        nvml, "_load_pynvml", lambda: LockFakeNvml(init_error=FakeDriverNotLoaded("Driver Not Loaded"))
    )
    items = nvml.read_lock_items()
    assert set(items) == set(nvml.LOCK_FIELDS)
    assert all(value is None and "Driver Not Loaded" in (reason or "") for value, reason in items.values())
