"""Temporal stability of sparse features (seed 000 §1-5) against the seed's worked examples and loops."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from streambench.protocols.metrics.stability import (
    activation_runs,
    flips_from_jaccard,
    flips_jaccard_bound,
    temporal_stability,
    topk_to_active,
)

# --------------------------------------------------------------------------------------------------
# literal transcriptions of seed 000's reference code (torch.where -> np.where, torch division -> numpy)


def seed_lifetimes(sparse_features: np.ndarray) -> list[int]:
    """Seed 000 §2 "实际计算（代码逻辑）" compute_lifetime, returning the list it takes the mean of."""
    active_mask = sparse_features > 0  # [B, T, dict_size]
    B, T, dict_size = active_mask.shape
    lifetimes = []
    for b in range(B):
        for d in range(dict_size):
            activation_seq = active_mask[b, :, d]  # [T]
            current_length = 0
            for t in range(T):
                if activation_seq[t]:
                    current_length += 1
                else:
                    if current_length > 0:
                        lifetimes.append(current_length)
                    current_length = 0
            if current_length > 0:
                lifetimes.append(current_length)
    return lifetimes


def seed_compute_lifetime(sparse_features: np.ndarray) -> float:
    return float(np.mean(seed_lifetimes(sparse_features)))


def seed_lifetime_per_feature(sparse_features: np.ndarray) -> float:
    """Seed 000 §2 steps 1-3 (the text): mean run length of each feature, then mean over active features."""
    active_mask = sparse_features > 0
    per_feature = []
    for d in range(active_mask.shape[2]):
        runs = seed_lifetimes(sparse_features[:, :, d : d + 1])  # feature d, runs of every stream
        if runs:
            per_feature.append(np.mean(runs))
    return float(np.mean(per_feature))


def seed_compute_transient_ratio(lifetimes: list[int]) -> float:
    """Seed 000 §3 "实际代码" compute_transient_ratio."""
    transient_count = sum(1 for lt in lifetimes if lt == 1)
    total_count = len(lifetimes)
    return transient_count / total_count


def seed_compute_flips(sparse_features: np.ndarray) -> list[int]:
    """Seed 000 §5 "实际代码" compute_flips, returning flips_per_step (the seed returns its mean)."""
    active_mask = sparse_features > 0
    B, T = active_mask.shape[:2]
    flips_per_step = []
    for b in range(B):
        for t in range(T - 1):
            active_t = set(np.where(active_mask[b, t])[0].tolist())
            active_t1 = set(np.where(active_mask[b, t + 1])[0].tolist())
            flips = len(active_t.symmetric_difference(active_t1))
            flips_per_step.append(flips)
    return flips_per_step


def seed_jaccard_and_turnover(sparse_features: np.ndarray, k: int | None) -> tuple[list[float], list[float]]:
    """Seed 000 "实际代码实现位置" snippets 1 (Jaccard) and 4 (turnover), looped over b and t.

    ``k=None`` is this project's extension (divide by the size of frame t+1, 0 if it is empty); the
    seed always divides by k. Jaccard of two empty frames is the code's 0/0 = NaN. The turnover of a
    step whose frame t+1 is empty is the code's 0 here; ``temporal_stability`` leaves it undefined
    (NaN, §4: the share of a non-empty Top-K), see :func:`turnover_defined_steps`.
    """
    B, T = sparse_features.shape[:2]
    jaccards, turnovers = [], []
    for b in range(B):
        for t in range(T - 1):
            active_t = sparse_features[b, t] > 0
            active_t1 = sparse_features[b, t + 1] > 0
            intersection = (active_t & active_t1).sum()
            union = (active_t | active_t1).sum()
            with np.errstate(invalid="ignore"):
                jaccard = np.float64(intersection) / union
            jaccards.append(float(jaccard))
            new_features = active_t1 & (~active_t)
            denominator = k if k is not None else active_t1.sum()
            turnovers.append(float(new_features.sum() / denominator) if denominator else 0.0)
    return jaccards, turnovers


def turnover_defined_steps(sparse_features: np.ndarray, turnovers: list[float]) -> np.ndarray:
    """The seed loop's turnovers with the steps into an empty frame t+1 set to NaN (undefined)."""
    next_empty = ~(sparse_features[:, 1:] > 0).any(axis=-1)  # [B, T-1], the loop's (b, t) order
    return np.where(next_empty.ravel(), np.nan, turnovers)


