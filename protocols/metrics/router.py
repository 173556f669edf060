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
from numpy.lib.stride_tricks import sliding_window_view

from streambench.protocols.metrics.checks import FloatArray, check_int

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


def _sum_squares(d: FloatArray) -> FloatArray:
    """``Σ_k d[k]²`` of each column of ``d`` ``[M, N]``, added in dimension order (``d[0]² + d[1]²``, then
    ``+ d[2]²``, ...): the left-to-right sum of the textbook formula and of dtaidistance's C loop
    (``np.sum`` may add pairwise instead)."""
    out = d[0] * d[0]
    for row in d[1:]:
        out += row * row
    return out


def _norms(d: FloatArray) -> FloatArray:
    """Euclidean norm of each column of ``d`` ``[M, N]`` (one vector per column), free of intermediate
    overflow and underflow.

    Columns whose sum of squares is finite and not tiny use ``sqrt(Σ d²)`` (bitwise the plain formula);
    the others are first divided by a power of two near their largest ``|d|`` (exact), the rescaling of
    ``math.hypot`` / ``math.dist`` (``numpy.linalg.norm`` squares first: ``norm([1e200])`` is ``inf``),
    so ``‖[1e200]‖ = 1e200`` and ``‖[1e-200]‖ = 1e-200``. A column with an infinite entry has norm ``inf``.
    """
    with np.errstate(over="ignore", under="ignore"):
        sq = _sum_squares(d)
    out = np.sqrt(sq)
    redo = ~((sq >= _SAFE_SQ) & (sq < np.inf))
    if redo.any():
        r = d[:, redo]
        top = np.max(np.abs(r), axis=0)
        ok = (top > 0) & (top < np.inf)
        scale = np.ldexp(1.0, np.frexp(top[ok])[1] - 1)  # a power of two <= top: exact division
        unit = r[:, ok] / scale  # entries in (-2, 2)
        norms = np.where(top < np.inf, 0.0, np.inf)  # all-zero columns: 0; an infinite entry: inf
        with np.errstate(under="ignore", over="ignore"):
            norms[ok] = scale * np.sqrt(_sum_squares(unit))
        out[redo] = norms
    return out


