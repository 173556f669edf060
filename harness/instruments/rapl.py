"""CPU package energy from Linux powercap RAPL (DESIGN.md "Instruments": "RAPL for the CPU where
readable"; seed 004 §6.3.3 energy figures).

Reads ``<root>/intel-rapl:<n>/energy_uj`` of every top-level package zone (sub-zones such as core /
dram and the ``psys`` platform zone are left out so nothing is counted twice) at the window's edges
and, optionally, every ``poll_interval_s`` on a background thread so that a counter wrapping more than
once in a long window is not missed. A counter lower than its previous reading wrapped at
``max_energy_range_uj``. Since Linux 5.10 ``energy_uj`` is readable by root only: unreadable or absent
files give ``RaplReport(available=False, reason=...)`` with every figure ``None``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_ROOT", "RAPL_METHOD", "RaplMeter", "RaplReport", "RaplZone", "find_rapl_zones"]

DEFAULT_ROOT = Path("/sys/class/powercap")
RAPL_METHOD = "rapl_energy_uj"
_J_PER_UJ = 1e-6


class RaplReport(BaseModel):
    """CPU package energy of one window; figures ``None`` where unmeasured, with the ``reason``."""

    model_config = ConfigDict(extra="forbid")

    available: bool
    reason: str | None = None
    method: str | None = None
    energy_j: float | None = None
    mean_power_w: float | None = None
    duration_s: float | None = None
    zones_j: dict[str, float] | None = Field(None, description="energy per package zone, J")
    wraps: int | None = None
    notes: list[str] = Field(default_factory=list)

    def energy_per_frame_j(self, frames: int) -> float | None:
        if self.energy_j is None or frames <= 0:
            return None
        return self.energy_j / frames


@dataclass(frozen=True)
class RaplZone:
    path: Path
    name: str
    max_range_uj: int | None

    def read_uj(self) -> int:
        """The counter now (µJ); raises OSError / ValueError when unreadable."""
        return int((self.path / "energy_uj").read_text().strip())


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def find_rapl_zones(root: str | Path = DEFAULT_ROOT) -> tuple[list[RaplZone], str | None]:
    """Readable package zones under ``root``, or ``([], "unavailable: <reason>")``."""
    root = Path(root)
    if not root.is_dir():
        return [], f"unavailable: {root} does not exist (no powercap RAPL on this machine)"
    zones: list[RaplZone] = []
    for path in sorted(root.glob("intel-rapl:*")):
        if path.name.count(":") != 1:  # intel-rapl:0:1 is a sub-zone of package 0
            continue
        name = _read_text(path / "name") or path.name
        if not name.startswith("package") and name != path.name:
            continue  # psys (platform) contains the packages
        max_text = _read_text(path / "max_energy_range_uj")
        max_range = int(max_text) if max_text and max_text.isdigit() else None
        zone = RaplZone(path, name, max_range)
        try:
            zone.read_uj()
        except (OSError, ValueError) as exc:
            return [], f"unavailable: cannot read {path / 'energy_uj'} ({type(exc).__name__}: {exc})"
        zones.append(zone)
    if not zones:
        return [], f"unavailable: no intel-rapl package zone under {root}"
    return zones, None


class RaplMeter:
    """Edge readings (plus optional polling) of every package zone; ``start()`` / ``stop()`` outside the
    timed loop, as for :class:`streambench.harness.instruments.power.PowerMeter`."""

    def __init__(
        self,
        zones: list[RaplZone],
        *,
        reason: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        poll_interval_s: float | None = 10.0,
    ) -> None:
        if not zones and not reason:
            raise ValueError("a meter without zones needs the reason")
        if poll_interval_s is not None and poll_interval_s <= 0:
            raise ValueError(f"poll_interval_s must be > 0 or None, got {poll_interval_s}")
        self.zones, self.reason = zones, reason
        self._clock, self._poll_interval_s = clock, poll_interval_s
        self._lock = threading.Lock()
        self._last: dict[str, int] = {}
        self._total_uj: dict[str, int] = {}
        self._wraps = 0
        self._error: str | None = None
        self._t_start: float | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @classmethod
    def open(
        cls,
        root: str | Path = DEFAULT_ROOT,
        *,
        clock: Callable[[], float] = time.monotonic,
        poll_interval_s: float | None = 10.0,
    ) -> RaplMeter:
        zones, reason = find_rapl_zones(root)
        return cls(zones, reason=reason, clock=clock, poll_interval_s=poll_interval_s)

    @property
    def available(self) -> bool:
        return bool(self.zones)

    def poll(self) -> None:
        """Read every zone and add its advance since the last reading (wrap-around corrected)."""
        with self._lock:
            for zone in self.zones:
                key = zone.path.name
                try:
                    now = zone.read_uj()
                except (OSError, ValueError) as exc:
                    self._error = self._error or f"cannot read {zone.path / 'energy_uj'} ({exc})"
                    continue
                last = self._last.get(key)
                self._last[key] = now
                if last is None:
                    continue
                delta = now - last
                if delta < 0:
                    if zone.max_range_uj is None:
                        self._error = (
                            self._error or f"{zone.path}: counter decreased and max_energy_range_uj unknown"
                        )
                        continue
                    delta += zone.max_range_uj
                    self._wraps += 1
                self._total_uj[key] = self._total_uj.get(key, 0) + delta

    def start(self) -> None:
        if not self.zones:
            return
        with self._lock:
            self._last, self._total_uj, self._wraps, self._error = {}, {}, 0, None
        self.poll()
        self._t_start = self._clock()
        if self._poll_interval_s is not None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="streambench-rapl", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        assert self._poll_interval_s is not None
        while not self._stop.wait(self._poll_interval_s):
            self.poll()

    def stop(self) -> RaplReport:
        if not self.zones:
            return RaplReport(available=False, reason=self.reason)
        if self._t_start is None:
            raise RuntimeError("RaplMeter.stop() without start()")
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        self.poll()
        duration = self._clock() - self._t_start
        self._t_start = None
        if self._error is not None:
            return RaplReport(available=False, reason=f"unavailable: {self._error}", duration_s=duration)
        zones_j = {zone.name: self._total_uj.get(zone.path.name, 0) * _J_PER_UJ for zone in self.zones}
        energy = sum(zones_j.values())
        notes: list[str] = []
        if self._poll_interval_s is None:
            notes.append("read at the window edges only: a counter wrapping twice would be missed")
        return RaplReport(
            available=True,
            method=RAPL_METHOD,
            energy_j=energy,
            mean_power_w=energy / duration if duration > 0 else None,
            duration_s=duration,
            zones_j=zones_j,
            wraps=self._wraps,
            notes=notes,
        )

    def close(self) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
