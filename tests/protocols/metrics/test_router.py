"""Router hysteresis metrics (seed 001 §1-4) against the seed's formulas, scipy and a plain DTW."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dtaidistance import dtw as dtai_dtw
from dtaidistance import dtw_ndim as dtai_ndim
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial import distance
from scipy.stats import entropy

import streambench.protocols.metrics.router as router_module
from streambench.protocols.metrics.router import (
    dtw_distance,
    hysteresis_area,
    return_gap,
    switch_lag,
    weight_entropy,
)

# --------------------------------------------------------------------------------------------------
# literal transcriptions of seed 001's formulas (the seed has no code)


def seed_switch_lag(
    w: np.ndarray, domain_idx: int, switch_point: int, threshold: float, K: int
) -> int | None:
    """§1: min { t ≥ switch_point | ∀ j ∈ [0, K−1]: w[t+j][domain_idx] ≥ threshold }, minus switch_point."""
    for t in range(switch_point, len(w) - K + 1):
        if all(w[t + j][domain_idx] >= threshold for j in range(K)):
            return t - switch_point
    return None


def seed_return_gap(w_A1: np.ndarray, w_A2: np.ndarray, metric: str) -> float:
    """§2.1 / §2.2 over i ∈ [0, min(len_A1, len_A2) − 1]."""
    values = []
    for i in range(min(len(w_A1), len(w_A2))):
        w1, w2 = w_A1[i], w_A2[i]
        if metric == "cosine":
            values.append(1 - np.dot(w1, w2) / (np.linalg.norm(w1) * np.linalg.norm(w2)))
        else:
            values.append(np.linalg.norm(w1 - w2))
    return float(np.mean(values))


def seed_entropy(w: np.ndarray, eps: float = 1e-10) -> float:
    """§4: entropy(w) = −Σ_i w[i] * log(w[i] + ε)."""
    return -sum(w[i] * math.log(w[i] + eps) for i in range(len(w)))


def plain_dtw(a: np.ndarray, b: np.ndarray, squared: bool = False) -> float:
    """Textbook O(n·m) DTW in Python floats: the local cost ``sqrt(Σ_k (a_ik − b_jk)²)``, squares added
    left to right, summed along the path (``squared``: the squared costs summed, then the sqrt)."""
    a = np.asarray(a, dtype=float).reshape(len(a), -1).tolist()
    b = np.asarray(b, dtype=float).reshape(len(b), -1).tolist()
    n, m = len(a), len(b)
    D = [[math.inf] * (m + 1) for _ in range(n + 1)]
    D[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            c = sum((u - v) * (u - v) for u, v in zip(a[i - 1], b[j - 1], strict=True))
            if not squared:
                c = math.sqrt(c)
            D[i][j] = c + min(D[i - 1][j], D[i][j - 1], D[i - 1][j - 1])
    return math.sqrt(D[n][m]) if squared else D[n][m]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# --------------------------------------------------------------------------------------------------
# switch-lag (§1)


def _column(values: list[float]) -> np.ndarray:
    w = np.zeros((len(values), 2))
    w[:, 1] = values
    w[:, 0] = 1 - w[:, 1]
    return w


W_SWITCH = _column([0.1, 0.95, 0.5, 0.9, 0.92, 0.97, 0.99, 0.2])


def test_switch_lag_hand_cases() -> None:
    assert switch_lag(W_SWITCH, domain=1, start=0) == 3  # 0.9, 0.92, 0.97 from step 3 (first step of the run)
    assert switch_lag(W_SWITCH, domain=1, start=0, strict=True) == 4  # prose's ">": 0.9 does not count
    assert switch_lag(W_SWITCH, domain=1, start=2) == 1  # counted from start
    assert switch_lag(W_SWITCH, domain=1, start=3) == 0  # seed: 0 = instant switch
    assert switch_lag(W_SWITCH, domain=1, start=0, k=1) == 1  # a single spike counts only with K = 1
    assert switch_lag(W_SWITCH, domain=1, start=0, k=5) is None  # never held 5 steps
    assert switch_lag(W_SWITCH, domain=1, start=5) is None  # 0.97, 0.99, 0.2: the run would not fit
    assert switch_lag(W_SWITCH, domain=1, start=8) is None  # start == T
    # domain 0 is 1 - domain 1: [0.9, 0.05, 0.5, 0.1, 0.08, 0.03, 0.01, 0.8]
    assert switch_lag(W_SWITCH, domain=0, start=1, threshold=0.5, k=1) == 1  # 0.5 >= 0.5 at step 2
    assert switch_lag(W_SWITCH, domain=0, start=1, threshold=0.5, k=1, strict=True) == 6  # 0.8 at step 7
    assert switch_lag(W_SWITCH, domain=0, start=0, threshold=0.5, k=2) is None


@pytest.mark.parametrize("seed", range(20))
def test_switch_lag_against_seed_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    t, m = int(rng.integers(1, 40)), int(rng.integers(1, 5))
    w = _softmax(rng.normal(scale=3.0, size=(t, m)))
    w[rng.random((t, m)) < 0.2] = rng.choice([0.5, 0.9])  # values exactly at a threshold
    for domain in range(m):
        for start in range(t + 1):
            for k in (1, 2, 3):
                for thr in (0.5, 0.9):
                    expected = seed_switch_lag(w, domain, start, thr, k)
                    assert switch_lag(w, domain, start, threshold=thr, k=k) == expected


# --------------------------------------------------------------------------------------------------
# return-gap (§2)


def test_return_gap_seed_interpretation_points() -> None:
    a = np.eye(3)
    assert return_gap(a, a) == 0.0  # identical -> 0
    assert return_gap(a, a[[1, 2, 0]]) == 1.0  # orthogonal -> 1 (a distance, not a similarity)
    assert return_gap(a, -a) == 2.0
    assert return_gap(a, a, "euclidean") == 0.0
    assert return_gap(a, a[[1, 2, 0]], "euclidean") == pytest.approx(math.sqrt(2))


def test_return_gap_aligned_prefix() -> None:
    a1 = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    a2 = np.array([[1.0, 0.0], [0.0, 1.0]])  # only steps 0, 1 are compared
    assert return_gap(a1, a2) == pytest.approx(0.5)
    assert return_gap(a2, a1) == pytest.approx(0.5)
    assert return_gap(a1, a2, "euclidean") == pytest.approx(math.sqrt(2) / 2)
    assert return_gap(a1, a2, "dtw") == pytest.approx(plain_dtw(a1, a2))


@pytest.mark.parametrize("seed", range(10))
def test_return_gap_against_scipy_and_seed_formula(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 6))
    a1 = _softmax(rng.normal(size=(int(rng.integers(1, 30)), m)))
    a2 = _softmax(rng.normal(size=(int(rng.integers(1, 30)), m)))
    n = min(len(a1), len(a2))
    cos = np.mean([distance.cosine(a1[i], a2[i]) for i in range(n)])
    euc = np.mean([distance.euclidean(a1[i], a2[i]) for i in range(n)])
    assert return_gap(a1, a2, "cosine") == pytest.approx(cos, abs=1e-12)
    assert return_gap(a1, a2, "cosine") == pytest.approx(seed_return_gap(a1, a2, "cosine"), abs=1e-12)
    assert return_gap(a1, a2, "euclidean") == pytest.approx(euc, abs=1e-12)
    assert return_gap(a1, a2, "euclidean") == pytest.approx(seed_return_gap(a1, a2, "euclidean"), abs=1e-12)
    assert return_gap(a1, a2, "dtw") == pytest.approx(plain_dtw(a1, a2), rel=1e-12)
    assert return_gap(a1, a2, "dtw", dtw_cost="sqrt_sum_sq") == pytest.approx(
        plain_dtw(a1, a2, squared=True), rel=1e-12
    )


# --------------------------------------------------------------------------------------------------
# DTW


def test_dtw_hand_cases() -> None:
    assert dtw_distance([0.0, 1.0, 2.0], [0.0, 1.0, 1.0, 2.0]) == 0.0  # warping absorbs the repeat
    assert dtw_distance([0.0], [1.0, 2.0]) == 3.0
    assert dtw_distance([0.0], [1.0, 2.0], cost="sqrt_sum_sq") == pytest.approx(math.sqrt(5))
    assert dtw_distance([0.0, 0.0], [1.0]) == 2.0
    assert dtw_distance([[0.0, 0.0]], [[3.0, 4.0]]) == 5.0
    # [1, 2, 3] vs [2, 2, 2]: the diagonal costs 1 + 0 + 1 and nothing cheaper exists
    assert dtw_distance([1.0, 2.0, 3.0], [2.0, 2.0, 2.0]) == 2.0
    # path choice differs between conventions: sum picks 0+0+3+... ; check both against the plain DP
    a, b = [0.0, 3.0, 3.0, 0.0], [0.0, 1.0, 2.0, 3.0, 0.0]
    assert dtw_distance(a, b) == plain_dtw(np.array(a), np.array(b))
    assert dtw_distance(a, b, cost="sqrt_sum_sq") == pytest.approx(plain_dtw(np.array(a), np.array(b), True))


@pytest.mark.parametrize(
    "n,m,dims",
    [(1, 1, 1), (1, 7, 2), (7, 1, 3), (5, 9, 1), (13, 6, 4), (20, 20, 3), (9, 9, 12), (6, 8, 33), (3, 5, 99)],
)
def test_dtw_against_plain_dp(n: int, m: int, dims: int) -> None:
    rng = np.random.default_rng(n * 100 + m * 10 + dims)
    a, b = rng.normal(size=(n, dims)), rng.normal(size=(m, dims))
    # the same squares, additions and comparisons in the same order: bit-identical
    assert dtw_distance(a, b) == plain_dtw(a, b)
    assert dtw_distance(a, b, cost="sqrt_sum_sq") == plain_dtw(a, b, squared=True)


@pytest.mark.parametrize(
    "n,m,dims",
    [
        (1, 1, 1),
        (2, 300, 1),
        (300, 2, 1),
        (257, 255, 1),
        (700, 650, 1),
        (400, 37, 3),
        (37, 400, 5),
        (90, 80, 16),
    ],
)
def test_dtw_equals_dtaidistance(n: int, m: int, dims: int) -> None:
    # dtaidistance's C (test and benchmark dependency only): its default is "sqrt_sum_sq", its
    # inner_dist="euclidean" our default "sum"; shapes across several blocks of anti-diagonals
    rng = np.random.default_rng(n + 7 * m + dims)
    a, b = rng.normal(size=(n, dims)), rng.normal(size=(m, dims))
    for cost, inner in (("sqrt_sum_sq", "squared euclidean"), ("sum", "euclidean")):
        if dims == 1:
            ref = dtai_dtw.distance_fast(a[:, 0].copy(), b[:, 0].copy(), inner_dist=inner)
        else:
            ref = dtai_ndim.distance_fast(a, b, inner_dist=inner)
        assert dtw_distance(a, b, cost=cost) == ref, cost  # type: ignore[arg-type]


@pytest.mark.parametrize("block", [1, 5, 40, 1000])
def test_dtw_blocks_of_diagonals_leave_the_result(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # the local costs are computed for blocks of anti-diagonals: any block size gives the textbook result
    rng = np.random.default_rng(block)
    a, b = rng.normal(size=(23, 2)), rng.normal(size=(17, 2))
    monkeypatch.setattr(router_module, "_DTW_BLOCK", block)
    for x, y in ((a, b), (b, a), (a[:1], b), (a, b[:2])):
        assert dtw_distance(x, y) == plain_dtw(x, y)
        assert dtw_distance(x, y, cost="sqrt_sum_sq") == plain_dtw(x, y, squared=True)
        assert dtw_distance(x * 1e-250, y * 1e-250) == pytest.approx(plain_dtw(x, y) * 1e-250, rel=1e-15)


def test_dtw_no_overflow_or_underflow_in_the_norm() -> None:
    # the cases: squaring first gave inf and 0.0
    for cost in ("sum", "sqrt_sum_sq"):
        assert dtw_distance([0.0], [1e200], cost=cost) == 1e200
        assert dtw_distance([0.0], [1e-200], cost=cost) == 1e-200
        assert dtw_distance([[1e-200, 0.0]], [[0.0, 0.0]], cost=cost) == 1e-200
        assert dtw_distance([[0.0, 0.0]], [[3e200, 4e200]], cost=cost) == math.dist(
            [0.0, 0.0], [3e200, 4e200]
        )
        assert dtw_distance([[0.0, 0.0]], [[3e-200, 4e-200]], cost=cost) == math.dist(
            [0, 0], [3e-200, 4e-200]
        )
        assert dtw_distance([5e-324], [0.0], cost=cost) == 5e-324  # the smallest subnormal survives
        assert dtw_distance([1.7e308], [0.0], cost=cost) == 1.7e308
        # both magnitudes at once: the optimal path (1e-200, then 0) next to a cell of cost 1e200
        assert dtw_distance([0.0, 1e200], [1e-200, 1e200], cost=cost) == 1e-200
        assert dtw_distance([0.0, 1e200], [1e-200, 1e200, 0.0], cost=cost) == pytest.approx(1e200, rel=1e-15)
        assert dtw_distance([1e-300, 2e-300], [1e-300, 2e-300], cost=cost) == 0.0
        # only a result beyond the float range is inf
        assert dtw_distance([1e308], [-1e308], cost=cost) == math.inf
    assert dtw_distance([0.0, 0.0], [1e308], cost="sum") == math.inf  # 2e308
    assert dtw_distance([0.0, 0.0], [1e308], cost="sqrt_sum_sq") == pytest.approx(math.sqrt(2) * 1e308)


@pytest.mark.parametrize("exponent", [-1000, -700, -400, 400, 700, 1000])
@pytest.mark.parametrize("dims", [1, 3])
def test_dtw_scales_exactly_by_powers_of_two(exponent: int, dims: int) -> None:
    # DTW is homogeneous: scaling both inputs by 2**e scales the distance by 2**e, exactly in floating
    # point too. Far from 1 the squares leave the float range, yet the result is the unscaled one times
    # 2**e, and the plain DP's result times 2**e
    rng = np.random.default_rng(exponent % 97 + dims)
    a, b = rng.normal(size=(9, dims)), rng.normal(size=(12, dims))
    a[3] = b[5]  # a zero-cost cell
    scale = 2.0**exponent
    assert dtw_distance(a * scale, b * scale) == dtw_distance(a, b) * scale
    assert dtw_distance(a * scale, b * scale) == pytest.approx(plain_dtw(a, b) * scale, rel=1e-15)
    assert dtw_distance(a * scale, b * scale, cost="sqrt_sum_sq") == pytest.approx(
        plain_dtw(a, b, squared=True) * scale, rel=1e-14
    )
    assert dtw_distance(a * scale, a * scale) == 0.0
    assert dtw_distance(a * scale, a * scale, cost="sqrt_sum_sq") == 0.0


def test_return_gap_euclidean_and_cosine_at_extreme_magnitudes() -> None:
    assert return_gap(np.array([[0.0]]), np.array([[1e200]]), "euclidean") == 1e200
    assert return_gap(np.array([[0.0, 1e-200]]), np.array([[1e-200, 0.0]]), "euclidean") == math.dist(
        [0.0, 1e-200], [1e-200, 0.0]
    )
    # rows of norm 1e-200 are not zero rows, rows of norm 1e200 do not overflow
    tiny = np.array([[1e-200, 0.0], [1e-200, 1e-200]])
    assert return_gap(tiny, tiny[::-1], "cosine") == pytest.approx(1 - 1 / math.sqrt(2), abs=1e-15)
    assert return_gap(tiny * 1e300, tiny[::-1] * 1e300, "cosine") == pytest.approx(
        1 - 1 / math.sqrt(2), abs=1e-15
    )


# --------------------------------------------------------------------------------------------------
# hysteresis loop area (§3) and entropy (§4)


def test_hysteresis_area_hand_cases() -> None:
    assert hysteresis_area([1.0, 0.2, 0.9], [1.0, 1.0, 1.0]) == pytest.approx(0.9)  # 0 + 0.8 + 0.1
    assert hysteresis_area([0.3, 0.7], [0.3, 0.7]) == 0.0  # seed: H = 0, no hysteresis
    assert hysteresis_area([0.5, 0.9], [0.9, 0.5]) == pytest.approx(0.8)  # |·|: crossings do not cancel
    fwd = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    rev = np.array([[0.9, 0.1], [0.9, 0.1], [0.9, 0.1]])
    assert hysteresis_area(fwd, rev, domain=0) == pytest.approx(0.7 + 0.3)
    assert hysteresis_area(fwd, rev, domain=1) == pytest.approx(0.7 + 0.3)


def test_entropy_seed_interpretation_points() -> None:
    w = np.array([[1.0, 0.0, 0.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0]])
    ent = weight_entropy(w)
    np.testing.assert_allclose(ent.per_step, [0.0, math.log(4), math.log(2)], atol=1e-9)  # nats
    assert ent.per_step[0] == pytest.approx(-1.0 * math.log(1.0 + 1e-10), abs=0)  # ε inside the log
    assert ent.mean == pytest.approx((math.log(4) + math.log(2)) / 3, abs=1e-9)
    for row, value in zip(w, ent.per_step, strict=True):
        assert value == pytest.approx(seed_entropy(row), abs=1e-15)
    assert weight_entropy(w, eps=0.0).per_step[0] == 0.0


@pytest.mark.parametrize("seed", range(5))
def test_entropy_against_seed_formula_and_scipy(seed: int) -> None:
    rng = np.random.default_rng(seed)
    w = _softmax(rng.normal(scale=2.0, size=(12, 5)))
    ent = weight_entropy(w)
    np.testing.assert_allclose(ent.per_step, [seed_entropy(row) for row in w], rtol=1e-12)
    np.testing.assert_allclose(weight_entropy(w, eps=0.0).per_step, entropy(w, axis=1), rtol=1e-12)


# --------------------------------------------------------------------------------------------------
# validation


def test_validation_names_the_argument() -> None:
    w = W_SWITCH
    with pytest.raises(ValueError, match="domain must be <"):
        switch_lag(w, domain=2, start=0)
    with pytest.raises(ValueError, match="start must be <="):
        switch_lag(w, domain=0, start=9)
    with pytest.raises(ValueError, match="k must be >= 1"):
        switch_lag(w, domain=0, start=0, k=0)
    with pytest.raises(ValueError, match="threshold must be finite"):
        switch_lag(w, domain=0, start=0, threshold=float("nan"))
    with pytest.raises(ValueError, match="w must have shape"):
        switch_lag(w[:, 0], domain=0, start=0)
    with pytest.raises(ValueError, match="w_a2 has 3 columns"):
        return_gap(np.ones((2, 2)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="w_a1 has a zero row at step 1"):
        return_gap(np.array([[1.0, 0.0], [0.0, 0.0]]), np.ones((2, 2)))
    with pytest.raises(ValueError, match="metric must be"):
        return_gap(np.ones((2, 2)), np.ones((2, 2)), "manhattan")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="w_a2 must be finite"):
        return_gap(np.ones((2, 2)), np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="w_a1 must have at least one step"):
        return_gap(np.ones((0, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="cost must be"):
        dtw_distance([1.0], [1.0], cost="max")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="b has 2 columns"):
        dtw_distance([1.0], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="w_rev has 2 steps"):
        hysteresis_area([1.0, 0.5, 0.2], [1.0, 0.5])
    with pytest.raises(ValueError, match="domain is required"):
        hysteresis_area(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="domain must be None"):
        hysteresis_area([1.0], [1.0], domain=0)
    with pytest.raises(ValueError, match="w must be non-negative"):
        weight_entropy(np.array([[1.5, -0.5]]))
    with pytest.raises(ValueError, match="eps must be >= 0"):
        weight_entropy(np.ones((1, 2)), eps=-1.0)


# --------------------------------------------------------------------------------------------------
# properties

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@settings(max_examples=150, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 8), st.integers(1, 3)), elements=finite),
    st.data(),
)
def test_property_dtw_symmetric_zero_and_against_plain_dp(a: np.ndarray, data: st.DataObject) -> None:
    b = data.draw(arrays(np.float64, st.tuples(st.integers(1, 8), st.just(a.shape[1])), elements=finite))
    for cost in ("sum", "sqrt_sum_sq"):
        assert dtw_distance(a, a, cost=cost) == 0.0
        assert dtw_distance(a, b, cost=cost) == pytest.approx(
            dtw_distance(b, a, cost=cost), rel=1e-12, abs=1e-12
        )
        assert dtw_distance(a, b, cost=cost) >= 0.0
    assert dtw_distance(a, b) == pytest.approx(plain_dtw(a, b), rel=1e-12, abs=1e-12)
    assert dtw_distance(a, b, cost="sqrt_sum_sq") == pytest.approx(
        plain_dtw(a, b, True), rel=1e-12, abs=1e-12
    )
    if len(a) == len(b):  # the diagonal is one admissible path
        assert dtw_distance(a, b) <= np.linalg.norm(a - b, axis=1).sum() * (1 + 1e-12) + 1e-12


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 64), st.integers(1, 20))
def test_property_uniform_entropy_is_log_m(m: int, t: int) -> None:
    ent = weight_entropy(np.full((t, m), 1.0 / m))
    np.testing.assert_allclose(ent.per_step, math.log(m), rtol=0, atol=1e-8)
    assert ent.mean == pytest.approx(math.log(m), abs=1e-8)


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 10), st.integers(1, 6)), elements=finite), st.data())
def test_property_metric_ranges(logits: np.ndarray, data: st.DataObject) -> None:
    w = _softmax(logits)
    other = _softmax(
        data.draw(arrays(np.float64, st.tuples(st.integers(1, 10), st.just(w.shape[1])), elements=finite))
    )
    assert 0.0 <= return_gap(w, other, "cosine") <= 1.0  # non-negative weights: angle at most 90°
    assert return_gap(w, w, "cosine") == pytest.approx(0.0, abs=1e-12)  # 1 - cos rounds to ~1e-16
    assert 0.0 <= return_gap(w, other, "euclidean") <= math.sqrt(2) + 1e-12
    ent = weight_entropy(w)
    assert np.all(ent.per_step >= -1e-9) and np.all(ent.per_step <= math.log(w.shape[1]) + 1e-9)
    n = len(w)
    lag = switch_lag(w, 0, 0)
    assert lag is None or 0 <= lag <= n - 3
    assert hysteresis_area(w, w, domain=0) == 0.0
