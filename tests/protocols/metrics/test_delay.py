"""Delay windows for Acc@Δt / F1@Δt (DESIGN.md "Time and delay"; seed 004 §6.2.2 (1))."""

from __future__ import annotations

import numpy as np
import pytest

from protocols.metrics import (
    apply_thresholds,
    exact_match_accuracy,
    gather_decisions,
    segment_f1,
    select_in_window,
)

MS = 1_000_000

# prediction p:        0     1     2    3     4
UNIT = np.array([0, 0, 1, 1, 2])
DELAY = np.array([-30, 20, 50, 300, -80]) * MS
# unit 0: p0 early (-30 ms), p1 at +20 ms; unit 1: p2 at +50 ms, p3 late (+300 ms); unit 2: p4 early (-80 ms);
# unit 3: no prediction at all.


def test_strict_ignores_early_predictions() -> None:
    np.testing.assert_array_equal(select_in_window(UNIT, DELAY, 4, 100 * MS, "strict"), [1, 2, -1, -1])


def test_early_ok_counts_early_predictions() -> None:
    np.testing.assert_array_equal(select_in_window(UNIT, DELAY, 4, 100 * MS, "early_ok"), [1, 2, 4, -1])
    # with a window that excludes p1 (+20 ms) but includes p0 (|-30 ms|) only early_ok answers for unit 0
    np.testing.assert_array_equal(select_in_window(UNIT, DELAY, 4, 10 * MS, "strict"), [-1, -1, -1, -1])
    np.testing.assert_array_equal(select_in_window(UNIT, DELAY, 4, 30 * MS, "early_ok"), [1, -1, -1, -1])


def test_late_prediction_outside_window_is_ignored() -> None:
    # p3 (+300 ms) is the latest for unit 1 but outside 200 ms: p2 counts; with 300 ms p3 counts
    assert select_in_window(UNIT, DELAY, 4, 200 * MS, "strict")[1] == 2
    assert select_in_window(UNIT, DELAY, 4, 300 * MS, "strict")[1] == 3


def test_exact_boundary_counts() -> None:
    for mode in ("strict", "early_ok"):
        assert select_in_window(np.array([0]), np.array([50 * MS]), 1, 50 * MS, mode)[0] == 0
        assert select_in_window(np.array([0]), np.array([50 * MS + 1]), 1, 50 * MS, mode)[0] == -1
    assert select_in_window(np.array([0]), np.array([-50 * MS]), 1, 50 * MS, "early_ok")[0] == 0
    assert select_in_window(np.array([0]), np.array([-50 * MS - 1]), 1, 50 * MS, "early_ok")[0] == -1
    # Δt = 0: only delay exactly 0
    assert select_in_window(np.array([0, 0]), np.array([0, 1]), 1, 0, "strict")[0] == 0


def test_window_none_takes_latest_whatever_its_delay() -> None:
    for mode in ("strict", "early_ok"):
        np.testing.assert_array_equal(select_in_window(UNIT, DELAY, 4, None, mode), [1, 3, 4, -1])


def test_latest_by_emission_order_not_by_delay() -> None:
    # unit 0 gets three predictions in emission order; the last one has the smallest delay
    units = np.array([0, 1, 0, 0, 1])
    delays = np.array([90, 10, 80, 5, 20]) * MS
    np.testing.assert_array_equal(select_in_window(units, delays, 2, 100 * MS, "strict"), [3, 4])
    np.testing.assert_array_equal(select_in_window(units, delays, 2, 85 * MS, "strict"), [3, 4])
    np.testing.assert_array_equal(select_in_window(units, delays, 2, 15 * MS, "strict"), [3, 1])


