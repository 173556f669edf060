"""NVIDIA GPU sensors through NVML — the ONE module that imports ``pynvml`` (DESIGN.md "Instruments").

The vendor library (module ``pynvml`` from the ``nvidia-ml-py`` package) is imported lazily, inside
:func:`_load_pynvml`, so importing this module never fails: a missing library or a missing driver
makes :func:`open_gpu_sensors` return no sensors and an ``"unavailable: <reason>"`` string.

NVML's units are converted here, once: power (mW) to ``power_w``, power limit (mW) to
``power_limit_w``. The total-energy counter stays in millijoules (``energy_counter_mj``) because it is
an integer counter; :mod:`streambench.harness.instruments.power` turns its deltas into joules. The figures
serve seed 004 §6.3.3 (Energy/frame, W@RTF=1).

:class:`GpuSensor` is the whole interface the meter uses; :mod:`streambench.harness.instruments.replay`
implements it from a recorded CSV log so every path runs in tests without hardware.
"""

from __future__ import annotations

import contextlib
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "EDGE_KEYS",
    "IDLE_REASON",
    "THROTTLE_REASONS",
    "GpuSensor",
    "NvmlGpuSensor",
    "SensorError",
    "decode_throttle_reasons",
    "open_gpu_sensors",
]

# Bits of nvmlClocksEventReasons / nvmlClocksThrottleReasons (nvml.h; the two names share the values,
# checked against the installed pynvml in tests/harness/instruments/test_nvml.py).
THROTTLE_REASONS: tuple[tuple[int, str], ...] = (
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),  # a.k.a. user_defined_clocks
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
    (0x200, "board_limit"),
    (0x400, "reliability"),
)
IDLE_REASON = "gpu_idle"

EDGE_KEYS = (
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temperature_c",
    "power_limit_w",
    "throttle_mask",
    "throttle_reasons",
)
"""Keys of :meth:`GpuSensor.edge_state`; each value is ``None`` when unreadable, and the dict's
``"unavailable"`` entry maps such keys to the reason."""

_MW_PER_W = 1000.0


class SensorError(RuntimeError):
    """A sensor that was readable could not be read now (e.g. the GPU fell off the bus)."""


def decode_throttle_reasons(mask: int) -> list[str]:
    """Names of the set bits of a clocks-event (throttle) reason mask; unknown bits as ``unknown_0x..``."""
    names = [name for bit, name in THROTTLE_REASONS if mask & bit]
    known = 0
    for bit, _ in THROTTLE_REASONS:
        known |= bit
    if mask & ~known:
        names.append(f"unknown_{mask & ~known:#x}")
    return names


@runtime_checkable
class GpuSensor(Protocol):
    """One GPU's power sensors, in SI-named units (DESIGN.md "Instruments")."""

    name: str
    index: int

    def energy_counter_mj(self) -> int | None:
        """Total energy since driver load (mJ), or ``None`` if this GPU has no counter."""
        ...

    def power_w(self) -> tuple[float, str]:
        """Power now (W) and the method that read it; raises :class:`SensorError` if unreadable."""
        ...

    def edge_state(self) -> dict[str, Any]:
        """Clocks, temperature, power limit and throttle reasons (:data:`EDGE_KEYS`)."""
        ...

    def close(self) -> None:
        """Release the sensor (idempotent)."""
        ...


def _load_pynvml() -> ModuleType:
    """The one import site of the vendor library (tests patch this function or ``sys.modules``)."""
    import pynvml

    return pynvml


