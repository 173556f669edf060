"""A :class:`~streambench.harness.instruments.nvml.GpuSensor` that plays back a recorded CSV log (DESIGN.md
"Instruments": every protocol runs in tests without the hardware; seed 004 §6.3.3 energy figures).

The log has one row per reading, columns ``t_s,power_w,energy_mj,sm_clock_mhz,mem_clock_mhz,
temperature_c,power_limit_w,throttle`` (``throttle``: the clocks-event reason mask, decimal or ``0x..``)
and optionally ``power_method`` (default ``nvml_power_instant``). An empty cell is a field the GPU
does not support. Time comes from an injected ``now()`` callable, read against ``t_s``: the sensor
returns the last row at or before ``now()`` (sample and hold, as a real sensor reports its last update;
before the first row, the first row). :class:`ManualClock` is a clock tests drive by hand.
"""

from __future__ import annotations

import bisect
import csv
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from streambench.harness.instruments.nvml import EDGE_KEYS, GpuSensor, SensorError, decode_throttle_reasons

__all__ = ["LOG_COLUMNS", "LogRow", "ManualClock", "ReplayGpuSensor", "read_log", "record_log"]

LOG_COLUMNS = (
    "t_s",
    "power_w",
    "energy_mj",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "temperature_c",
    "power_limit_w",
    "throttle",
)


class ManualClock:
    """A clock that moves only when told: ``clock()`` reads it, ``clock.advance(dt)`` / ``clock.sleep(dt)``
    move it forward (use ``sleep`` where a meter wants a ``sleep`` callable)."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        if dt < 0:
            raise ValueError(f"a clock does not go backwards (dt={dt})")
        self.t += dt

    sleep = advance


@dataclass(frozen=True)
class LogRow:
    t_s: float
    power_w: float | None = None
    energy_mj: int | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    temperature_c: float | None = None
    power_limit_w: float | None = None
    throttle: int | None = None
    power_method: str = "nvml_power_instant"


_PARSERS: dict[str, Callable[[str], Any]] = {
    "t_s": float,
    "power_w": float,
    "energy_mj": int,
    "sm_clock_mhz": int,
    "mem_clock_mhz": int,
    "temperature_c": float,
    "power_limit_w": float,
    "throttle": lambda cell: int(cell, 0),
    "power_method": str,
}


def read_log(path: str | Path) -> list[LogRow]:
    """The rows of a sensor log; errors name the file, line and column."""
    path = Path(path)
    rows: list[LogRow] = []
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        columns = set(reader.fieldnames or ())
        if "t_s" not in columns:
            raise ValueError(f"{path}: sensor log has no t_s column (columns: {sorted(columns)})")
        unknown = columns - set(_PARSERS)
        if unknown:
            raise ValueError(f"{path}: unknown sensor-log columns {sorted(unknown)}")
        for record in reader:
            values: dict[str, Any] = {}
            for column, cell in record.items():
                cell = (cell or "").strip()
                if not cell:
                    continue
                try:
                    values[column] = _PARSERS[column](cell)
                except ValueError as exc:
                    raise ValueError(f"{path}:{reader.line_num}: column {column}: {cell!r} ({exc})") from exc
            if "t_s" not in values:
                raise ValueError(f"{path}:{reader.line_num}: empty t_s")
            if rows and values["t_s"] <= rows[-1].t_s:
                raise ValueError(f"{path}:{reader.line_num}: t_s must increase ({values['t_s']})")
            rows.append(LogRow(**values))
    if not rows:
        raise ValueError(f"{path}: sensor log has no rows")
    return rows


class ReplayGpuSensor:
    """Plays a recorded log as a :class:`~streambench.harness.instruments.nvml.GpuSensor` against
    ``now()``."""

    def __init__(
        self, rows: Sequence[LogRow], now: Callable[[], float], name: str = "replay", index: int = 0
    ) -> None:
        if not rows:
            raise ValueError("a replay sensor needs at least one row")
        self._rows = list(rows)
        self._times = [row.t_s for row in self._rows]
        self._now = now
        self.name = name
        self.index = index

    @classmethod
    def from_csv(
        cls, path: str | Path, now: Callable[[], float], name: str | None = None, index: int = 0
    ) -> ReplayGpuSensor:
        return cls(read_log(path), now, name=name or f"replay:{Path(path).name}", index=index)

    def _row(self) -> LogRow:
        return self._rows[max(bisect.bisect_right(self._times, self._now()) - 1, 0)]

    def energy_counter_mj(self) -> int | None:
        return self._row().energy_mj

    def power_w(self) -> tuple[float, str]:
        row = self._row()
        if row.power_w is None:
            raise SensorError(f"{self.name}: no power in the log at t_s={row.t_s}")
        return row.power_w, row.power_method

    def edge_state(self) -> dict[str, Any]:
        row = self._row()
        state: dict[str, Any] = dict.fromkeys(EDGE_KEYS)
        for key in ("sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_limit_w"):
            state[key] = getattr(row, key)
        if row.throttle is not None:
            state["throttle_mask"] = row.throttle
            state["throttle_reasons"] = decode_throttle_reasons(row.throttle)
        state["unavailable"] = {key: "not in the log" for key in EDGE_KEYS if state[key] is None}
        return state

    def close(self) -> None:
        pass


def record_log(
    sensor: GpuSensor,
    path: str | Path,
    samples: int,
    interval_s: float,
    now: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Path:
    """Record ``samples`` readings of ``sensor``, ``interval_s`` apart, as a log :func:`read_log` reads
    (e.g. on a GPU machine, to replay its behaviour in tests elsewhere)."""
    path = Path(path)
    columns = [f.name for f in fields(LogRow)]
    t0 = now()
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for i in range(samples):
            if i:
                sleep(interval_s)
            t_s = now() - t0
            try:
                power, method = sensor.power_w()
            except SensorError:
                power, method = None, ""
            edge = sensor.edge_state()
            mask = edge["throttle_mask"]
            row = {
                "t_s": repr(t_s),
                "power_w": "" if power is None else repr(power),
                "energy_mj": _cell(sensor.energy_counter_mj()),
                "throttle": "" if mask is None else f"{mask:#x}",
                "power_method": method,
            }
            for key in ("sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_limit_w"):
                row[key] = _cell(edge[key])
            writer.writerow([row[c] for c in columns])
    return path


def _cell(value: Any) -> str:
    return "" if value is None else repr(value)
