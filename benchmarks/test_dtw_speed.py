"""DTW on two series of 5000 points: ``streambench.protocols.metrics.router.dtw_distance`` against
dtaidistance's C.

Opt-in (not collected by ``pytest`` alone): ``python -m pytest benchmarks -k dtw -s``. dtaidistance
is what a user would call otherwise (a benchmark and test dependency only, in the ``dev`` extra), with
its defaults: ``dtw.distance_fast`` for 1-D series (square root of the summed squared differences,
its pruning on), ``inner_dist="euclidean"`` for streambench's default ``cost="sum"``, and
``dtw_ndim.distance_fast`` for ``[5000, 4]`` router weights. Both run on the same inputs, interleaved,
``REPEATS`` times; the best time of each is compared (ours / theirs) and the distances must be equal,
bit for bit. The 1-D cases (issue 25: 1.5–1.7× dtaidistance's time before) must be no slower than
dtaidistance; the 4-column cases are printed (numpy pays one pass per column and operation where C
fuses them).
"""

from __future__ import annotations

import numpy as np
import pytest
from dtaidistance import dtw, dtw_ndim

from benchmarks.interleaved import best_of
from streambench.protocols.metrics.router import DtwCost, dtw_distance

pytestmark = pytest.mark.benchmark

N = 5000
REPEATS = 5


@pytest.mark.parametrize(
    ("columns", "cost", "must_win"),
    [(1, "sqrt_sum_sq", True), (1, "sum", True), (4, "sqrt_sum_sq", False), (4, "sum", False)],
)
def test_dtw_vs_dtaidistance(columns: int, cost: DtwCost, must_win: bool) -> None:
    rng = np.random.default_rng(columns)
    a, b = rng.random((N, columns)), rng.random((N, columns))
    inner = "squared euclidean" if cost == "sqrt_sum_sq" else "euclidean"
    if columns == 1:
        a1, b1 = a[:, 0].copy(), b[:, 0].copy()

        def theirs() -> float:
            return float(dtw.distance_fast(a1, b1, inner_dist=inner))
    else:

        def theirs() -> float:
            return float(dtw_ndim.distance_fast(a, b, inner_dist=inner))

    def ours() -> float:
        return dtw_distance(a, b, cost=cost)

    assert ours() == theirs()
    t_ours, t_theirs = best_of([ours, theirs], REPEATS)
    ratio = t_ours / t_theirs
    print(
        f"\nDTW [{N}, {columns}] x [{N}, {columns}], cost={cost}: streambench {t_ours * 1e3:.1f} ms, "
        f"dtaidistance {t_theirs * 1e3:.1f} ms, ratio ours / theirs {ratio:.2f} (best of {REPEATS})"
    )
    if must_win:
        assert ratio <= 1.0
