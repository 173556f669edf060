"""Detection metrics (seed 002 "Core Metrics", seed 000 §6): FAR/FRR, EER, AUC, F1, balanced accuracy."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.interpolate import interp1d
from scipy.optimize import brentq
from sklearn.metrics import (
    balanced_accuracy_score,
    det_curve,
    f1_score,
    roc_auc_score,
    roc_curve,
)

from streambench.protocols.metrics.detection import (
    det_curve_points,
    detection_metrics,
    eer,
    far_frr,
    roc_auc,
    roc_curve_points,
)

# --------------------------------------------------------------------------------------------------
# references written out in the test: every distinct score value as a threshold, exact fractions


def brute_points(labels: np.ndarray, scores: np.ndarray) -> list[tuple[float, Fraction, Fraction]]:
    """(threshold, FAR, FRR) for every distinct score, ascending — the loop of seed 000 §6 step 2."""
    y = labels.astype(bool)
    n_real, n_fake = int(y.sum()), int((~y).sum())
    points = []
    for thr in np.unique(scores):
        accepted = scores >= thr
        far = Fraction(int((accepted & ~y).sum()), n_fake)
        frr = Fraction(int((~accepted & y).sum()), n_real)
        points.append((float(thr), far, frr))
    return points


def brute_nearest_eer(labels: np.ndarray, scores: np.ndarray) -> tuple[Fraction, float, Fraction, Fraction]:
    """Seed 000 §6 step 3: the threshold minimising |FAR - FRR| (first = lowest on ties)."""
    best: tuple[Fraction, float, Fraction, Fraction] | None = None
    for thr, far, frr in brute_points(labels, scores):
        if best is None or abs(far - frr) < best[0]:
            best = (abs(far - frr), thr, far, frr)
    assert best is not None
    _, thr, far, frr = best
    return (far + frr) / 2, thr, far, frr


def random_case(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Imbalanced labels, overlapping classes, heavy ties (scores rounded to one or two decimals)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 400))
    labels = (rng.random(n) < rng.uniform(0.15, 0.85)).astype(np.int64)
    labels[:2] = [0, 1]
    scores = np.round(rng.normal(size=n) + rng.uniform(0.2, 1.5) * labels, int(rng.integers(1, 3)))
    return labels, scores


SEEDS = range(25)


# --------------------------------------------------------------------------------------------------
# worked examples of the seeds


def seed000_example(n_real: int) -> tuple[np.ndarray, np.ndarray]:
    """10000 spoofs and ``n_real`` bona fide, 294 of each on the wrong side of 0.85."""
    fake = np.r_[np.full(10_000 - 294, 0.10), np.full(294, 0.85)]  # 294 accepted at 0.85
    real = np.r_[np.full(294, 0.80), np.full(n_real - 294, 0.95)]  # 294 rejected at 0.85
    labels = np.r_[np.zeros(fake.size, np.int8), np.ones(real.size, np.int8)]
    return labels, np.r_[fake, real]


def test_seed000_example_counts_at_085() -> None:
    # seed 000 §6 "示例计算", threshold 0.85: FAR = 294 / 10000, FRR = 294 / 1000. The seed prints
    # 2.94 % for both; 294 / 1000 is 29.4 % (an arithmetic slip of the seed), which is what we get.
    labels, scores = seed000_example(n_real=1000)
    assert far_frr(labels, scores, 0.85) == (0.0294, 0.294)


def test_seed000_example_eer_is_294_in_10000() -> None:
    # the consistent version of the example (as many bona fide as spoofs): EER = 2.94 % at 0.85
    labels, scores = seed000_example(n_real=10_000)
    for method in ("nearest", "interpolated"):
        res = eer(labels, scores, method=method)  # type: ignore[arg-type]
        assert (res.eer, res.threshold, res.far, res.frr) == (0.0294, 0.85, 0.0294, 0.0294)


def test_far_and_frr_are_monotone_in_the_threshold() -> None:
    # seed 000 §6 also lists threshold 0.5 -> FAR 1 %, FRR 50 % and 0.9 -> FAR 20 %, FRR 5 %, which no
    # data can produce: raising the threshold never raises FAR nor lowers FRR.
    for seed in SEEDS:
        pts = det_curve_points(*random_case(seed))
        assert np.all(np.diff(pts.far) <= 0)
        assert np.all(np.diff(pts.frr) >= 0)
        assert np.all(np.diff(pts.far - pts.frr) < 0)  # distinct thresholds: strictly decreasing gap


# --------------------------------------------------------------------------------------------------
# hand-computed cases


# fakes 0.1 0.2 0.6, reals 0.6 0.6 0.9. Thresholds 0.1 0.2 0.6 0.9 give FAR 1 2/3 1/3 0 and
# FRR 0 0 0 2/3. A row-by-row sweep would also visit "fake 0.6 rejected, reals 0.6 accepted"
# (FAR 0, FRR 0): unreachable with score >= threshold, and it must not yield EER 0.
TIES_LABELS = np.array([0, 0, 1, 1, 0, 1])
TIES_SCORES = np.array([0.2, 0.6, 0.6, 0.6, 0.1, 0.9])


def test_tied_scores_form_one_operating_point() -> None:
    res = eer(TIES_LABELS, TIES_SCORES)
    assert (res.threshold, res.far, res.frr) == (0.6, 1 / 3, 0.0)
    assert res.eer == pytest.approx(1 / 6, abs=1e-15)
    assert far_frr(TIES_LABELS, TIES_SCORES, res.threshold) == (res.far, res.frr)


def test_interpolated_hand_case() -> None:
    # between 0.6 (FAR 1/3, FRR 0) and 0.9 (FAR 0, FRR 2/3): the lines cross at weight 1/3, value 2/9
    res = eer(TIES_LABELS, TIES_SCORES, method="interpolated")
    assert res.eer == pytest.approx(2 / 9, abs=1e-15)
    assert res.far == pytest.approx(2 / 9, abs=1e-15) and res.frr == pytest.approx(2 / 9, abs=1e-15)
    assert res.threshold == pytest.approx(0.7, abs=1e-15)
    assert res.method == "interpolated"


def test_auc_hand_case_counts_ties_half() -> None:
    # real 0.6 beats fakes 0.1, 0.2 and ties 0.6 (twice: 2.5 each); real 0.9 beats all three -> 8 / 9
    assert roc_auc(TIES_LABELS, TIES_SCORES) == pytest.approx(8 / 9, abs=1e-15)


def test_detection_metrics_hand_case() -> None:
    m = detection_metrics(TIES_LABELS, TIES_SCORES)  # at the EER threshold 0.6: TP 3, FP 1, FN 0, TN 2
    assert (m.threshold, m.eer_threshold, m.far, m.frr, m.n_real, m.n_fake) == (0.6, 0.6, 1 / 3, 0.0, 3, 3)
    assert m.f1 == pytest.approx(6 / 7, abs=1e-15)
    assert m.balanced_accuracy == pytest.approx(5 / 6, abs=1e-15)
    assert m.auc == pytest.approx(8 / 9, abs=1e-15)
    at = detection_metrics(TIES_LABELS, TIES_SCORES, threshold=0.65)  # TP 1, FP 0, FN 2, TN 3
    assert (at.far, at.frr, at.eer) == (0.0, 2 / 3, m.eer)
    assert at.f1 == pytest.approx(0.5, abs=1e-15)
    assert at.balanced_accuracy == pytest.approx(2 / 3, abs=1e-15)


def test_equally_near_thresholds_report_the_lower_one() -> None:
    # fakes 0.1 0.2, reals 0.2 0.3: threshold 0.2 gives FAR 1/2, FRR 0 and 0.3 gives FAR 0, FRR 1/2
    res = eer([0, 0, 1, 1], [0.1, 0.2, 0.2, 0.3])
    assert (res.eer, res.threshold, res.far, res.frr) == (0.25, 0.2, 0.5, 0.0)
    inter = eer([0, 0, 1, 1], [0.1, 0.2, 0.2, 0.3], method="interpolated")
    assert (inter.eer, inter.threshold) == (0.25, 0.25)


def test_perfect_and_inverted_separation() -> None:
    good = eer([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9])
    assert (good.eer, good.threshold, good.far, good.frr) == (0.0, 0.8, 0.0, 0.0)
    assert roc_auc([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0
    bad = eer([1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9])
    assert (bad.eer, bad.threshold, bad.far, bad.frr) == (1.0, 0.8, 1.0, 1.0)
    assert roc_auc([1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9]) == 0.0


def test_all_scores_tied() -> None:
    # one operating point (accept all: FAR 1, FRR 0); interpolation runs towards reject-all (0, 1)
    near = eer([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5])
    assert (near.eer, near.threshold, near.far, near.frr) == (0.5, 0.5, 1.0, 0.0)
    inter = eer([0, 1, 0, 1], [0.5, 0.5, 0.5, 0.5], method="interpolated")
    assert inter.eer == 0.5 and 0.5 <= inter.threshold <= np.nextafter(0.5, 1.0)
    assert roc_auc([0, 1], [0.5, 0.5]) == 0.5


def test_threshold_equal_to_a_score_accepts_it() -> None:
    assert far_frr([0, 1], [0.5, 0.5], 0.5) == (1.0, 0.0)
    assert far_frr([0, 1], [0.5, 0.5], np.nextafter(0.5, 1.0)) == (0.0, 1.0)
    assert far_frr([0, 1], [0.2, 0.7], np.inf) == (0.0, 1.0)
    assert far_frr([0, 1], [0.2, 0.7], -np.inf) == (1.0, 0.0)


def test_bool_float_and_int8_labels_agree() -> None:
    y = np.array([0, 1, 1, 0, 1])
    s = np.array([0.3, 0.4, 0.9, 0.5, 0.5], dtype=np.float32)
    expected = eer(y, s)
    for labels in (y.astype(bool), y.astype(np.float64), y.astype(np.int8)):
        assert eer(labels, s) == expected


# --------------------------------------------------------------------------------------------------
# against scikit-learn and the brute-force references, random inputs with ties


@pytest.mark.parametrize("seed", SEEDS)
def test_auc_matches_sklearn(seed: int) -> None:
    labels, scores = random_case(seed)
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_roc_points_match_sklearn_roc_curve(seed: int) -> None:
    labels, scores = random_case(seed)
    fpr, tpr, thr = roc_curve(labels, scores, drop_intermediate=False)
    pts = roc_curve_points(labels, scores)
    np.testing.assert_array_equal(pts.thresholds, thr)
    np.testing.assert_allclose(pts.far, fpr, rtol=0, atol=1e-15)
    np.testing.assert_allclose(pts.frr, 1 - tpr, rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed", SEEDS)
def test_det_points_match_brute_force_and_sklearn_det_curve(seed: int) -> None:
    labels, scores = random_case(seed)
    pts = det_curve_points(labels, scores)
    ref = brute_points(labels, scores)
    np.testing.assert_array_equal(pts.thresholds, [t for t, _, _ in ref])
    np.testing.assert_array_equal(pts.far, [float(far) for _, far, _ in ref])
    np.testing.assert_array_equal(pts.frr, [float(frr) for _, _, frr in ref])
    fpr, fnr, thr = det_curve(labels, scores)  # the same points, trimmed at both ends ...
    finite = np.isfinite(thr)  # ... possibly ending with reject-everything at +inf
    np.testing.assert_array_equal(fpr[~finite], 0.0)
    np.testing.assert_array_equal(fnr[~finite], 1.0)
    fpr, fnr, thr = fpr[finite], fnr[finite], thr[finite]
    idx = np.searchsorted(pts.thresholds, thr)
    np.testing.assert_array_equal(pts.thresholds[idx], thr)
    np.testing.assert_allclose(pts.far[idx], fpr, rtol=0, atol=1e-15)
    np.testing.assert_allclose(pts.frr[idx], fnr, rtol=0, atol=1e-15)


@pytest.mark.parametrize("seed", SEEDS)
def test_nearest_eer_matches_brute_force(seed: int) -> None:
    labels, scores = random_case(seed)
    value, thr, far, frr = brute_nearest_eer(labels, scores)
    res = eer(labels, scores)
    assert (res.threshold, res.far, res.frr, res.method) == (thr, float(far), float(frr), "nearest")
    assert res.eer == pytest.approx(float(value), rel=1e-14)
    assert far_frr(labels, scores, res.threshold) == (res.far, res.frr)


@pytest.mark.parametrize("seed", SEEDS)
def test_far_frr_matches_brute_force(seed: int) -> None:
    labels, scores = random_case(seed)
    for thr, far, frr in brute_points(labels, scores)[::7]:
        assert far_frr(labels, scores, thr) == (float(far), float(frr))
        between = np.nextafter(thr, -np.inf)  # just below a score: same point as that score
        assert far_frr(labels, scores, between) == (float(far), float(frr))


@pytest.mark.parametrize("seed", SEEDS)
def test_interpolated_eer_is_bracketed_and_matches_the_roc_recipe(seed: int) -> None:
    labels, scores = random_case(seed)
    res = eer(labels, scores, method="interpolated")
    points = [(t, float(a), float(r)) for t, a, r in brute_points(labels, scores)]
    points.append((np.inf, 0.0, 1.0))  # reject everything
    k = max(i for i, (_, a, r) in enumerate(points) if a >= r)
    (t1, far1, frr1), (t2, far2, frr2) = points[k], points[k + 1]
    tol = 1e-12
    assert far2 - tol <= res.eer <= far1 + tol and frr1 - tol <= res.eer <= frr2 + tol
    assert res.far == pytest.approx(res.eer, abs=tol) and res.frr == pytest.approx(res.eer, abs=tol)
    assert t1 <= res.threshold <= t2
    nearest = eer(labels, scores)
    assert nearest.threshold in (t1, t2)
    fpr, tpr, _ = roc_curve(labels, scores)
    recipe = brentq(lambda x: 1.0 - x - interp1d(fpr, tpr)(x), 0.0, 1.0)
    assert res.eer == pytest.approx(recipe, abs=1e-9)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("threshold", [None, 0.0, 0.5, 1.25])
def test_detection_metrics_match_sklearn(seed: int, threshold: float | None) -> None:
    labels, scores = random_case(seed)
    m = detection_metrics(labels, scores, threshold=threshold)
    e = eer(labels, scores)
    assert (m.eer, m.eer_threshold) == (e.eer, e.threshold)
    assert m.threshold == (e.threshold if threshold is None else threshold)
    assert (m.far, m.frr) == far_frr(labels, scores, m.threshold)
    pred = (scores >= m.threshold).astype(np.int64)
    assert m.f1 == pytest.approx(f1_score(labels, pred, pos_label=1, zero_division=0), abs=1e-15)
    assert m.balanced_accuracy == pytest.approx(balanced_accuracy_score(labels, pred), abs=1e-15)
    assert m.auc == pytest.approx(roc_auc_score(labels, scores), rel=1e-12)


def test_detection_metrics_interpolated_reports_actual_rates() -> None:
    m = detection_metrics(TIES_LABELS, TIES_SCORES, method="interpolated")
    assert m.eer == pytest.approx(2 / 9) and m.eer_method == "interpolated"
    assert m.threshold == pytest.approx(0.7)
    assert (m.far, m.frr) == far_frr(TIES_LABELS, TIES_SCORES, m.threshold) == (0.0, 2 / 3)


# --------------------------------------------------------------------------------------------------
# properties


TRANSFORMS: list[Callable[[np.ndarray], np.ndarray]] = [lambda x: 3 * x + 1, np.exp, lambda x: x**3]

cases = st.integers(min_value=2, max_value=60).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n, max_size=n).filter(lambda y: 0 < sum(y) < len(y)),
        st.lists(st.integers(-40, 40), min_size=n, max_size=n),
    )
)


@settings(max_examples=200, deadline=None)
@given(cases, st.sampled_from(range(len(TRANSFORMS))))
def test_eer_and_auc_invariant_under_increasing_transforms(case: tuple[list[int], list[int]], t: int) -> None:
    labels = np.array(case[0])
    scores = np.array(case[1]) / 8  # exact binary fractions: the transforms keep every score distinct
    moved = TRANSFORMS[t](scores)
    near, near_moved = eer(labels, scores), eer(labels, moved)
    assert (near.eer, near.far, near.frr) == (near_moved.eer, near_moved.far, near_moved.frr)
    assert near_moved.threshold == moved[scores == near.threshold][0]
    assert eer(labels, scores, "interpolated").eer == eer(labels, moved, "interpolated").eer
    assert roc_auc(labels, scores) == roc_auc(labels, moved)


@settings(max_examples=200, deadline=None)
@given(cases)
def test_auc_bounds_and_symmetry(case: tuple[list[int], list[int]]) -> None:
    labels, scores = np.array(case[0]), np.array(case[1], dtype=np.float64)
    auc = roc_auc(labels, scores)
    assert 0.0 <= auc <= 1.0
    assert roc_auc(labels, -scores) == pytest.approx(1 - auc, abs=1e-15)
    assert roc_auc(1 - labels, scores) == pytest.approx(1 - auc, abs=1e-15)
    res = eer(labels, scores)
    assert 0.0 <= res.eer <= 1.0 and abs(res.far - res.frr) <= 1.0


# --------------------------------------------------------------------------------------------------
# validation


FUNCS: list[Callable[..., object]] = [
    eer,
    roc_auc,
    det_curve_points,
    roc_curve_points,
    detection_metrics,
    lambda y, s: far_frr(y, s, 0.5),
]


@pytest.mark.parametrize("func", FUNCS)
@pytest.mark.parametrize(
    ("labels", "scores", "message"),
    [
        ([], [], "labels is empty: there are no samples"),
        ([1, 1, 1], [0.1, 0.2, 0.3], r"single class: only real \(1\) samples, no fake \(0\)"),
        ([0, 0], [0.1, 0.2], r"single class: only fake \(0\) samples, no real \(1\)"),
        ([0, 1, 1], [0.1, np.nan, 0.3], r"scores contains NaN \(1 value\(s\), first at index 1\)"),
        ([0, 1, 1], [0.1, 0.2, -np.inf], r"scores contains Inf \(1 value\(s\), first at index 2\)"),
        ([0, 1, 2], [0.1, 0.2, 0.3], "labels must contain only 0 and 1; found 2 at index 2"),
        ([0, 1, 1], [0.1, 0.2], r"scores has shape \(2,\), expected the shape of labels \(3,\)"),
        ([[0, 1]], [[0.1, 0.2]], "labels must be a 1-D array"),
        ([0, 1], ["a", "b"], "scores must be real numbers"),
    ],
)
def test_invalid_inputs_raise(func: Callable[..., object], labels: list, scores: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        func(labels, scores)


def test_invalid_method_and_threshold() -> None:
    with pytest.raises(ValueError, match="method must be 'nearest' or 'interpolated'"):
        eer([0, 1], [0.1, 0.2], method="linear")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold is NaN"):
        far_frr([0, 1], [0.1, 0.2], float("nan"))
    with pytest.raises(ValueError, match="threshold must be a real number"):
        detection_metrics([0, 1], [0.1, 0.2], threshold="0.5")  # type: ignore[arg-type]
