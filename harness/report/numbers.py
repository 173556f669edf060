"""Numbers as a reader reads them: significant digits, thousands separated, a latency in the unit that
suits it, a signed difference with its interval.

Conventions: four significant digits (the report's, as ``num``); thousands separated by a comma (the
CLDR ``en`` pattern ``#,##0``) and no exponent for the magnitudes a benchmark shows (``18,170 fps``,
not ``1.817e+04 fps``); a latency in ns, µs, ms or s, whichever puts its value in [1, 1000) (SI prefixes,
BIPM brochure §3); a difference always signed (``+0.04``, ``−0.04`` with the minus sign U+2212, as
typeset mathematics writes it). These functions format; they never make a number up: ``None`` has no
text here, the caller shows it as missing with its reason.
"""

from __future__ import annotations

import math

from streambench.harness.results.markdown import format_value

__all__ = [
    "duration_s",
    "human",
    "latency_ms",
    "latency_range_ms",
    "percent",
    "rate_fps",
    "signed",
    "signed_points",
    "unit_of_ms",
]

_MINUS = "\u2212"
_TIME_UNITS = (("s", 1e3), ("ms", 1.0), ("µs", 1e-3), ("ns", 1e-6))
"""Latency units and their size in milliseconds, largest first."""


def human(value: float, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits; from ``10^(digits-1)`` (where no decimal is left) up
    to 10^15 as a whole number with thousands separators (``18,170``, ``6,070``); below 10^-4 in
    scientific notation, as ``g`` does."""
    if isinstance(value, int):  # bool is an int too
        return f"{value:,}"
    if not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else "not a number")
    if value == 0:
        return "0"
    rounded = float(f"{value:.{digits}g}")
    if 10 ** (digits - 1) <= abs(rounded) < 1e15:
        return f"{rounded:,.0f}".replace("-", _MINUS)
    if abs(rounded) < 1e-4:
        return f"{rounded:.{digits - 1}e}"
    return f"{rounded:.{digits}g}".replace("-", _MINUS)


def signed(value: float, digits: int = 3) -> str:
    """A difference: always with its sign (``+0.0412``, ``−1.2``; ``±0`` for none)."""
    if value == 0:
        return "±0"
    text = human(abs(value), digits)
    return ("+" if value > 0 else _MINUS) + text


def unit_of_ms(value_ms: float, digits: int = 3) -> tuple[str, float]:
    """The time unit that puts ``value_ms``, rounded to ``digits`` significant digits, in [1, 1000) (ms
    for 0 or a non-finite value), with its size in milliseconds: 0.99996 ms is ``1 ms``, not ``1,000
    µs``."""
    magnitude = abs(value_ms)
    if magnitude == 0 or not math.isfinite(magnitude):
        return "ms", 1.0
    for unit, size in _TIME_UNITS:
        if magnitude >= size * (1 - 0.5 * 10.0**-digits):
            return unit, size
    return _TIME_UNITS[-1]


def latency_ms(value_ms: float, digits: int = 3) -> str:
    """A latency given in ms, in the unit that suits it: ``46.6 µs``, ``4.25 ms``, ``75.9 ns``."""
    unit, size = unit_of_ms(value_ms, digits)
    return f"{human(value_ms / size, digits)} {unit}"


def latency_range_ms(low_ms: float, high_ms: float, unit_of: float, digits: int = 3) -> str:
    """Two latencies in the unit chosen for ``unit_of`` (so a range reads in one unit): ``31.2–42.8 µs``."""
    unit, size = unit_of_ms(unit_of, digits)
    return f"{human(low_ms / size, digits)}–{human(high_ms / size, digits)} {unit}"


def percent(share: float) -> str:
    """A share in [0, 1] (F1, accuracy) as every view prints it: ``81.31 %``
    (:func:`streambench.harness.results.markdown.format_value`, unit ``%``)."""
    return format_value(share, "%")


def signed_points(share_change: float) -> str:
    """A change of a share in percentage points, signed: ``+1.25 pp``, ``−0.40 pp``, ``±0 pp``."""
    points = round(share_change * 100, 2)
    if points == 0:
        return "±0 pp"
    return f"{points:+.2f} pp".replace("-", _MINUS)


def rate_fps(value: float) -> str:
    """Frames per second for humans: ``18,170 fps``."""
    return f"{human(value, 4)} fps"


def duration_s(seconds: float) -> str:
    """A wall-clock duration: ``0.4 s``, ``12 s``, ``3 min 20 s``, ``2 h 05 min`` (rounded to the unit
    shown last)."""
    if seconds < 59.5:
        return f"{human(seconds, 2)} s"
    if seconds < 3570:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes:02d} min"
