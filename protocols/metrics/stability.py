"""Temporal stability of sparse (TopK) features: Jaccard, lifetime, transient ratio, turnover, flips.

Definitions follow seed 000 (``seeds/000_9596100f0090cc0e.txt``) §1-5 and its reference loops (the
``compute_lifetime`` / ``compute_transient_ratio`` / ``compute_flips`` code and the snippets of
"实际代码实现位置"). Features come in as a boolean activity array ``[B, T, D]`` (batch, time,
dictionary), the seed's ``sparse_features > 0``; :func:`topk_to_active` builds it from top-k indices.

Conventions (DESIGN.md "Conventions": both supported, default named, never mixed):

- Averages over steps pool all ``B·(T−1)`` adjacent pairs, as the seed's loops append every ``(b, t)``
  pair to one list before ``mean``.
- Jaccard of two empty frames: the seed's code computes ``0/0`` (NaN). ``empty_jaccard="one"`` (default)
  scores it 1.0 (two empty sets are equal; scipy's ``jaccard`` distance is 0 for two all-zero vectors);
  ``"skip"`` keeps NaN in the per-step array and leaves those steps out of the mean.
- Lifetime: the §2 formula line and the seed's code take the mean over all activation runs
  (``lifetime_convention="runs"``, default); the §2 worked steps 2-3 take the mean over features of each
  feature's mean run length (``"per_feature"``; a feature is a dictionary index ``d``, its runs pooled
  over the batch, features never active left out).
- Runs cut by the sequence boundaries count with their observed length (the code's "最后一段" branch);
  runs never cross from one batch item to the next.
- Turnover (§4) divides the new features by ``k`` when ``k`` is given (the code's ``/ k``); with
  ``k=None`` by the number of features active at ``t+1``. §4 defines it as the share of the Top-K at
  ``t+1`` that is new, so a step whose frame ``t+1`` has no active feature is undefined whichever the
  divisor: NaN in the per-step array and left out of the mean, as Jaccard's undefined steps are with
  ``empty_jaccard="skip"`` (the code's ``new.sum() / k`` would score it 0 and pull the mean down). The
  mean over no defined step is NaN.
- With no activation run at all, lifetime and transient ratio are NaN (the code's ``mean([])``; its
  ``transient_count / total_count`` would divide by zero).

Cost: ``O(B·T·D)`` for the frame counts plus ``O(nnz·log nnz)`` for the runs (a sort of the active
positions by ``(b, d, t)``); no Python loop over batch, time or features.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import BoolArray, FloatArray, IntArray, check_int

LifetimeConvention = Literal["runs", "per_feature"]
EmptyJaccard = Literal["one", "skip"]


def _check_active(active: npt.ArrayLike) -> BoolArray:
    """A boolean ``[B, T, D]`` array (``[T, D]`` is one stream, ``B = 1``) with ``T >= 2`` and ``D >= 1``."""
    arr = np.asarray(active)
    if arr.dtype != np.bool_:
        raise ValueError(
            f"active must be a boolean array, got dtype {arr.dtype} "
            "(use features > 0 as the seed does, or topk_to_active for top-k indices)"
        )
    if arr.ndim == 2:
        arr = arr[np.newaxis]
    if arr.ndim != 3:
        raise ValueError(f"active must have shape [B, T, D] or [T, D], got shape {arr.shape}")
    b, t, d = arr.shape
    if b < 1 or d < 1:
        raise ValueError(f"active needs at least one stream and one feature, got shape {arr.shape}")
    if t < 2:
        raise ValueError(f"active needs at least 2 frames (T >= 2) for adjacent-frame metrics, got T={t}")
    return arr


def topk_to_active(indices: npt.ArrayLike, num_features: int) -> BoolArray:
    """Boolean activity ``[..., num_features]`` from top-k feature indices ``[..., K]``.

    ``out[..., d]`` is True iff ``d`` is one of the frame's indices. Indices must be integers in
    ``[0, num_features)`` and distinct within a frame (a top-k selection never repeats a feature).
    """
    idx = np.asarray(indices)
    n = check_int(num_features, "num_features", minimum=1)
    if idx.ndim < 1:
        raise ValueError(f"indices must have a last axis of K indices, got shape {idx.shape}")
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must have an integer dtype, got {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"indices must lie in [0, num_features={n})")
    if idx.shape[-1] > 1 and np.any(np.diff(np.sort(idx, axis=-1), axis=-1) == 0):
        raise ValueError("indices must be distinct within each frame (repeated feature index)")
    out = np.zeros((*idx.shape[:-1], n), dtype=np.bool_)
    np.put_along_axis(out, idx.astype(np.intp, copy=False), True, axis=-1)
    return out


@dataclass(frozen=True, slots=True, eq=False)
class ActivationRuns:
    """Maximal runs of consecutive active frames, in the seed's loop order ``(b, d, t)``.

    Each field is an int64 array ``[R]`` (read-only): the run's ``length`` in frames, and its
    ``batch``, ``feature`` and ``start`` frame. Equality is identity (``eq=False``).
    """

    length: IntArray
    batch: IntArray
    feature: IntArray
    start: IntArray


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr.setflags(write=False)
    return arr


def _runs(a: BoolArray) -> ActivationRuns:
    _, t_n, d_n = a.shape
    flat = np.flatnonzero(a)  # positions in (b, t, d) order
    b, rem = np.divmod(flat, t_n * d_n)
    t, d = np.divmod(rem, d_n)
    key = np.sort((b * d_n + d) * t_n + t)  # the same positions in (b, d, t) order
    t = key % t_n
    # a run starts where the previous active position is not the frame before in the same (b, d) series
    is_start = np.ones(key.size, dtype=np.bool_)
    is_start[1:] = (np.diff(key) != 1) | (t[1:] == 0)
    starts = np.flatnonzero(is_start)
    length = np.diff(np.append(starts, key.size))
    bd = key[starts] // t_n
    return ActivationRuns(
        length=_readonly(length.astype(np.int64)),
        batch=_readonly((bd // d_n).astype(np.int64)),
        feature=_readonly((bd % d_n).astype(np.int64)),
        start=_readonly(t[starts].astype(np.int64)),
    )


def activation_runs(active: npt.ArrayLike) -> ActivationRuns:
    """All activation runs of a boolean ``[B, T, D]`` (or ``[T, D]``) array — seed 000 §2-3.

    The "连续激活段" of ``compute_lifetime``: for every stream ``b`` and feature ``d``, each maximal
    stretch of consecutive active frames is one run; runs cut by the start or the end of the sequence
    count with their observed length. Listed in the seed's loop order (``b``, then ``d``, then ``t``).
    """
    return _runs(_check_active(active))


@dataclass(frozen=True, slots=True, eq=False)
class TemporalStability:
    """Seed 000 §1-5 stability metrics of one ``[B, T, D]`` activity array.

    Scalars: ``jaccard`` (mean over steps), ``lifetime`` (frames, under ``lifetime_convention``),
    ``transient_ratio`` (runs of length 1 / runs), ``turnover`` and ``flips`` (means over steps).
    Per-step arrays ``[B, T−1]`` (read-only; step ``t`` is the pair ``(t, t+1)``): ``jaccard_per_step``
    (NaN where skipped), ``turnover_per_step`` (NaN where frame ``t+1`` is empty), ``flips_per_step``.
    ``jaccard`` and ``turnover`` are means over their defined (non-NaN) steps, NaN if there is none.
    ``num_runs`` and ``num_transient_runs`` count the runs behind lifetime and transient ratio; ``k`` is
    the k used for turnover (``None``: the size of frame ``t+1``). Equality is identity (``eq=False``).
    """

    jaccard: float
    lifetime: float
    transient_ratio: float
    turnover: float
    flips: float
    jaccard_per_step: FloatArray
    turnover_per_step: FloatArray
    flips_per_step: IntArray
    num_runs: int
    num_transient_runs: int
    lifetime_convention: LifetimeConvention
    empty_jaccard: EmptyJaccard
    k: int | None


def _lifetime(runs: ActivationRuns, num_features: int, convention: LifetimeConvention) -> float:
    if runs.length.size == 0:
        return float("nan")
    if convention == "runs":
        return float(runs.length.mean())
    total = np.bincount(runs.feature, weights=runs.length, minlength=num_features)
    count = np.bincount(runs.feature, minlength=num_features)
    seen = count > 0
    return float(np.mean(total[seen] / count[seen]))


def temporal_stability(
    active: npt.ArrayLike,
    k: int | None = None,
    *,
    lifetime_convention: LifetimeConvention = "runs",
    empty_jaccard: EmptyJaccard = "one",
) -> TemporalStability:
    """Jaccard, lifetime, transient ratio, turnover and flips of ``active`` ``[B, T, D]`` — seed 000 §1-5.

    With ``A_t`` the set of features active at frame ``t`` (of stream ``b``):

    - §1 Jaccard(t, t+1) = ``|A_t ∩ A_t+1| / |A_t ∪ A_t+1|``; both empty: ``empty_jaccard``.
    - §2 Lifetime: mean run length, ``lifetime_convention="runs"`` (code, default) or ``"per_feature"``.
    - §3 Transient ratio = runs of length 1 / all runs.
    - §4 Turnover(t→t+1) = ``|A_t+1 \\ A_t| / k`` (``k=None``: ``/ |A_t+1|``); undefined (NaN, left out
      of the mean) if ``A_t+1`` is empty, whatever ``k``.
    - §5 Flips(t→t+1) = ``|A_t △ A_t+1|``.

    ``k`` (the top-k size) must be at least the number of active features of every frame. ``T >= 2``.
    """
    a = _check_active(active)
    d_n = a.shape[2]
    if lifetime_convention not in ("runs", "per_feature"):
        raise ValueError(f"lifetime_convention must be 'runs' or 'per_feature', got {lifetime_convention!r}")
    if empty_jaccard not in ("one", "skip"):
        raise ValueError(f"empty_jaccard must be 'one' or 'skip', got {empty_jaccard!r}")
    size = np.count_nonzero(a, axis=-1)  # [B, T]
    k_val: int | None = None
    if k is not None:
        k_val = check_int(k, "k", minimum=1)
        if size.max() > k_val:
            raise ValueError(f"k={k_val} is smaller than the {int(size.max())} active features of a frame")

    inter = np.count_nonzero(a[:, :-1] & a[:, 1:], axis=-1)  # [B, T-1]
    union = size[:, :-1] + size[:, 1:] - inter
    new = size[:, 1:] - inter
    flips = union - inter
    both_empty = union == 0
    jaccard = np.divide(inter, union, out=np.full(inter.shape, np.nan), where=~both_empty)
    if empty_jaccard == "one":
        jaccard[both_empty] = 1.0
    kept = int(np.count_nonzero(~both_empty)) if empty_jaccard == "skip" else jaccard.size
    jaccard_mean = float(np.nansum(jaccard) / kept) if kept else float("nan")
    defined = size[:, 1:] > 0  # §4: the share of a non-empty Top-K at t+1
    denominator = np.full(new.shape, k_val) if k_val is not None else size[:, 1:]
    turnover = np.divide(new, denominator, out=np.full(new.shape, np.nan), where=defined)
    n_defined = int(np.count_nonzero(defined))
    turnover_mean = float(np.nansum(turnover) / n_defined) if n_defined else float("nan")

    runs = _runs(a)
    n_runs = int(runs.length.size)
    n_transient = int(np.count_nonzero(runs.length == 1))
    return TemporalStability(
        jaccard=jaccard_mean,
        lifetime=_lifetime(runs, d_n, lifetime_convention),
        transient_ratio=n_transient / n_runs if n_runs else float("nan"),
        turnover=turnover_mean,
        flips=float(flips.mean()),
        jaccard_per_step=_readonly(jaccard),
        turnover_per_step=_readonly(turnover.astype(np.float64)),
        flips_per_step=_readonly(flips.astype(np.int64)),
        num_runs=n_runs,
        num_transient_runs=n_transient,
        lifetime_convention=lifetime_convention,
        empty_jaccard=empty_jaccard,
        k=k_val,
    )


def _check_jaccard_k(jaccard: npt.ArrayLike, k: int) -> tuple[FloatArray, int]:
    j = np.asarray(jaccard, dtype=np.float64)
    if np.any(~np.isfinite(j)) or np.any((j < 0) | (j > 1)):
        raise ValueError("jaccard must lie in [0, 1]")
    return j, check_int(k, "k", minimum=1)


def flips_jaccard_bound(jaccard: npt.ArrayLike, k: int) -> FloatArray:
    """The seed's ``Flips ≈ 2K × (1 − Jaccard)`` — seed 000 "指标之间的关系 / 数学关系" 1.

    Not an approximation but an upper bound: for frames with at most ``k`` active features,
    ``flips = |A ∪ B|·(1 − J) ≤ 2k·(1 − J)``, per step and (the bound being linear in ``J``) for the
    means over steps. The seed's Window TopK check (J = 0.849, K = 128 → 38.7) is this bound.
    """
    j, kk = _check_jaccard_k(jaccard, k)
    return 2.0 * kk * (1.0 - j)


def flips_from_jaccard(jaccard: npt.ArrayLike, k: int) -> FloatArray:
    """Exact flips of two frames with exactly ``k`` active features each: ``2k·(1 − J)/(1 + J)``.

    The "Top-K 限制" the seed invokes in §5: with ``|A| = |B| = k``, ``|A ∩ B| = 2kJ/(1 + J)`` and
    ``flips = 2k − 2|A ∩ B|``. It is convex in ``J``, so for exactly-k frames the mean flips lie
    between ``flips_from_jaccard(mean J)`` and ``flips_jaccard_bound(mean J)``.
    """
    j, kk = _check_jaccard_k(jaccard, k)
    return 2.0 * kk * (1.0 - j) / (1.0 + j)
