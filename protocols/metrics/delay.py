"""Latency-tolerant scoring: which prediction counts for each unit under a delay window Δt.

DESIGN.md "Time and delay" and seed 004 (``seeds/004_45b65944d7246517.txt``) §6.2.2 (1), Acc@Δt /
F1@Δt: the delay of a prediction is ``t_pred - t_seg`` (integer nanoseconds; negative for a label
emitted before its unit is complete). For each evaluated unit the *latest* prediction that refers to
it and lies inside the window counts; a unit with no such prediction predicts nothing.

- Strict: ``0 <= delay <= Δt`` (early labels ignored; the seed's default, used in its Fig. 6.1).
- Early-ok: ``|delay| <= Δt``.

Both bounds are inclusive: a prediction with ``delay == Δt`` counts.

**How a delay is compared with Δt (the rounding rule).** Stream-clock times are recorded as integer
nanoseconds, each the nearest integer to the true time (``round(t * 1e9)`` in the harness), so a
recorded delay — the difference of two such times, plus measured latencies that are integers already
— is within 1 ns of the true delay. Frame periods such as 1/30 s are not whole nanoseconds: at 30 fps a
true delay of one frame is recorded as 33,333,333 or 33,333,334 ns. Hence the rule, a documented
tolerance of :data:`ROUNDING_SLACK_NS` = 1 ns on the upper bound:

    a recorded delay ``d`` (ns) is inside the window Δt (ms) when ``d <= Δt·10⁶ + 1``, i.e.
    ``d <= window_bound_ns(Δt) = ⌊Δt·10⁶⌋ + 1``; Strict also needs ``d >= 0`` and Early-ok
    ``d >= -window_bound_ns(Δt)``.

Δt is taken as the decimal number its float prints as (``repr``: ``100.0`` is exactly 10⁸ ns, and
``1000 / 30`` is 33.333333333333336 ms) and converted to ns once, exactly, in :func:`window_bound_ns`.
What the rule guarantees: no prediction whose true delay lies inside the window is lost (``D <= Δt``
gives ``d <= D + 1 <= Δt + 1``), and a counted prediction's true delay is below Δt + 2 ns — a margin
below the resolution of every clock the harness reads and about 10⁻⁷ of a frame period. The lower
bound of Strict needs no slack: rounding is monotone, so a true delay ``>= 0`` is never recorded
negative (and a prediction of the unit's own frame has delay exactly 0).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import (
    BoolArray,
    IntArray,
    check_int,
    check_int_vector,
    check_multi_hot,
)

DelayMode = Literal["strict", "early_ok"]

ROUNDING_SLACK_NS = 1
"""Tolerance of the window's upper bound: the largest error of a recorded delay, the difference of two
stream-clock times each rounded to the nearest ns (module docstring, "the rounding rule")."""

_NS_PER_MS = 1_000_000


def window_bound_ns(delta_ms: float) -> int:
    """The largest recorded delay (integer ns) inside a window of ``delta_ms`` ms: ``⌊Δt·10⁶⌋ + 1``.

    The rounding rule of this module's docstring (a 1 ns tolerance, :data:`ROUNDING_SLACK_NS`) for the
    Acc@Δt / F1@Δt windows of seed 004 §6.2.2 (1): pass the result as ``window_ns`` to
    :func:`select_in_window`. Δt is read as the decimal its float prints as and scaled exactly (no float
    product), e.g. ``window_bound_ns(1000 / 30) == 33_333_334`` (one frame at 30 fps, recorded as
    33,333,333 or 33,333,334 ns, counts), ``window_bound_ns(100) == 100_000_001``,
    ``window_bound_ns(0) == 1``. ``delta_ms`` must be finite and ``>= 0``.
    """
    if isinstance(delta_ms, bool) or not isinstance(delta_ms, (int, float, np.integer, np.floating)):
        raise ValueError(f"delta_ms must be a number of milliseconds, got {delta_ms!r}")
    value = float(delta_ms)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"delta_ms must be finite and >= 0, got {delta_ms!r}")
    return math.floor(Fraction(repr(value)) * _NS_PER_MS) + ROUNDING_SLACK_NS


def select_in_window(
    unit_of_pred: npt.ArrayLike,
    delay_ns: npt.ArrayLike,
    num_units: int,
    window_ns: int | None,
    mode: DelayMode = "strict",
) -> IntArray:
    """For each unit, the index of the latest prediction inside the delay window, or -1.

    Definition: seed 004 §6.2.2 (1) (Strict / Early-ok) and DESIGN.md "Time and delay".
    Predictions are given in emission order ``p = 0..P-1``: prediction ``p`` refers to unit
    ``unit_of_pred[p]`` (``0 <= unit < num_units``) and has delay ``delay_ns[p]`` (int64 ns, may be
    negative). A prediction is in the window when

    - ``mode="strict"``: ``0 <= delay <= window_ns``;
    - ``mode="early_ok"``: ``-window_ns <= delay <= window_ns``;
    - ``window_ns=None`` (either mode): always — no delay limit, the latest prediction of each unit
      whatever its delay (the offline view, including early labels).

    The comparison is exact on integers; ``window_ns`` is the largest delay that counts. For a Δt in
    ms pass :func:`window_bound_ns` (Δt), which adds the module's 1 ns rounding tolerance.

    "Latest" is the largest emission index ``p``, not the largest delay. Returns int64 ``[num_units]``.
    """
    units = check_int_vector(unit_of_pred, "unit_of_pred")
    delays = check_int_vector(delay_ns, "delay_ns")
    n_units = check_int(num_units, "num_units", minimum=0)
    if delays.shape != units.shape:
        raise ValueError(f"delay_ns has {delays.size} entries, expected one per prediction ({units.size})")
    if units.size and (units.min() < 0 or units.max() >= n_units):
        raise ValueError(f"unit_of_pred values must lie in [0, num_units={n_units})")
    if mode not in ("strict", "early_ok"):
        raise ValueError(f"mode must be 'strict' or 'early_ok', got {mode!r}")
    if window_ns is None:
        valid = np.ones(units.shape, dtype=np.bool_)
    else:
        window = check_int(window_ns, "window_ns", minimum=0)
        lower = 0 if mode == "strict" else -window
        valid = (delays >= lower) & (delays <= window)
    out = np.full(n_units, -1, dtype=np.int64)
    idx = np.flatnonzero(valid).astype(np.int64)
    np.maximum.at(out, units[idx], idx)  # order-independent "latest wins" for repeated units
    return out


def gather_decisions(chosen: npt.ArrayLike, decided: npt.ArrayLike, num_classes: int) -> BoolArray:
    """Decisions per unit ``[num_units, C]``: the rows of ``decided`` picked by ``chosen``.

    ``decided`` is the decision rule applied to every prediction (``[P, C]``, bool or 0/1, e.g. from
    :func:`streambench.protocols.metrics.decision.apply_thresholds`); ``chosen`` comes from
    :func:`select_in_window`. A unit with ``chosen == -1`` predicts nothing (all False), as DESIGN.md
    "Time and delay" and seed 004 §6.2.2 (1) require for a unit without an in-window prediction.
    ``num_classes`` fixes ``C`` (it must equal ``decided.shape[1]``; it matters when ``P == 0``).
    """
    c = check_int(num_classes, "num_classes", minimum=1)
    sel = check_int_vector(chosen, "chosen")
    dec = check_multi_hot(decided, "decided")
    if dec.shape[1] != c:
        raise ValueError(f"decided has {dec.shape[1]} classes, expected num_classes={c}")
    if sel.size and (sel.min() < -1 or sel.max() >= dec.shape[0]):
        raise ValueError(f"chosen values must be -1 or lie in [0, {dec.shape[0]}) (rows of decided)")
    out = np.zeros((sel.size, c), dtype=np.bool_)
    has = sel >= 0
    out[has] = dec[sel[has]]
    return out