def _per_step(a: FloatArray, b: FloatArray, name_a: str, name_b: str, metric: str) -> FloatArray:
    if metric == "euclidean":
        with np.errstate(over="ignore"):  # a difference beyond the float range: inf, as the distance
            return _norms((a - b).T)
    na = _norms(a.T)
    nb = _norms(b.T)
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

    Rounding: ``‖a_i − b_j‖²`` adds the squared differences in dimension order (``d_0² + d_1²``, then
    ``+ d_2²``, ...), the left-to-right sum of the textbook loop, and every other step is the
    recursion's own, so the result is bitwise the cell-by-cell loop's and, for ``"sqrt_sum_sq"``,
    bitwise ``dtaidistance.dtw.distance_fast`` (1-D) and ``dtw_ndim.distance_fast`` (``M > 1``), whose
    convention it is (``"sum"``: their ``inner_dist="euclidean"``). Earlier versions added the
    squares by ``numpy.einsum``, in another order for ``M >= 3``: values differ from those earlier ones by
    a few units in the last place at most (relative ``< 1e-15`` in the tests).

    Complexity: ``O(n·m·M)`` time and ``O(M·(n + m))`` memory, a copy of the inputs and blocks of about
    ``2**17`` values (out of the range above, ``"sqrt_sum_sq"`` may take two or three passes). The
    dynamic programme runs over the ``n + m − 1`` anti-diagonals ``i + j = s`` (a Python loop over
    them, three numpy calls each), since the cells of one anti-diagonal depend only on the two before
    it; the local costs are computed with numpy for blocks of diagonals at once. On two 1-D series of
    5000 points this takes about half of dtaidistance's C time (``benchmarks/test_dtw_speed.py``).
    """
    x = _check_weights(a, "a", allow_1d=True)
    y = _check_weights(b, "b", allow_1d=True)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"b has {y.shape[1]} columns, expected the {x.shape[1]} of a")
    if cost not in ("sum", "sqrt_sum_sq"):
        raise ValueError(f"cost must be 'sum' or 'sqrt_sum_sq', got {cost!r}")
    if _moderate(x) and _moderate(y):  # the plain formulas are exact to rounding: the fast path
        return _dtw(x, y, "norm") if cost == "sum" else math.sqrt(_dtw(x, y, "square"))
    if cost == "sum":
        return _dtw(x, y, _norms)
    # squared costs in units of ``unit`` (a power of two: the scaling is exact); first the inputs'
    # magnitude, so that no square on the optimal path overflows
    unit = _power_of_two(max(float(np.abs(x).max()), float(np.abs(y).max())))
    total = _dtw(x, y, lambda d: _squares(d, unit))
    if total < _SAFE_SQ:  # tiny next to ``unit`` (or 0): squares may have underflowed
        near = _dtw(x, y, _norms)  # sqrt_sum_sq lies in [near / sqrt(n + m), near]
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


def _power_of_two(v: float) -> float:
    """The power of two ``2**e`` with ``2**e <= v < 2**(e + 1)`` (1.0 for ``v == 0``)."""
    return math.ldexp(1.0, math.frexp(v)[1] - 1) if v > 0 else 1.0


def _squares(d: FloatArray, unit: float) -> FloatArray:
    """``‖d / unit‖²`` per column (overflow gives ``inf``, underflow 0: neither reaches the result)."""
    with np.errstate(over="ignore", under="ignore"):
        return _sum_squares(d / unit)


_DTW_BLOCK = 1 << 17  # entries of a block's temporaries (diagonals at once): they stay in cache
LocalCost = Literal["norm", "square"] | Callable[[FloatArray], FloatArray]


def _dtw(x: FloatArray, y: FloatArray, local_cost: LocalCost) -> float:
    """``D[n, m]`` of the DTW recursion with the local costs ``"norm"`` (``‖a_i − b_j‖``), ``"square"``
    (``‖a_i − b_j‖²``), both summed in dimension order (:func:`_sum_squares`), or ``local_cost(d)`` of
    the differences ``d[:, c] = a_i − b_j`` (``[M, cells]``, one cell per column).

    Anti-diagonal by anti-diagonal (``i + j = s``): the cells of one depend only on the two before it.
    The costs are computed for a block of ``k`` diagonals at once, in skewed coordinates (row: the
    diagonal, column: ``i``; ``"norm"`` and ``"square"`` one dimension at a time, so a block's size
    does not depend on ``M``), and the Python loop over the diagonals makes three numpy calls on
    preallocated buffers: ``min(D[i−1, j], D[i, j−1])``, its ``min`` with ``D[i−1, j−1]``, plus the cost.
    Every cost, comparison and addition is the textbook recursion's: the result is bitwise the
    cell-by-cell loop's with the same local cost.
    """
    n, m, dims = x.shape[0], y.shape[0], x.shape[1]
    per_cell = dims if callable(local_cost) else 1  # entries of the temporaries per cell
    # diagonals per block: a block computes k − 1 cells per diagonal that the diagonal does not have
    # (kept below a quarter of the longest diagonal or ~512 differences), its temporaries hold at most
    # _DTW_BLOCK entries (or one diagonal's)
    length = min(n, m)  # the longest diagonal
    k = min(256, 1 + max(length // 4, 512 // dims))
    k = max(1, min(k, _DTW_BLOCK // (per_cell * (length + k))))
    width = min(n, m + k)  # the widest block, in cells per diagonal
    # b reversed and padded with zeros (k before, a block's width after), dimension first: the values
    # of b a block needs are a strided view of it
    y_pad = np.zeros((dims, k + m + width))
    y_pad[:, k : k + m] = y[::-1].T
    windows = sliding_window_view(y_pad, width, axis=1)  # [M, t, c]: y_pad[:, t + c]
    x_t = np.ascontiguousarray(x.T)
    # three diagonals, indexed by i (0..n): entry i of diagonal s holds D[i, s − i]; index 0 and the
    # entries past a diagonal's end are the infinite borders (never written), except D[0, 0] = 0
    diag = list(np.full((3, n + 1), np.inf))  # diagonal s is diag[s % 3]
    diag[0][0] = 0.0
    best = np.empty(n)
    scratch = np.empty(max(per_cell, 2) * k * width)  # the block's temporaries
    minimum, add, subtract, multiply = np.minimum, np.add, np.subtract, np.multiply
    with np.errstate(over="ignore"):  # a difference or a sum beyond the float range: inf, as the distance
        for s0 in range(2, n + m + 1, k):
            s1 = min(s0 + k, n + m + 1)  # diagonals s0 .. s1 − 1
            i0, i1 = max(1, s0 - m), min(n, s1 - 2)  # the cells' i over the block
            # costs[r, c]: cell (i, j) = (i0 + c, s0 + r − i0 − c), a[i − 1] − b[j − 1], where b[j − 1]
            # is y_pad[:, t − r + c] with t = k + m − s0 + i0
            t = k + m - s0 + i0
            shape = (s1 - s0, i1 - i0 + 1)
            cells = shape[0] * shape[1]
            xs, ys = x_t[:, i0 - 1 : i1], windows[:, t - shape[0] + 1 : t + 1, : shape[1]][:, ::-1]
            if callable(local_cost):
                diff = scratch[: dims * cells].reshape(dims, *shape)
                subtract(xs[:, np.newaxis], ys, out=diff)
                costs = local_cost(diff.reshape(dims, cells)).reshape(shape)
            elif cells < 512:  # few cells: many dimensions at once, a cumulative sum over them
                step = max(1, _DTW_BLOCK // cells)
                for d in range(0, dims, step):
                    diff = np.empty((min(step, dims - d), *shape))
                    subtract(xs[d : d + step, np.newaxis], ys[d : d + step], out=diff)
                    multiply(diff, diff, out=diff)
                    if d:
                        add(diff[0], costs, out=diff[0])  # the sum so far, then dimensions d, d + 1, ...
                    np.add.accumulate(diff, axis=0, out=diff)  # Σ_k in the order k = 0, 1, ...
                    costs = diff[-1]
            else:  # Σ_k (a_ik − b_jk)², k = 0, 1, ...: one dimension at a time
                costs, term = scratch[:cells].reshape(shape), scratch[cells : 2 * cells].reshape(shape)
                for d in range(dims):
                    out = term if d else costs
                    subtract(xs[d], ys[d], out=out)
                    multiply(out, out, out=out)
                    if d:
                        add(costs, term, out=costs)
            if local_cost == "norm":
                np.sqrt(costs, out=costs)
            for s, row in zip(range(s0, s1), costs, strict=True):
                lo, hi = max(1, s - m), min(n, s - 1)
                prev2, prev1, cur = diag[s % 3 - 2], diag[s % 3 - 1], diag[s % 3]
                low = best[: hi - lo + 1]
                minimum(prev1[lo - 1 : hi], prev1[lo : hi + 1], out=low)
                minimum(low, prev2[lo - 1 : hi], out=low)
                add(low, row[lo - i0 : hi - i0 + 1], out=cur[lo : hi + 1])
                if s == 2:
                    prev2[0] = np.inf  # D[0, 0] was read; index 0 of every diagonal is a border now
    return float(diag[(n + m) % 3][n])


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