def _describe(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # NVMLError.__str__ calls into the library
        text = repr(exc)
    return f"{type(exc).__name__}: {text}"


class NvmlGpuSensor:
    """A :class:`GpuSensor` on one NVML device handle. Holds one NVML init reference until closed."""

    def __init__(self, nv: ModuleType, handle: Any, index: int, name: str) -> None:
        self._nv = nv
        self._handle = handle
        self.index = index
        self.name = name
        self.counter_reason: str | None = None  # why energy_counter_mj() returns None
        self._counter_seen = False
        self._instant_ok: bool | None = None  # None: not probed yet
        self._closed = False

    def energy_counter_mj(self) -> int | None:
        if self.counter_reason is not None:
            return None
        try:
            value = int(self._nv.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except self._nv.NVMLError as exc:
            if self._counter_seen:
                raise SensorError(f"GPU {self.index}: energy counter read failed ({_describe(exc)})") from exc
            self.counter_reason = f"no total-energy counter ({_describe(exc)})"
            return None
        self._counter_seen = True
        return value

    def _instant_w(self) -> float | None:
        field = getattr(self._nv, "NVML_FI_DEV_POWER_INSTANT", None)
        if field is None:
            return None
        try:
            value = self._nv.nvmlDeviceGetFieldValues(self._handle, [field])[0]
        except self._nv.NVMLError:
            return None
        if value.nvmlReturn != getattr(self._nv, "NVML_SUCCESS", 0):
            return None
        return float(value.value.uiVal) / _MW_PER_W  # the field is an unsigned int in milliwatts

    def power_w(self) -> tuple[float, str]:
        if self._instant_ok is not False:
            watts = self._instant_w()
            if watts is not None:
                self._instant_ok = True
                return watts, "nvml_power_instant"
            self._instant_ok = False  # probed once: this GPU/driver has no instant-power field
        try:
            milliwatts = self._nv.nvmlDeviceGetPowerUsage(self._handle)
        except self._nv.NVMLError as exc:
            raise SensorError(f"GPU {self.index}: power read failed ({_describe(exc)})") from exc
        return float(milliwatts) / _MW_PER_W, "nvml_power_average"

    def edge_state(self) -> dict[str, Any]:
        nv, handle = self._nv, self._handle
        state: dict[str, Any] = dict.fromkeys(EDGE_KEYS)
        unavailable: dict[str, str] = {}

        def read(key: str, function: str, *args: Any) -> Any:
            fn = getattr(nv, function, None)
            if fn is None:
                unavailable[key] = f"pynvml has no {function}"
                return None
            try:
                return fn(handle, *args)
            except nv.NVMLError as exc:
                unavailable[key] = _describe(exc)
                return None

        sm = read("sm_clock_mhz", "nvmlDeviceGetClockInfo", nv.NVML_CLOCK_SM)
        mem = read("mem_clock_mhz", "nvmlDeviceGetClockInfo", nv.NVML_CLOCK_MEM)
        temperature = read("temperature_c", "nvmlDeviceGetTemperature", nv.NVML_TEMPERATURE_GPU)
        limit = read("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit")
        reasons_fn = (
            "nvmlDeviceGetCurrentClocksEventReasons"
            if hasattr(nv, "nvmlDeviceGetCurrentClocksEventReasons")
            else "nvmlDeviceGetCurrentClocksThrottleReasons"
        )
        mask = read("throttle_mask", reasons_fn)
        state["sm_clock_mhz"] = None if sm is None else int(sm)
        state["mem_clock_mhz"] = None if mem is None else int(mem)
        state["temperature_c"] = None if temperature is None else float(temperature)
        state["power_limit_w"] = None if limit is None else float(limit) / _MW_PER_W
        if mask is not None:
            state["throttle_mask"] = int(mask)
            state["throttle_reasons"] = decode_throttle_reasons(int(mask))
        elif "throttle_mask" in unavailable:
            unavailable["throttle_reasons"] = unavailable["throttle_mask"]
        state["unavailable"] = unavailable
        return state

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(self._nv.NVMLError):
            self._nv.nvmlShutdown()


def open_gpu_sensors() -> tuple[list[GpuSensor], str | None]:
    """One :class:`NvmlGpuSensor` per GPU NVML lists (NVML's index order, not CUDA_VISIBLE_DEVICES'),
    or ``([], "unavailable: <reason>")``. Close each sensor when done."""
    try:
        nv = _load_pynvml()
    except ImportError as exc:
        return [], f"unavailable: the NVML library (module pynvml, package nvidia-ml-py) is missing ({exc})"
    try:
        nv.nvmlInit()
    except (nv.NVMLError, OSError) as exc:
        return [], f"unavailable: NVML could not be initialised ({_describe(exc)})"
    sensors: list[GpuSensor] = []
    try:
        for index in range(int(nv.nvmlDeviceGetCount())):
            handle = nv.nvmlDeviceGetHandleByIndex(index)
            name = nv.nvmlDeviceGetName(handle)
            name = name.decode() if isinstance(name, bytes) else str(name)
            nv.nvmlInit()  # NVML counts references: one per sensor, released by its close()
            sensors.append(NvmlGpuSensor(nv, handle, index, name))
    except nv.NVMLError as exc:
        for sensor in sensors:
            sensor.close()
        return [], f"unavailable: NVML could not enumerate GPUs ({_describe(exc)})"
    finally:
        with contextlib.suppress(nv.NVMLError):
            nv.nvmlShutdown()  # the enumeration's own reference
    if not sensors:
        return [], "unavailable: NVML lists no GPU"
    return sensors, None


LOCK_FIELDS = ("nvidia_driver", "gpu_power_limit", "gpu_persistence_mode", "gpu_clock_mode")
"""Items of seed 004's environment lock list that only NVML can read."""

LockItem = tuple[Any, "str | None"]


def read_lock_items() -> dict[str, LockItem]:
    """``{field: (value, reason)}`` for :data:`LOCK_FIELDS`: the driver version, and per GPU (keyed by
    NVML index) the enforced power limit (W), persistence mode and application clocks (MHz). A value
    that cannot be read is ``None`` with the reason."""
    try:
        nv = _load_pynvml()
    except ImportError as exc:
        return dict.fromkeys(LOCK_FIELDS, (None, f"unavailable: the NVML library is missing ({exc})"))
    try:
        nv.nvmlInit()
    except (nv.NVMLError, OSError) as exc:
        return dict.fromkeys(
            LOCK_FIELDS, (None, f"unavailable: NVML could not be initialised ({_describe(exc)})")
        )

    def read(function: str, *args: Any) -> LockItem:
        fn = getattr(nv, function, None)
        if fn is None:
            return None, f"pynvml has no {function}"
        try:
            return fn(*args), None
        except nv.NVMLError as exc:
            return None, _describe(exc)

    try:
        driver, driver_reason = read("nvmlSystemGetDriverVersion")
        items: dict[str, LockItem] = {
            "nvidia_driver": (driver.decode() if isinstance(driver, bytes) else driver, driver_reason)
        }
        count, count_reason = read("nvmlDeviceGetCount")
        if count_reason is not None:
            return items | dict.fromkeys(LOCK_FIELDS[1:], (None, count_reason))
        limits, persistence, clocks = {}, {}, {}
        for index in range(int(count)):
            handle, reason = read("nvmlDeviceGetHandleByIndex", index)
            if reason is not None:
                return items | dict.fromkeys(LOCK_FIELDS[1:], (None, f"GPU {index}: {reason}"))
            limit, _ = read("nvmlDeviceGetEnforcedPowerLimit", handle)
            mode, _ = read("nvmlDeviceGetPersistenceMode", handle)
            sm, _ = read("nvmlDeviceGetApplicationsClock", handle, nv.NVML_CLOCK_SM)
            mem, _ = read("nvmlDeviceGetApplicationsClock", handle, nv.NVML_CLOCK_MEM)
            limits[str(index)] = None if limit is None else float(limit) / _MW_PER_W
            persistence[str(index)] = None if mode is None else bool(mode)
            clocks[str(index)] = {"applications_sm_mhz": sm, "applications_mem_mhz": mem}
        items["gpu_power_limit"] = (limits, None)
        items["gpu_persistence_mode"] = (persistence, None)
        items["gpu_clock_mode"] = (clocks, None)
        return items
    finally:
        with contextlib.suppress(nv.NVMLError):
            nv.nvmlShutdown()
