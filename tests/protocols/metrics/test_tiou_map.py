"""Temporal-IoU mAP (seed 004 §6.2.1 (3), ActivityNet's detection evaluation)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from streambench.protocols.metrics.tiou import ACTIVITYNET_TIOU_THRESHOLDS, Segments, TIoUMAP, tiou_map


def segs(rows: list[tuple[Any, ...]], with_score: bool = False) -> Segments:
    """``(video, start, end, label[, score])`` tuples as :class:`Segments`."""
    cols: list[Any] = list(zip(*rows, strict=True)) if rows else [[]] * (5 if with_score else 4)
    return Segments(
        video=np.array(cols[0]),
        start=np.array(cols[1], dtype=float),
        end=np.array(cols[2], dtype=float),
        label=np.array(cols[3], dtype=np.int64),
        score=np.array(cols[4], dtype=float) if with_score else None,
    )


def activitynet_reference(gt: Segments, pred: Segments, thresholds: np.ndarray) -> np.ndarray:
    """``compute_average_precision_detection`` of the ActivityNet evaluation, loop for loop, ``[T, C]``.

    Predictions in descending score (input order among ties); for each, references of its video sorted
    by descending tIoU (lower index first among equal tIoUs); AP by ``interpolated_prec_rec``.
    """
    assert pred.score is not None
    classes = np.unique(gt.label)
    ap = np.zeros((thresholds.size, classes.size))
    for ci, c in enumerate(classes):
        g_idx = np.flatnonzero(gt.label == c)
        p_idx = np.flatnonzero(pred.label == c)
        p_idx = p_idx[np.argsort(-pred.score[p_idx], kind="stable")]
        tp = np.zeros((thresholds.size, p_idx.size))
        fp = np.zeros((thresholds.size, p_idx.size))
        lock = -np.ones((thresholds.size, g_idx.size))
        for n, i in enumerate(p_idx):
            same = [j for j in range(g_idx.size) if gt.video[g_idx[j]] == pred.video[i]]
            if not same:
                fp[:, n] = 1
                continue
            tiou = []
            for j in same:
                gs, ge, ps, pe = gt.start[g_idx[j]], gt.end[g_idx[j]], pred.start[i], pred.end[i]
                inter = max(0.0, min(ge, pe) - max(gs, ps))
                tiou.append(inter / ((pe - ps) + (ge - gs) - inter))
            order = np.argsort(-np.array(tiou), kind="stable")
            for t, thr in enumerate(thresholds):
                for jj in order:
                    if tiou[jj] < thr:
                        fp[t, n] = 1
                        break
                    if lock[t, same[jj]] >= 0:
                        continue
                    tp[t, n] = 1
                    lock[t, same[jj]] = n
                    break
                if tp[t, n] == 0 and fp[t, n] == 0:
                    fp[t, n] = 1
        for t in range(thresholds.size):
            ctp, cfp = np.cumsum(tp[t]), np.cumsum(fp[t])
            rec, prec = ctp / g_idx.size, ctp / (ctp + cfp)
            mprec = np.hstack([[0], prec, [0]])
            mrec = np.hstack([[0], rec, [1]])
            for m in range(len(mprec) - 1)[::-1]:
                mprec[m] = max(mprec[m], mprec[m + 1])
            idx = np.where(mrec[1::] != mrec[0:-1])[0] + 1
            ap[t, ci] = np.sum((mrec[idx] - mrec[idx - 1]) * mprec[idx])
    return ap


# --------------------------------------------------------------------------------------------------
# hand-built cases


def test_duplicate_prediction_is_a_false_positive() -> None:
    gt = segs([(0, 0, 10, 0), (0, 20, 30, 0)])
    pred = segs([(0, 0, 10, 0, 0.9), (0, 0, 10, 0, 0.8), (0, 20, 30, 0, 0.7)], with_score=True)
    res = tiou_map(gt, pred)
    # ranked: TP, FP (the reference is taken), TP -> (R, P) = (1/2, 1), (1, 2/3)
    np.testing.assert_allclose(res.map_per_threshold, np.full(10, 0.5 + 0.5 * 2 / 3))
    assert res.mean_ap == pytest.approx(5 / 6)


def test_prediction_overlapping_two_references_takes_the_best_unmatched() -> None:
    # references A = [0, 9], B = [2, 10]; p1 = [0, 10]: tIoU 0.9 with A, 0.8 with B
    # p2 = [0, 9]: tIoU 1 with A, 7/10 with B (exactly 0.7)
    gt = segs([(0, 0, 9, 0), (0, 2, 10, 0)])
    pred = segs([(0, 0, 10, 0, 0.9), (0, 0, 9, 0, 0.8)], with_score=True)
    res = tiou_map(gt, pred, thresholds=[0.5, 0.7, 0.75, 0.95])
    # 0.5, 0.7: p1 -> A, p2 -> B (A is taken) -> AP 1
    # 0.75: p1 -> A, p2 FP (B only 0.7)           -> (1/2, 1)       -> AP 1/2
    # 0.95: p1 FP (A only 0.9), p2 -> A            -> (0, 0), (1/2, 1/2) -> AP 1/4
    np.testing.assert_allclose(res.map_per_threshold, [1.0, 1.0, 0.5, 0.25])
    assert res.mean_ap == pytest.approx(2.75 / 4)
    np.testing.assert_allclose(res.ap[:, 0], [1.0, 1.0, 0.5, 0.25])


def test_greedy_matching_follows_the_score() -> None:
    # the higher-scored p1 (tIoU 0.6) takes the reference before p2 (tIoU 1); p0 is in another video
    gt = segs([(0, 0, 10, 0)])
    pred = segs([(0, 0, 6, 0, 0.9), (0, 0, 10, 0, 0.8), (1, 0, 10, 0, 0.95)], with_score=True)
    res = tiou_map(gt, pred, thresholds=[0.5, 0.7])
    # 0.5: FP, TP, FP -> AP 1/2; 0.7: FP, FP, TP -> AP 1/3
    np.testing.assert_allclose(res.map_per_threshold, [0.5, 1 / 3])


def test_default_thresholds_are_exact_decimals() -> None:
    # tIoU exactly 0.7 ([0, 7] in [0, 10]) is a TP at the 0.7 threshold, not at 0.75
    res = tiou_map(segs([(0, 0, 10, 0)]), segs([(0, 0, 7, 0, 1.0)], with_score=True))
    np.testing.assert_array_equal(res.thresholds, ACTIVITYNET_TIOU_THRESHOLDS)
    np.testing.assert_array_equal(res.map_per_threshold, [1, 1, 1, 1, 1, 0, 0, 0, 0, 0])
    assert res.mean_ap == pytest.approx(0.5)


def test_classes_videos_and_exclusions() -> None:
    gt = segs([("v1", 0, 10, 3), ("v2", 0, 10, 5)])
    pred = segs(
        [("v1", 0, 10, 5, 0.9), ("v2", 0, 10, 5, 0.8), ("v1", 0, 10, 7, 0.7)],  # 7: no reference
        with_score=True,
    )
    res = tiou_map(gt, pred, thresholds=[0.5])
    assert isinstance(res, TIoUMAP)
    np.testing.assert_array_equal(res.classes, [3, 5])
    np.testing.assert_array_equal(res.excluded, [7])
    # class 3 has no prediction (AP 0); class 5: wrong video then right video -> (1, 1/2) -> 1/2
    np.testing.assert_allclose(res.ap, [[0.0, 0.5]])
    assert res.mean_ap == pytest.approx(0.25)


def test_tied_scores_form_one_point() -> None:
    gt = segs([(0, 0, 10, 0)])
    for order in ([0, 1], [1, 0]):
        rows = [(0, 0, 10, 0, 0.5), (0, 50, 60, 0, 0.5)]  # one TP, one FP, equal scores
        res = tiou_map(gt, segs([rows[i] for i in order], with_score=True), thresholds=[0.5])
        assert res.mean_ap == 0.5  # (R, P) = (1, 1/2) whatever the input order


def test_no_predictions() -> None:
    res = tiou_map(segs([(0, 0, 10, 0)]), segs([], with_score=True), thresholds=[0.5, 0.9])
    np.testing.assert_array_equal(res.map_per_threshold, [0.0, 0.0])


def test_other_interpolation_on_request() -> None:
    gt = segs([(0, 0, 10, 0), (0, 20, 30, 0)])
    pred = segs([(0, 40, 50, 0, 0.9), (0, 0, 10, 0, 0.8), (0, 20, 30, 0, 0.7)], with_score=True)
    # (R, P) = (0, 0), (1/2, 1/2), (1, 2/3)
    assert tiou_map(gt, pred, [0.5]).mean_ap == pytest.approx(2 / 3)
    assert tiou_map(gt, pred, [0.5], interpolation="step").mean_ap == pytest.approx(7 / 12)


# --------------------------------------------------------------------------------------------------
# reference on random inputs


@pytest.mark.parametrize("seed", range(6))
def test_equals_activitynet_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    thresholds = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    for _ in range(20):
        n_gt, n_pred = int(rng.integers(1, 30)), int(rng.integers(0, 80))
        start = rng.random(n_gt) * 10
        end = start + rng.random(n_gt) * 5 + 0.1
        gt = Segments(rng.integers(0, 4, n_gt), start, end, rng.integers(0, 4, n_gt))
        pstart = rng.random(n_pred) * 10
        pred = Segments(
            rng.integers(0, 4, n_pred),
            pstart,
            pstart + rng.random(n_pred) * 5 + 0.1,
            rng.integers(0, 5, n_pred),
            rng.random(n_pred),
        )
        res = tiou_map(gt, pred, thresholds)
        expected = activitynet_reference(gt, pred, thresholds)
        np.testing.assert_allclose(res.ap, expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(res.map_per_threshold, expected.mean(axis=1), rtol=0, atol=1e-12)
        assert res.mean_ap == pytest.approx(expected.mean(), abs=1e-12)


# --------------------------------------------------------------------------------------------------
# validation


def test_segments_validation() -> None:
    with pytest.raises(ValueError, match="end <= start"):
        segs([(0, 5, 5, 0)])
    with pytest.raises(ValueError, match="start has 1 entries, expected 2"):
        Segments(np.array([0, 1]), np.array([0.0]), np.array([1.0, 2.0]), np.array([0, 0]))
    with pytest.raises(ValueError, match="label must hold integer"):
        Segments(np.array([0]), np.array([0.0]), np.array([1.0]), np.array([0.5]))
    with pytest.raises(ValueError, match="start must be finite"):
        Segments(np.array([0]), np.array([np.nan]), np.array([1.0]), np.array([0]))
    with pytest.raises(ValueError, match="video must hold integer or string"):
        Segments(np.array([0.5]), np.array([0.0]), np.array([1.0]), np.array([0]))


def test_tiou_map_validation() -> None:
    gt = segs([(0, 0, 10, 0)])
    pred = segs([(0, 0, 10, 0, 0.5)], with_score=True)
    with pytest.raises(ValueError, match="predictions must have scores"):
        tiou_map(gt, gt)
    with pytest.raises(ValueError, match="ground_truth is empty"):
        tiou_map(segs([]), pred)
    with pytest.raises(ValueError, match="thresholds must be"):
        tiou_map(gt, pred, thresholds=[0.0, 0.5])
    with pytest.raises(ValueError, match="thresholds must be"):
        tiou_map(gt, pred, thresholds=[])
    with pytest.raises(ValueError, match="one kind"):
        tiou_map(segs([("a", 0, 10, 0)]), pred)
    with pytest.raises(ValueError, match="ground_truth must be a Segments"):
        tiou_map({"video": [0]}, pred)  # type: ignore[arg-type]