# --------------------------------------------------------------------------------------------------
# worked examples of seed 000

T0 = [5, 12, 34, 89, 127]
T1 = [5, 12, 78, 89, 100]


def test_worked_example_jaccard_turnover_flips() -> None:
    active = topk_to_active(np.array([[T0, T1]]), 128)  # [1, 2, 128], k = 5
    assert active.shape == (1, 2, 128)
    res = temporal_stability(active, k=5)
    assert res.jaccard == pytest.approx(3 / 7, abs=1e-15)  # §1: 3 shared of 7
    assert round(res.jaccard, 4) == 0.4286
    assert res.turnover == pytest.approx(0.4, abs=1e-15)  # §4: {78, 100} new, 2 / 5
    assert res.flips == 4.0  # §5: {34, 127, 78, 100}
    np.testing.assert_array_equal(res.flips_per_step, [[4]])
    # with k=None turnover divides by |A_1| = 5 as well
    assert temporal_stability(active).turnover == pytest.approx(0.4, abs=1e-15)


def test_worked_example_lifetime_feature_42() -> None:
    seq = np.array([1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 1, 0], dtype=bool)  # §2, frames 0..12
    active = np.zeros((1, seq.size, 64), dtype=bool)
    active[0, :, 42] = seq
    runs = activation_runs(active)
    np.testing.assert_array_equal(runs.length, [3, 5, 1])
    np.testing.assert_array_equal(runs.start, [0, 5, 11])
    np.testing.assert_array_equal(runs.feature, [42, 42, 42])
    for convention in ("runs", "per_feature"):
        assert temporal_stability(active, lifetime_convention=convention).lifetime == 3.0


def test_worked_example_transient_ratio() -> None:
    active = np.zeros((1, 7, 31), dtype=bool)  # §3: features 10, 20, 30
    active[0, :, 10] = [1, 1, 0, 0, 1, 0, 0]
    active[0, :, 20] = [0, 1, 0, 0, 0, 0, 0]
    active[0, :, 30] = [1, 1, 1, 1, 0, 0, 0]
    res = temporal_stability(active)
    np.testing.assert_array_equal(activation_runs(active).length, [2, 1, 1, 4])
    assert res.transient_ratio == 0.5
    assert (res.num_runs, res.num_transient_runs) == (4, 2)
    # the two lifetime conventions differ here: mean of [2, 1, 1, 4] vs mean of 1.5, 1, 4
    assert res.lifetime == 2.0
    assert temporal_stability(active, lifetime_convention="per_feature").lifetime == pytest.approx(6.5 / 3)


def test_flips_jaccard_relation_seed_figure_and_exactness() -> None:
    # seed 000 "数学关系" 1: Window TopK, Jaccard 0.849, K = 128 -> predicted flips 38.7
    assert round(float(flips_jaccard_bound(0.849, 128)), 1) == 38.7
    # the §1/§5 example has exactly k = 5 per frame: flips = 2k(1 - J)/(1 + J) exactly, below 2k(1 - J)
    assert float(flips_from_jaccard(3 / 7, 5)) == pytest.approx(4.0, abs=1e-12)
    assert float(flips_jaccard_bound(3 / 7, 5)) == pytest.approx(40 / 7)


