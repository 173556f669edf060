"""Router hysteresis: switch-lag, return-gap (cosine, Euclidean, DTW), loop area, weight entropy.

Definitions follow seed 001 (``seeds/001_261c0fd2b5e89637.txt``) §1-4. Router weights are ``[T, M]``
arrays: one row per step (token), one column per domain / adapter. The seed has no reference code (its
``test_hysteresis.py`` is not part of it), so its formulas are the specification; where its prose and
its formulas disagree, the formula is followed and the difference named in the function's docstring.

Pure numpy: no I/O, no global state. Public functions validate their arguments and raise
``ValueError`` naming the offending argument.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from protocols.metrics.checks import FloatArray, check_int

ReturnGapMetric = Literal["cosine", "euclidean", "dtw"]
DtwCost = Literal["sum", "sqrt_sum_sq"]
"""``"sum"``: Euclidean local costs summed along the path; ``"sqrt_sum_sq"``: square root of the summed
squared Euclidean costs (the convention of e.g. ``dtaidistance.dtw.distance``)."""


def _check_weights(w: npt.ArrayLike, name: str, allow_1d: bool = False) -> FloatArray:
    """A finite float ``[T, M]`` array, ``T, M >= 1`` (``[T]`` read as ``[T, 1]`` if ``allow_1d``)."""
    arr = np.asarray(w)
    if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if allow_1d and arr.ndim == 1:
        arr = arr[:, np.newaxis]
    if arr.ndim != 2:
        shape = "[T, M] or [T]" if allow_1d else "[T, M]"
        raise ValueError(f"{name} must have shape {shape}, got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one step and one column, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def _check_real(x: object, name: str) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number, got {x!r}")
    value = float(x)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def switch_lag(
    w: npt.ArrayLike,
    domain: int,
    start: int,
    threshold: float = 0.9,
    k: int = 3,
    *,
    strict: bool = False,
) -> int | None:
    """Steps after ``start`` until ``w[·, domain] ≥ threshold`` holds for ``k`` steps — seed 001 §1.

    The seed's formula ``min { t ≥ switch_point | ∀ j ∈ [0, K−1]: w[t+j][domain] ≥ threshold }`` gives
    the *first* step of the first stable run; the lag is that step minus ``start`` (the seed's "tokens
    after the segment boundary": 0 = instant switch). The run must fit in the sequence; ``None`` if no
    such run exists. The seed's prose says "active when ``w > threshold``" while its formula uses
    ``≥``: the formula is the default, ``strict=True`` applies the prose's ``>``.
    ``0 <= start <= T`` (``start == T`` gives ``None``).
    """
    arr = _check_weights(w, "w")
    t_n, m_n = arr.shape
    d = check_int(domain, "domain", minimum=0)
    if d >= m_n:
        raise ValueError(f"domain must be < the {m_n} columns of w, got {d}")
    s = check_int(start, "start", minimum=0)
    if s > t_n:
        raise ValueError(f"start must be <= the {t_n} steps of w, got {s}")
    thr = _check_real(threshold, "threshold")
    kk = check_int(k, "k", minimum=1)
    if not isinstance(strict, (bool, np.bool_)):
        raise ValueError(f"strict must be a bool, got {strict!r}")
    col = arr[s:, d]
    ok = col > thr if strict else col >= thr
    if ok.size < kk:
        return None
    held = np.concatenate(([0], np.cumsum(ok)))
    full = (held[kk:] - held[:-kk]) == kk  # full[i]: steps s+i .. s+i+k-1 all hold
    if not full.any():
        return None
    return int(np.argmax(full))


_SAFE_SQ = 2.0**-960  # a sum of squares at least this large lost nothing to underflow (if finite)


def _row_norms(d: FloatArray) -> FloatArray:
    """Euclidean norm of each row of ``d`` ``[N, M]``, free of intermediate overflow and underflow.

    Rows whose sum of squares is finite and not tiny use ``sqrt(Σ d²)`` (bitwise the plain formula);
    the others are first divided by a power of two near their largest ``|d|`` (exact), the rescaling of
    ``math.hypot`` / ``math.dist`` (``numpy.linalg.norm`` squares first: ``norm([1e200])`` is ``inf``),
    so ``‖[1e200]‖ = 1e200`` and ``‖[1e-200]‖ = 1e-200``. A row with an infinite entry has norm ``inf``.
    """
    with np.errstate(over="ignore", under="ignore"):
        sq = np.einsum("ij,ij->i", d, d)
    out = np.sqrt(sq)
    redo = ~((sq >= _SAFE_SQ) & (sq < np.inf))
    if redo.any():
        r = d[redo]
        top = np.max(np.abs(r), axis=1)
        ok = (top > 0) & (top < np.inf)
        scale = np.ldexp(1.0, np.frexp(top[ok])[1] - 1)  # a power of two <= top: exact division
        unit = r[ok] / scale[:, np.newaxis]  # entries in (-2, 2)
        norms = np.where(top < np.inf, 0.0, np.inf)  # all-zero rows: 0; an infinite entry: inf
        with np.errstate(under="ignore", over="ignore"):
            norms[ok] = scale * np.sqrt(np.einsum("ij,ij->i", unit, unit))
        out[redo] = norms
    return out


def _per_step(a: FloatArray, b: FloatArray, name_a: str, name_b: str, metric: str) -> FloatArray:
    if metric == "euclidean":
        with np.errstate(over="ignore"):  # a difference beyond the float range: inf, as the distance
            return _row_norms(a - b)
    na = _row_norms(a)
    nb = _row_norms(b)
    for norms, name in ((na, name_a), (nb, name_b)):
        if np.any(norms == 0):
            i = int(np.argmax(norms == 0))
            raise ValueError(f"{name} has a zero row at step {i}: cosine distance is undefined")
    with np.errstate(under="ignore"):
        cos = np.einsum("ij,ij->i", a / na[:, np.newaxis], b / nb[:, np.newaxis])  # unit rows: no overflow
    return np.asarray(np.clip(1.0 - cos, 0.0, 2.0), dtype=np.float64)


def return_gap(
    w_a1: npt.ArrayLike,
    w_a2: npt.ArrayLike,
    metric: ReturnGapMetric = "cosine",
    *,
    dtw_cost: DtwCost = "sum",
) -> float:
    """Distance between the first and the second "A" segment of an A→B→A trajectory — seed 001 §2.

    - ``"cosine"`` (§2.1): ``mean_i (1 − w_A1[i]·w_A2[i] / (‖w_A1[i]‖ ‖w_A2[i]‖))`` over the aligned
      prefix ``i < min(len_A1, len_A2)``; a cosine *distance* (0 identical, 1 orthogonal), clipped to
      ``[0, 2]`` against rounding as ``scipy.spatial.distance.cosine`` does. Zero rows are rejected.
    - ``"euclidean"`` (§2.2): ``mean_i ‖w_A1[i] − w_A2[i]‖`` over the same prefix.
    - ``"dtw"`` (§2.3): :func:`dtw_distance` of the whole sequences, local cost under ``dtw_cost``
      (the seed does not normalise it by the path length, neither does this).

    Both inputs are ``[T, M]`` with the same ``M``; lengths may differ.
    """
    a = _check_weights(w_a1, "w_a1")
    b = _check_weights(w_a2, "w_a2")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"w_a2 has {b.shape[1]} columns, expected the {a.shape[1]} of w_a1")
    if metric == "dtw":
        return dtw_distance(a, b, cost=dtw_cost)
    if metric not in ("cosine", "euclidean"):
        raise ValueError(f"metric must be 'cosine', 'euclidean' or 'dtw', got {metric!r}")
    n = min(a.shape[0], b.shape[0])
    return float(_per_step(a[:n], b[:n], "w_a1", "w_a2", metric).mean())


def dtw_distance(a: npt.ArrayLike, b: npt.ArrayLike, *, cost: DtwCost = "sum") -> float:
    """Exact dynamic time warping distance of ``a`` ``[n, M]`` and ``b`` ``[m, M]`` (``[n]`` is ``[n, 1]``).

    ``D[i, j] = c(i, j) + min(D[i−1, j], D[i, j−1], D[i−1, j−1])``, ``D[0, 0] = 0``, borders infinite;
    the path runs from ``(1, 1)`` to ``(n, m)`` with unit steps. ``cost="sum"`` (default):
    ``c = ‖a_i − b_j‖`` and the result is ``D[n, m]``; ``cost="sqrt_sum_sq"``: ``c = ‖a_i − b_j‖²`` and the
    result is ``sqrt(D[n, m])``. The seed (§2.3) names DTW without fixing either.

    No intermediate overflow or underflow: when some non-zero ``|value|`` lies outside ``[2**-400,
    2**400]``, the Euclidean norm is rescaled where its squares would leave the float range (as
    ``math.dist``), so ``dtw_distance([0.0], [1e200]) == 1e200`` and ``dtw_distance([0.0], [1e-200])
    == 1e-200``, and ``"sqrt_sum_sq"`` sums the squared costs in units of a power of two (exact): the
    inputs' magnitude or, when the result is far below it, the ``"sum"`` distance (which bounds the
    result within a factor ``sqrt(n + m)``). Only a result beyond the float range is ``inf``. Inside
    that range the plain formulas are used (no rescaling is needed there).

    Complexity: ``O(n·m·M)`` time and ``O(n + m)`` memory (out of the range above, ``"sqrt_sum_sq"`` may
    take two or three passes). The dynamic programme runs over the ``n + m − 1`` anti-diagonals
    ``i + j = s`` (a Python loop over them), each computed with numpy, since the cells of one
    anti-diagonal depend only on the two before it.
    """
    x = _check_weights(a, "a", allow_1d=True)
    y = _check_weights(b, "b", allow_1d=True)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"b has {y.shape[1]} columns, expected the {x.shape[1]} of a")
    if cost not in ("sum", "sqrt_sum_sq"):
        raise ValueError(f"cost must be 'sum' or 'sqrt_sum_sq', got {cost!r}")
    if _moderate(x) and _moderate(y):  # the plain formulas are exact to rounding: the fast path
        if cost == "sum":
            return _dtw(x, y, _plain_norms)
        return math.sqrt(_dtw(x, y, _plain_squares))
    if cost == "sum":
        return _dtw(x, y, _row_norms)
    # squared costs in units of ``unit`` (a power of two: the scaling is exact); first the inputs'
    # magnitude, so that no square on the optimal path overflows
    unit = _power_of_two(max(float(np.abs(x).max()), float(np.abs(y).max())))
    total = _dtw(x, y, lambda d: _squares(d, unit))
    if total < _SAFE_SQ:  # tiny next to ``unit`` (or 0): squares may have underflowed
        near = _dtw(x, y, _row_norms)  # sqrt_sum_sq lies in [near / sqrt(n + m), near]
        if near == 0.0:
            return 0.0
        unit = _power_of_two(near)
        total = _dtw(x, y, lambda d: _squares(d, unit))  # an off-path square may overflow: inf, harmless
    return math.sqrt(total) * unit


_MODERATE = 2.0**400


def _moderate(arr: FloatArray) -> bool:
    """Every non-zero ``|value|`` in ``[2**-400, 2**400]``: then a non-zero difference of two values
    lies in ``[2**-452, 2**401]`` (it is a multiple of the smaller operand's last bit), and a sum of
    its squares neither overflows nor loses anything to underflow."""
    mag = np.abs(arr)
    return bool(mag.max() <= _MODERATE and not np.any((mag > 0) & (mag < 1.0 / _MODERATE)))


def _plain_norms(d: FloatArray) -> FloatArray:
    return np.sqrt(np.einsum("ij,ij->i", d, d))


def _plain_squares(d: FloatArray) -> FloatArray:
    return np.asarray(np.einsum("ij,ij->i", d, d), dtype=np.float64)


def _power_of_two(v: float) -> float:
    """The power of two ``2**e`` with ``2**e <= v < 2**(e + 1)`` (1.0 for ``v == 0``)."""
    return math.ldexp(1.0, math.frexp(v)[1] - 1) if v > 0 else 1.0


def _squares(d: FloatArray, unit: float) -> FloatArray:
    """``‖d_i / unit‖²`` per row (overflow gives ``inf``, underflow 0: neither reaches the result)."""
    with np.errstate(over="ignore", under="ignore"):
        u = d / unit
        return np.asarray(np.einsum("ij,ij->i", u, u), dtype=np.float64)


def _dtw(x: FloatArray, y: FloatArray, local_cost: Callable[[FloatArray], FloatArray]) -> float:
    """``D[n, m]`` of the DTW recursion with the local costs ``local_cost(a_i − b_j rows)``."""
    n, m = x.shape[0], y.shape[0]
    y_rev = y[::-1]
    # diagonals indexed by i (0..n): entry i of diagonal s holds D[i, s - i]
    prev2 = np.full(n + 1, np.inf)
    prev2[0] = 0.0  # s = 0: D[0, 0]
    prev1 = np.full(n + 1, np.inf)  # s = 1: D[1, 0] and D[0, 1], both borders
    for s in range(2, n + m + 1):
        lo, hi = max(1, s - m), min(n, s - 1)
        # cells (i, j = s - i) for i = lo..hi: a[i - 1] against b[s - i - 1] = y_rev[m - s + i]
        with np.errstate(over="ignore"):  # a difference beyond the float range: inf, as the distance
            diff = x[lo - 1 : hi] - y_rev[m - s + lo : m - s + hi + 1]
        local = local_cost(diff)
        cur = np.full(n + 1, np.inf)
        best = np.minimum(np.minimum(prev1[lo - 1 : hi], prev1[lo : hi + 1]), prev2[lo - 1 : hi])
        with np.errstate(over="ignore"):
            cur[lo : hi + 1] = local + best
        prev2, prev1 = prev1, cur
    return float(prev1[n])


def hysteresis_area(w_fwd: npt.ArrayLike, w_rev: npt.ArrayLike, domain: int | None = None) -> float:
    """Hysteresis loop area ``H = Σ_t |w_A(t) − w_A_rev(t)|`` — seed 001 §3.

    ``w_A`` is domain A's weight on the forward trajectory (A→B→A), ``w_A_rev`` on the reverse one
    (A→A without B). The inputs are those weights ``[T]``, or full router weights ``[T, M]`` with the
    column ``domain``. Exactly the seed's formula: a plain sum over steps (no step width, no
    normalisation by ``T``, not a signed or trapezoid integral); both trajectories must have the same
    length ``T``.
    """
    f = np.asarray(w_fwd)
    r = np.asarray(w_rev)
    if f.ndim != r.ndim:
        raise ValueError(f"w_rev has {r.ndim} dimensions, expected the {f.ndim} of w_fwd")
    if f.ndim == 2:
        if domain is None:
            raise ValueError("domain is required when w_fwd and w_rev are [T, M] router weights")
        d = check_int(domain, "domain", minimum=0)
        fw = _check_weights(f, "w_fwd")
        rw = _check_weights(r, "w_rev")
        if rw.shape[1] != fw.shape[1]:
            raise ValueError(f"w_rev has {rw.shape[1]} columns, expected the {fw.shape[1]} of w_fwd")
        if d >= fw.shape[1]:
            raise ValueError(f"domain must be < the {fw.shape[1]} columns of w_fwd, got {d}")
        fa, ra = fw[:, d], rw[:, d]
    elif f.ndim == 1:
        if domain is not None:
            raise ValueError("domain must be None when w_fwd and w_rev are the [T] weights of one domain")
        fa = _check_weights(f, "w_fwd", allow_1d=True)[:, 0]
        ra = _check_weights(r, "w_rev", allow_1d=True)[:, 0]
    else:
        raise ValueError(f"w_fwd must have shape [T] or [T, M], got shape {f.shape}")
    if fa.shape != ra.shape:
        raise ValueError(f"w_rev has {ra.shape[0]} steps, expected the {fa.shape[0]} of w_fwd")
    return float(np.abs(fa - ra).sum())


@dataclass(frozen=True, slots=True, eq=False)
class WeightEntropy:
    """Per-step entropies ``[T]`` (nats, read-only) and their mean over the steps."""

    per_step: FloatArray
    mean: float


def weight_entropy(w: npt.ArrayLike, eps: float = 1e-10) -> WeightEntropy:
    """Entropy of the router weights at each step, ``−Σ_i w[i]·log(w[i] + ε)`` — seed 001 §4.

    Natural logarithm (the seed's ``log``, whose maximum it gives as ``log(num_adapters)``); the
    weights are used as given (not renormalised) and must be non-negative, ``[T, M]``. The entropy of a
    segment (the "микс-сегмент") is ``mean``, the average of the per-step entropies; the entropy of the
    segment's mean weights is ``weight_entropy(w.mean(axis=0, keepdims=True))``.
    """
    arr = _check_weights(w, "w")
    e = _check_real(eps, "eps")
    if e < 0:
        raise ValueError(f"eps must be >= 0, got {e}")
    if np.any(arr < 0):
        raise ValueError("w must be non-negative weights")
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = arr * np.log(arr + e)
    terms[arr == 0] = 0.0  # 0·log(0 + ε) = 0, also for ε = 0
    per_step = -terms.sum(axis=1)
    per_step.setflags(write=False)
    return WeightEntropy(per_step=per_step, mean=float(per_step.mean()))
