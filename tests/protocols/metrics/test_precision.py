"""Average precision and event-wise mAP (seed 004 §6.2.1 (2)): VOC-11 (default), all-point, COCO-101, step."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from streambench.protocols.metrics.precision import EventMAP, average_precision, event_map

INTERPOLATIONS: tuple[Any, ...] = ("voc11", "all_points", "coco101", "step")


# --------------------------------------------------------------------------------------------------
# references


def seed_pseudo_code_ap(gt: np.ndarray, scores: np.ndarray, interpolation: str) -> float:
    """Seed 004 §6.2.1 (2) literally: sweep the thresholds, count TP/FP/FN, then integrate.

    Thresholds are the distinct scores (cut ``score >= t``), so tied units form one point. Exact
    arithmetic with fractions, recall levels j/L as exact fractions.
    """
    points = []  # (recall, precision), by decreasing threshold
    for t in sorted(set(scores.tolist()), reverse=True):
        pred = scores >= t
        tp = int(np.sum(pred & gt))
        fp = int(np.sum(pred & ~gt))
        fn = int(np.sum(~pred & gt))
        points.append((Fraction(tp, tp + fn), Fraction(tp, tp + fp)))
    if interpolation == "step":
        prev, area = Fraction(0), Fraction(0)
        for r, p in points:
            area += (r - prev) * p
            prev = r
        return float(area)
    if interpolation in ("voc11", "coco101"):
        n = 10 if interpolation == "voc11" else 100
        best = [max([p for r, p in points if r >= Fraction(j, n)], default=Fraction(0)) for j in range(n + 1)]
        return float(sum(best) / (n + 1))
    area = Fraction(0)
    prev = Fraction(0)
    for i, (r, _) in enumerate(points):
        area += (r - prev) * max(p for _, p in points[i:])
        prev = r
    return float(area)


def voc_devkit_ap(gt: np.ndarray, scores: np.ndarray, use_07_metric: bool) -> float:
    """The PASCAL VOC devkit's ``voc_ap`` on the detections ranked one by one (valid without ties).

    The only change: the 11 levels are ``np.arange(11) / 10`` (exact decimals) instead of the devkit's
    ``np.arange(0., 1.1, 0.1)``, whose 0.3, 0.6 and 0.7 are a few ulps too high.
    """
    order = np.argsort(-scores, kind="stable")
    tp = np.cumsum(gt[order])
    fp = np.cumsum(~gt[order])
    rec = tp / gt.sum()
    prec = tp / np.maximum(tp + fp, np.finfo(np.float64).eps)
    if use_07_metric:
        ap = 0.0
        for t in np.arange(11) / 10:
            p = 0.0 if np.sum(rec >= t) == 0 else float(np.max(prec[rec >= t]))
            ap += p / 11.0
        return ap
    mrec = np.concatenate(([0.0], rec, [1.0]))
    mpre = np.concatenate(([0.0], prec, [0.0]))
    for i in range(mpre.size - 1, 0, -1):
        mpre[i - 1] = max(mpre[i - 1], mpre[i])
    steps = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[steps + 1] - mrec[steps]) * mpre[steps + 1]))


def random_case(rng: np.random.Generator, ties: bool) -> tuple[np.ndarray, np.ndarray]:
    n = int(rng.integers(1, 60))
    gt = rng.random(n) < rng.uniform(0.1, 0.7)
    gt[rng.integers(n)] = True
    scores = rng.integers(0, 5, n).astype(float) if ties else rng.random(n)
    return gt, scores


# --------------------------------------------------------------------------------------------------
# worked examples


def test_hand_computed_curve() -> None:
    # ranked: + - + - +  -> points (R, P): (1/3, 1) (1/3, 1/2) (2/3, 2/3) (2/3, 1/2) (1, 3/5)
    gt = np.array([1, 0, 1, 0, 1])
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    # VOC-11: levels 0..0.3 -> 1; 0.4..0.6 -> 2/3; 0.7..1.0 -> 3/5
    assert average_precision(gt, scores) == pytest.approx((4 * 1 + 3 * 2 / 3 + 4 * 3 / 5) / 11, abs=1e-15)
    assert average_precision(gt, scores, "all_points") == pytest.approx(34 / 45, abs=1e-15)
    assert average_precision(gt, scores, "step") == pytest.approx(34 / 45, abs=1e-15)
    coco = (34 * 1 + 33 * 2 / 3 + 34 * 3 / 5) / 101  # levels 0..0.33 | 0.34..0.66 | 0.67..1
    assert average_precision(gt, scores, "coco101") == pytest.approx(coco, abs=1e-15)


def test_interpolated_and_step_differ() -> None:
    # ranked: - + +  -> (R, P): (0, 0) (1/2, 1/2) (1, 2/3); interpolation lifts 1/2 to 2/3
    gt, scores = np.array([0, 1, 1]), np.array([0.9, 0.8, 0.7])
    assert average_precision(gt, scores, "step") == pytest.approx(7 / 12, abs=1e-15)
    for interp in ("voc11", "all_points", "coco101"):
        assert average_precision(gt, scores, interp) == pytest.approx(2 / 3, abs=1e-15)


def test_recall_levels_are_exact() -> None:
    # 10 positives, 3 of them first: recall 0.3 exactly, with precision 1; the rest come after 20
    # negatives (interpolated precision 10/30 for every level above 0.3). With the devkit's
    # np.arange(0, 1.1, 0.1) the level 0.30000000000000004 would miss the recall 0.3.
    gt = np.array([1] * 3 + [0] * 20 + [1] * 7)
    scores = -np.arange(gt.size, dtype=float)
    assert average_precision(gt, scores) == pytest.approx((4 * 1 + 7 * (10 / 30)) / 11, abs=1e-15)


def test_seed_pseudo_code_map_is_mean_of_class_aps() -> None:
    rng = np.random.default_rng(4)
    gt = rng.random((40, 5)) < 0.3
    gt[0] = True
    scores = rng.integers(0, 8, size=(40, 5)).astype(float)
    for interp in INTERPOLATIONS:
        res = event_map(gt, scores, interp)
        per_class = [seed_pseudo_code_ap(gt[:, c], scores[:, c], interp) for c in range(5)]
        np.testing.assert_allclose(res.ap, per_class, rtol=0, atol=1e-12)
        assert res.mean_ap == pytest.approx(np.mean(per_class), abs=1e-12)
        assert res.interpolation == interp and res.num_excluded == 0 and res.num_evaluated == 5


# --------------------------------------------------------------------------------------------------
# independent references on random inputs


@pytest.mark.parametrize("ties", [False, True])
def test_step_equals_sklearn(ties: bool) -> None:
    rng = np.random.default_rng(10 + ties)
    for _ in range(200):
        gt, scores = random_case(rng, ties)
        assert average_precision(gt, scores, "step") == pytest.approx(
            average_precision_score(gt, scores), abs=1e-12
        )


def test_voc11_and_all_points_equal_the_devkit_without_ties() -> None:
    rng = np.random.default_rng(20)
    for _ in range(200):
        gt, scores = random_case(rng, ties=False)
        voc07 = voc_devkit_ap(gt, scores, True)
        assert average_precision(gt, scores, "voc11") == pytest.approx(voc07, abs=1e-12)
        assert average_precision(gt, scores, "all_points") == pytest.approx(
            voc_devkit_ap(gt, scores, False), abs=1e-12
        )


@pytest.mark.parametrize("interpolation", INTERPOLATIONS)
def test_all_conventions_equal_threshold_sweep_with_ties(interpolation: str) -> None:
    rng = np.random.default_rng(30)
    for _ in range(100):
        gt, scores = random_case(rng, ties=True)
        assert average_precision(gt, scores, interpolation) == pytest.approx(  # type: ignore[arg-type]
            seed_pseudo_code_ap(gt, scores, interpolation), abs=1e-12
        )


# --------------------------------------------------------------------------------------------------
# ties, edge cases


def test_ties_form_one_point_whatever_the_order() -> None:
    # one positive and one negative with equal scores: a single point (R=1, P=1/2). Ranking them one
    # by one (the devkits) would give 1.0 or 0.5 depending on the input order.
    for gt in ([1, 0], [0, 1]):
        for interp in INTERPOLATIONS:
            assert average_precision(gt, [0.5, 0.5], interp) == 0.5


def test_perfect_and_worst_rankings() -> None:
    gt = np.array([1, 1, 0, 0, 0])
    for interp in INTERPOLATIONS:
        assert average_precision(gt, [5, 4, 3, 2, 1], interp) == 1.0
    # positives last: (R, P) = (1/2, 1/4), (1, 2/5)
    assert average_precision(gt, [1, 2, 3, 4, 5], "all_points") == pytest.approx(0.4)
    assert average_precision(gt, [1, 2, 3, 4, 5], "step") == pytest.approx(0.5 * 0.25 + 0.5 * 0.4)


def test_class_without_positives_is_excluded_and_counted() -> None:
    gt = np.array([[1, 0, 0], [0, 0, 1], [1, 0, 0]])
    scores = np.array([[0.9, 0.1, 0.2], [0.8, 0.7, 0.9], [0.1, 0.3, 0.5]])
    res = event_map(gt, scores, "all_points")
    assert isinstance(res, EventMAP)
    np.testing.assert_array_equal(res.excluded, [1])
    assert res.num_excluded == 1 and res.num_evaluated == 2
    assert np.isnan(res.ap[1])
    ap0 = (1 + 2 / 3) / 2  # ranked: + - +
    np.testing.assert_allclose(res.ap[[0, 2]], [ap0, 1.0])
    assert res.mean_ap == pytest.approx((ap0 + 1.0) / 2)
    with pytest.raises(ValueError):
        res.ap[0] = 0.0  # read-only


def test_empty_input_excludes_every_class() -> None:
    res = event_map(np.zeros((0, 3), dtype=bool), np.zeros((0, 3)))
    assert np.isnan(res.mean_ap) and res.num_evaluated == 0
    np.testing.assert_array_equal(res.excluded, [0, 1, 2])
    with pytest.raises(ValueError, match="gt has no positive"):
        average_precision(np.zeros(0, dtype=bool), np.zeros(0))


def test_infinite_scores_are_ranked() -> None:
    assert average_precision([1, 0, 1], [np.inf, -np.inf, 0.0], "all_points") == 1.0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([1, 0], [0.5]), "scores has shape"),
        (([1, 2], [0.5, 0.4]), "gt must contain only 0/1"),
        (([1, 0], [0.5, np.nan]), "scores contains NaN"),
        (([[1, 0]], [[0.5, 0.4]]), "gt must be a 1-D"),
        (([1, 0], [[0.5, 0.4]]), "scores must be a 1-D"),
        (([0, 0], [0.5, 0.4]), "gt has no positive"),
    ],
)
def test_average_precision_validation(args: tuple[object, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        average_precision(*args)  # type: ignore[arg-type]


def test_event_map_validation() -> None:
    with pytest.raises(ValueError, match="interpolation must be one of"):
        event_map([[1]], [[0.5]], "voc07")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gt must be a 2-D"):
        event_map([1, 0], [0.5, 0.4])
    with pytest.raises(ValueError, match="scores has shape"):
        event_map([[1, 0]], [[0.5, 0.4, 0.1]])


# --------------------------------------------------------------------------------------------------
# properties


cases = st.integers(1, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.booleans(), min_size=n, max_size=n).filter(any),
        st.lists(st.integers(0, 6) | st.floats(-1e6, 1e6), min_size=n, max_size=n),
    )
)


@settings(max_examples=200, deadline=None)
@given(case=cases, interpolation=st.sampled_from(INTERPOLATIONS), seed=st.integers(0, 2**32 - 1))
def test_ap_in_unit_interval_and_order_invariant(
    case: tuple[list[bool], list[float]], interpolation: str, seed: int
) -> None:
    gt, scores = np.array(case[0]), np.array(case[1], dtype=float)
    ap = average_precision(gt, scores, interpolation)  # type: ignore[arg-type]
    assert 0.0 <= ap <= 1.0
    perm = np.random.default_rng(seed).permutation(gt.size)
    assert average_precision(gt[perm], scores[perm], interpolation) == pytest.approx(  # type: ignore[arg-type]
        ap, abs=1e-12
    )