@pytest.mark.parametrize("seed", range(4))
def test_random_against_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p, u = 500, 40
    units = rng.integers(0, u, size=p)
    delays = rng.integers(-200, 400, size=p) * MS
    for mode in ("strict", "early_ok"):
        for window in (None, 0, 100 * MS):
            expected = np.full(u, -1)
            for i in range(p):
                d = delays[i]
                ok = window is None or (0 <= d <= window if mode == "strict" else abs(d) <= window)
                if ok:
                    expected[units[i]] = i  # later i overwrite earlier
            np.testing.assert_array_equal(select_in_window(units, delays, u, window, mode), expected)


def test_no_predictions() -> None:
    empty = np.array([], dtype=np.int64)
    np.testing.assert_array_equal(select_in_window(empty, empty, 3, 100 * MS, "strict"), [-1, -1, -1])
    out = gather_decisions(np.array([-1, -1]), np.zeros((0, 2), dtype=bool), 2)
    assert out.shape == (2, 2) and not out.any()


def test_gather_decisions() -> None:
    decided = np.array([[1, 0], [0, 1], [1, 1]], dtype=bool)
    out = gather_decisions(np.array([2, -1, 0, 2]), decided, 2)
    np.testing.assert_array_equal(out, [[1, 1], [0, 0], [1, 0], [1, 1]])
    assert out.dtype == np.bool_


def test_end_to_end_f1_at_delta_t() -> None:
    # 3 frames, 1 class; reference 1, 1, 0. Predictions (unit, delay ms, score):
    #   frame 0: (0, 0, 0.9) -> positive, in window; frame 1: (-20 early, 0.8) then (+250 late, 0.7);
    #   frame 2: (0, 0.1) -> negative.
    units = np.array([0, 1, 1, 2])
    delays = np.array([0, -20, 250, 0]) * MS
    decided = apply_thresholds(np.array([[0.9], [0.8], [0.7], [0.1]]), 0.5)
    gt = np.array([[1], [1], [0]], dtype=bool)
    strict = gather_decisions(select_in_window(units, delays, 3, 200 * MS, "strict"), decided, 1)
    early = gather_decisions(select_in_window(units, delays, 3, 200 * MS, "early_ok"), decided, 1)
    # strict: frame 1 unanswered -> TP1 FP0 FN1 -> F1 2/3, Acc 2/3; early_ok: all right -> F1 ~1, Acc 1
    assert segment_f1(gt, strict) == pytest.approx(2 / 3, abs=1e-8)
    assert exact_match_accuracy(gt, strict) == pytest.approx(2 / 3)
    assert segment_f1(gt, early) == pytest.approx(1.0, abs=1e-8)
    assert exact_match_accuracy(gt, early) == 1.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"unit_of_pred": np.array([0, 3])}, "unit_of_pred"),
        ({"unit_of_pred": np.array([-1, 0])}, "unit_of_pred"),
        ({"unit_of_pred": np.array([0.0, 1.0])}, "unit_of_pred"),
        ({"delay_ns": np.array([0])}, "delay_ns"),
        ({"delay_ns": np.array([0.0, 1.0])}, "delay_ns"),
        ({"num_units": -1}, "num_units"),
        ({"window_ns": -5}, "window_ns"),
        ({"window_ns": 0.1}, "window_ns"),
        ({"mode": "loose"}, "mode"),
    ],
)
def test_select_validation(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {
        "unit_of_pred": np.array([0, 1]),
        "delay_ns": np.array([0, 0]),
        "num_units": 3,
        "window_ns": 100,
        "mode": "strict",
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        select_in_window(**args)  # type: ignore[arg-type]


def test_gather_validation() -> None:
    decided = np.zeros((2, 3), dtype=bool)
    with pytest.raises(ValueError, match="chosen"):
        gather_decisions(np.array([2]), decided, 3)
    with pytest.raises(ValueError, match="chosen"):
        gather_decisions(np.array([-2]), decided, 3)
    with pytest.raises(ValueError, match="num_classes"):
        gather_decisions(np.array([0]), decided, 4)
    with pytest.raises(ValueError, match="decided"):
        gather_decisions(np.array([0]), np.full((2, 3), 0.5), 3)
