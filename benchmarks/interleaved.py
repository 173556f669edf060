"""Interleaved timing shared by the side-by-side speed benchmarks (ours against a reference library)."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(funcs: list[Callable[[], object]], repeats: int) -> list[float]:
    """The best wall time (s) of each function over ``repeats`` interleaved rounds: a busy machine slows
    every side of one round alike."""
    times: list[list[float]] = [[] for _ in funcs]
    for _ in range(repeats):
        for f, t in zip(funcs, times, strict=True):
            start = time.perf_counter()
            f()
            t.append(time.perf_counter() - start)
    return [min(t) for t in times]
