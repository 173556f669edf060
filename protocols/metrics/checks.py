"""Input validation shared by the metric modules: each check raises ``ValueError`` naming the argument.

Metrics validate at their public edge with these and trust their inputs inside (DESIGN.md "Conventions").
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def check_binary_vector(x: npt.ArrayLike, name: str) -> BoolArray:
    """A 1-D array of bool or 0/1 numbers (any integer or float dtype), returned as bool."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array [N], got shape {arr.shape}")
    if arr.dtype == np.bool_:
        return arr
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be bool or 0/1 numbers, got dtype {arr.dtype}")
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{name} must contain only 0 and 1; found {arr[i].item()!r} at index {i}")
    return arr.astype(np.bool_)


def check_real_vector(x: npt.ArrayLike, name: str) -> FloatArray:
    """A 1-D real (integer or float, not bool) array, returned as float64 (NaN and Inf not checked)."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array [N], got shape {arr.shape}")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def check_finite_vector(x: npt.ArrayLike, name: str) -> FloatArray:
    """A 1-D real (integer or float, not bool) array without NaN or Inf, returned as float64."""
    out = check_real_vector(x, name)
    check_finite(out, name)
    return out


def check_finite(arr: FloatArray, name: str) -> None:
    finite = np.isfinite(arr)
    if not finite.all():
        nan = np.isnan(arr)
        kind, where = ("NaN", nan) if nan.any() else ("Inf", ~finite)
        raise ValueError(
            f"{name} contains {kind} ({int(np.count_nonzero(where))} value(s), "
            f"first at index {int(np.argmax(where))})"
        )


def check_not_empty(arr: np.ndarray, name: str) -> None:
    if arr.size == 0:
        raise ValueError(f"{name} is empty: there are no samples")


def check_scores(x: npt.ArrayLike, name: str) -> FloatArray:
    """A ``[N, C]`` real (integer or float, not bool) array without NaN, returned as float64."""
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array [N, C], got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one class (shape {arr.shape})")
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be real numbers, got dtype {arr.dtype}")
    out = arr.astype(np.float64, copy=False)
    if np.isnan(out).any():
        raise ValueError(f"{name} contains NaN")
    return out


def check_multi_hot(x: npt.ArrayLike, name: str) -> BoolArray:
    """A ``[N, C]`` array of bool or 0/1 values (any integer or float dtype), returned as bool."""
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D multi-hot array [N, C], got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must have at least one class (shape {arr.shape})")
    if arr.dtype == np.bool_:
        return arr
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be bool or 0/1 numbers, got dtype {arr.dtype}")
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must contain only 0/1 values (multi-hot)")
    return arr.astype(np.bool_)


def check_same_shape(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{name_b} has shape {b.shape}, expected the shape of {name_a} {a.shape}")


def check_int_vector(x: npt.ArrayLike, name: str) -> IntArray:
    """A 1-D array of an integer dtype (bool rejected), returned as int64."""
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must have an integer dtype, got {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def scalar_types_outside(values: Iterable[object], allowed: tuple[type, ...]) -> set[type]:
    """The types of ``values`` that are not ``allowed`` (subclasses included), ``bool`` always among
    them: one C-level pass that looks at types only, for Python containers of scalars (empty: all good)."""
    return {t for t in set(map(type, values)) if issubclass(t, bool) or not issubclass(t, allowed)}


def check_int(x: object, name: str, minimum: int | None = None) -> int:
    """A Python or numpy integer (bool rejected), optionally bounded below."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {x!r}")
    value = int(x)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value