@pytest.mark.parametrize("seed", range(4))
def test_flips_jaccard_relation_on_topk_streams(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k, d = 6, 20
    idx = np.argsort(rng.random((3, 40, d)), axis=-1)[..., :k]
    res = temporal_stability(topk_to_active(idx, d), k=k)
    exact = flips_from_jaccard(res.jaccard_per_step, k)
    np.testing.assert_allclose(res.flips_per_step, exact, rtol=0, atol=1e-9)
    assert np.all(res.flips_per_step <= flips_jaccard_bound(res.jaccard_per_step, k) + 1e-9)
    assert (
        flips_from_jaccard(res.jaccard, k) - 1e-9 <= res.flips <= flips_jaccard_bound(res.jaccard, k) + 1e-9
    )


# --------------------------------------------------------------------------------------------------
# against the seed's loops on random inputs


def _random_features(rng: np.random.Generator, shape: tuple[int, int, int], density: float) -> np.ndarray:
    """Non-negative sparse features (the seed's ``sparse_features``), some frames emptied."""
    x = rng.random(shape) * (rng.random(shape) < density)
    empty = rng.random(shape[:2]) < 0.15
    x[empty] = 0.0
    return x


def _assert_matches_seed(features: np.ndarray, k: int | None) -> None:
    active = features > 0
    res = temporal_stability(active, k=k, empty_jaccard="skip")
    jaccards, turnovers = seed_jaccard_and_turnover(features, k)
    T = features.shape[1]
    np.testing.assert_array_equal(res.jaccard_per_step.ravel(), jaccards)  # NaN where both frames are empty
    assert res.jaccard_per_step.shape == (features.shape[0], T - 1)
    finite = [j for j in jaccards if not math.isnan(j)]
    if finite:
        assert res.jaccard == pytest.approx(np.mean(finite), abs=1e-12)
    else:
        assert math.isnan(res.jaccard)
    one = temporal_stability(active, k=k).jaccard_per_step.ravel()
    np.testing.assert_array_equal(one, np.where(np.isnan(jaccards), 1.0, jaccards))
    expected = turnover_defined_steps(features, turnovers)
    np.testing.assert_allclose(res.turnover_per_step.ravel(), expected, rtol=0, atol=1e-15)  # NaN = NaN
    if np.isnan(expected).all():
        assert math.isnan(res.turnover)
    else:
        assert res.turnover == pytest.approx(np.nanmean(expected), abs=1e-12)
    flips = seed_compute_flips(features)
    np.testing.assert_array_equal(res.flips_per_step.ravel(), flips)
    assert res.flips == pytest.approx(np.mean(flips), abs=1e-12)
    lifetimes = seed_lifetimes(features)
    np.testing.assert_array_equal(activation_runs(active).length, lifetimes)  # same runs, same order
    if lifetimes:
        assert res.lifetime == pytest.approx(seed_compute_lifetime(features), abs=1e-12)
        assert res.transient_ratio == seed_compute_transient_ratio(lifetimes)
        per_feature = temporal_stability(active, lifetime_convention="per_feature").lifetime
        assert per_feature == pytest.approx(seed_lifetime_per_feature(features), abs=1e-12)
    else:
        assert math.isnan(res.lifetime) and math.isnan(res.transient_ratio)


@pytest.mark.parametrize("shape", [(1, 2, 1), (2, 5, 7), (3, 20, 16), (4, 33, 64)])
@pytest.mark.parametrize("density", [0.0, 0.05, 0.3, 0.9, 1.0])
def test_random_against_seed_loops(shape: tuple[int, int, int], density: float) -> None:
    rng = np.random.default_rng(hash((shape, density)) % 2**32)
    features = _random_features(rng, shape, density)
    _assert_matches_seed(features, k=None)
    _assert_matches_seed(features, k=shape[2])


@pytest.mark.parametrize("seed", range(3))
def test_topk_streams_against_seed_loops(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    b, t, d, k = 2, 50, 30, 4
    # persistent scores so that runs longer than one frame occur
    scores = np.cumsum(rng.normal(size=(b, t, d)), axis=1)
    idx = np.argsort(-scores, axis=-1)[..., :k]
    features = topk_to_active(idx, d).astype(np.float64)
    _assert_matches_seed(features, k=k)
    assert temporal_stability(features > 0, k=k).lifetime > 1.0


def test_runs_cut_by_boundaries_and_streams() -> None:
    active = np.zeros((2, 4, 1), dtype=bool)
    active[0, 2:, 0] = True  # ends at the last frame of stream 0 ...
    active[1, :3, 0] = True  # ... and stream 1 starts active: two runs, not one of length 5
    runs = activation_runs(active)
    np.testing.assert_array_equal(runs.length, [2, 3])
    np.testing.assert_array_equal(runs.batch, [0, 1])
    np.testing.assert_array_equal(runs.start, [2, 0])


def test_two_dimensional_input_is_one_stream() -> None:
    active = np.array([[1, 0, 1], [1, 1, 0], [0, 1, 0]], dtype=bool)
    res = temporal_stability(active)
    assert res.jaccard_per_step.shape == (1, 2)
    np.testing.assert_allclose(res.jaccard_per_step, [[1 / 3, 1 / 2]])
    np.testing.assert_array_equal(res.flips_per_step, [[2, 1]])
    np.testing.assert_allclose(res.turnover_per_step, [[1 / 2, 0.0]])


def test_empty_frames_conventions() -> None:
    active = np.zeros((1, 4, 3), dtype=bool)
    active[0, 3, 1] = True  # steps 0, 1 both empty, step 2 empty -> {1}
    res = temporal_stability(active)
    np.testing.assert_array_equal(res.jaccard_per_step, [[1.0, 1.0, 0.0]])
    assert res.jaccard == pytest.approx(2 / 3)
    skip = temporal_stability(active, empty_jaccard="skip")
    assert np.isnan(skip.jaccard_per_step[0, :2]).all() and skip.jaccard == 0.0
    assert math.isnan(temporal_stability(np.zeros((1, 3, 2), dtype=bool), empty_jaccard="skip").jaccard)
    # turnover: steps 0 and 1 end in an empty frame, undefined; step 2 brings {1}, new
    np.testing.assert_array_equal(res.turnover_per_step, [[np.nan, np.nan, 1.0]])  # k=None: 1 / |{1}|
    assert res.turnover == 1.0
    with_k = temporal_stability(active, k=2)
    np.testing.assert_array_equal(with_k.turnover_per_step, [[np.nan, np.nan, 0.5]])
    assert with_k.turnover == 0.5
    nothing = temporal_stability(np.zeros((2, 3, 4), dtype=bool))
    assert math.isnan(nothing.lifetime) and math.isnan(nothing.transient_ratio) and nothing.num_runs == 0


def test_turnover_skips_steps_into_an_empty_frame() -> None:
    # frames {1, 2}, {2, 3}, {}, {3}: steps 0 and 2 bring one new feature each, step 1 is undefined
    active = np.zeros((1, 4, 5), dtype=bool)
    active[0, 0, [1, 2]] = active[0, 1, [2, 3]] = active[0, 3, 3] = True
    with_k = temporal_stability(active, k=2)
    np.testing.assert_array_equal(with_k.turnover_per_step, [[0.5, np.nan, 0.5]])
    assert with_k.turnover == 0.5  # mean of the two defined steps, not (0.5 + 0 + 0.5) / 3
    no_k = temporal_stability(active)
    np.testing.assert_array_equal(no_k.turnover_per_step, [[0.5, np.nan, 1.0]])  # 1/2, -, 1/1
    assert no_k.turnover == 0.75
    # Jaccard with "skip" leaves out only steps where both frames are empty: none here
    assert not np.isnan(temporal_stability(active, empty_jaccard="skip").jaccard_per_step).any()
    # steps pool over streams: stream 1 adds one undefined step and one defined (all new, 1/2)
    two = np.zeros((2, 4, 5), dtype=bool)
    two[0] = active[0]
    two[1, 1, 4] = True  # frames {}, {4}, {}, {}
    both = temporal_stability(two, k=2)
    np.testing.assert_array_equal(both.turnover_per_step, [[0.5, np.nan, 0.5], [0.5, np.nan, np.nan]])
    assert both.turnover == 0.5


def test_turnover_with_every_step_undefined_is_nan() -> None:
    # every frame t+1 empty (frame 0 alone may be active): no defined step, the mean is NaN
    active = np.zeros((2, 3, 4), dtype=bool)
    active[:, 0, 1] = True
    for k in (None, 3):
        res = temporal_stability(active, k=k)
        assert np.isnan(res.turnover_per_step).all() and math.isnan(res.turnover)
        assert res.flips == 0.5 and res.num_runs == 2  # the other metrics are unaffected
    assert math.isnan(temporal_stability(np.zeros((1, 2, 3), dtype=bool)).turnover)


def test_results_are_read_only() -> None:
    res = temporal_stability(np.ones((1, 3, 2), dtype=bool))
    with pytest.raises(ValueError):
        res.flips_per_step[0, 0] = 5
    with pytest.raises(ValueError):
        activation_runs(np.ones((1, 3, 2), dtype=bool)).length[0] = 5


def test_validation_names_the_argument() -> None:
    with pytest.raises(ValueError, match="active must be a boolean"):
        temporal_stability(np.ones((1, 3, 2)))
    with pytest.raises(ValueError, match="active must have shape"):
        temporal_stability(np.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="T >= 2"):
        temporal_stability(np.ones((2, 1, 3), dtype=bool))
    with pytest.raises(ValueError, match="active needs at least one"):
        temporal_stability(np.ones((0, 3, 3), dtype=bool))
    with pytest.raises(ValueError, match="k=2 is smaller"):
        temporal_stability(np.ones((1, 3, 3), dtype=bool), k=2)
    with pytest.raises(ValueError, match="k must be"):
        temporal_stability(np.ones((1, 3, 3), dtype=bool), k=0)
    with pytest.raises(ValueError, match="lifetime_convention"):
        temporal_stability(np.ones((1, 3, 3), dtype=bool), lifetime_convention="mean")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty_jaccard"):
        temporal_stability(np.ones((1, 3, 3), dtype=bool), empty_jaccard="zero")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="indices must lie"):
        topk_to_active([[0, 4]], 4)
    with pytest.raises(ValueError, match="distinct"):
        topk_to_active([[1, 2, 1]], 4)
    with pytest.raises(ValueError, match="integer dtype"):
        topk_to_active([[1.0, 2.0]], 4)
    with pytest.raises(ValueError, match="num_features"):
        topk_to_active([[1]], 0)
    with pytest.raises(ValueError, match="jaccard must lie"):
        flips_jaccard_bound(1.5, 4)


# --------------------------------------------------------------------------------------------------
# properties

shapes = st.tuples(st.integers(1, 3), st.integers(2, 12), st.integers(1, 9))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_property_ranges_and_seed_loops(data: st.DataObject) -> None:
    shape = data.draw(shapes)
    active = data.draw(arrays(np.bool_, shape))
    res = temporal_stability(active)
    _, t, d = shape
    assert 0.0 <= res.jaccard <= 1.0
    assert np.all((res.jaccard_per_step >= 0) & (res.jaccard_per_step <= 1))
    next_empty = ~active[:, 1:].any(axis=-1)
    np.testing.assert_array_equal(np.isnan(res.turnover_per_step), next_empty)
    defined = res.turnover_per_step[~next_empty]
    assert np.all((defined >= 0) & (defined <= 1))
    assert math.isnan(res.turnover) if next_empty.all() else 0.0 <= res.turnover <= 1.0
    assert np.all((res.flips_per_step >= 0) & (res.flips_per_step <= d))
    if res.num_runs:
        assert 1.0 <= res.lifetime <= t and 0.0 <= res.transient_ratio <= 1.0
        assert 1.0 <= temporal_stability(active, lifetime_convention="per_feature").lifetime <= t
    assert int(activation_runs(active).length.sum()) == int(active.sum())
    _assert_matches_seed(active.astype(np.float64), k=None)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_property_identical_frames(data: st.DataObject) -> None:
    b, t, d = data.draw(shapes)
    frame = data.draw(arrays(np.bool_, (b, 1, d)))
    active = np.repeat(frame, t, axis=1)
    res = temporal_stability(active)
    np.testing.assert_array_equal(res.jaccard_per_step, 1.0)  # also for empty frames (default "one")
    assert res.jaccard == 1.0 and res.flips == 0.0
    if frame.any():  # steps into an empty frame are undefined, the others turn over nothing
        assert res.turnover == 0.0
        np.testing.assert_array_equal(np.isnan(res.turnover_per_step[:, 0]), ~frame.any(axis=(1, 2)))
    else:
        assert math.isnan(res.turnover) and np.isnan(res.turnover_per_step).all()
    if frame.any():
        assert res.lifetime == t and res.transient_ratio == 0.0
