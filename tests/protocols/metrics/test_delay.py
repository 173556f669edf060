"""Delay windows for Acc@Δt / F1@Δt (DESIGN.md "Time and delay"; seed 004 §6.2.2 (1))."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols.metrics import (
    apply_thresholds,
    class_counts,
    exact_match_accuracy,
    f1_from_counts,
    gather_decisions,
    segment_f1,
    select_in_window,
    window_bound_ns,
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


# --- the rounding rule: Δt against delays recorded in whole ns (issue 25 item 1) --------------------


def harness_frame_times_ns(fps: float, num_frames: int) -> np.ndarray:
    """Frame k (k = 1..N) ends at k / fps s, recorded as the harness does (harness/execution/executor.py:
    ``np.round(stream.frame_times * 1e9)``, frame_times built as ``arange(1, N + 1) / fps``)."""
    return np.round(np.arange(1, num_frames + 1, dtype=np.float64) / fps * 1e9).astype(np.int64)


@pytest.mark.parametrize(
    ("delta_ms", "bound"),
    [
        (0, 1),
        (50, 50_000_001),
        (100.0, 100_000_001),
        (1000 / 30, 33_333_334),  # 33,333,333.33 ns -> floor + 1
        (2000 / 30, 66_666_667),
        (1000 / 24, 41_666_667),
        (1001 / 30, 33_366_667),  # one frame at 29.97 fps
        (1000 / 60, 16_666_667),
        (4.35, 4_350_001),  # read as the decimal 4.35, not the binary 4.34999...
        (1e-6, 2),  # 1 ns
        (np.float64(200), 200_000_001),
    ],
)
def test_window_bound_ns_is_floor_plus_one_ns(delta_ms: float, bound: int) -> None:
    assert window_bound_ns(delta_ms) == bound


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), "5", True, None])
def test_window_bound_ns_validation(bad: object) -> None:
    with pytest.raises(ValueError, match="delta_ms"):
        window_bound_ns(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fps", "lag", "delta_ms"),
    [
        # Δt = lag frame periods, written as a user would; hand values: lag / fps in ms
        (24.0, 1, 1000 / 24),  # 41.67 ms: delays 41,666,666 / 41,666,667 ns
        (24.0, 2, 2000 / 24),  # 83.33 ms: delays 83,333,333 / 83,333,334 ns
        (24.0, 12, 500),  # a default Δt point: 12 frames = 500 ms exactly
        (25.0, 1, 40),  # whole ns: 40,000,000
        (25.0, 5, 200),  # a default Δt point
        (30000 / 1001, 1, 1001 / 30),  # 29.97 fps: 33.37 ms, delays 33,366,666 / 33,366,667 ns
        (30000 / 1001, 2, 2002 / 30),  # 66.73 ms, delays 66,733,333 / 66,733,334 ns
        (30000 / 1001, 3, 100.1),
        (30.0, 1, 1000 / 30),  # the case: delays 33,333,333 / 33,333,334 ns
        (30.0, 2, 2000 / 30),  # delays 66,666,666 / 66,666,667 ns
        (30.0, 3, 100),  # a default Δt point
        (60.0, 1, 1000 / 60),
        (60.0, 2, 2000 / 60),  # delays 33,333,333 / 33,333,334 ns
        (60.0, 3, 50),  # a default Δt point
    ],
)
def test_whole_frame_delays_count_at_every_frame_rate(fps: float, lag: int, delta_ms: float) -> None:
    # a model that labels every frame exactly `lag` frames late: frame i at frame i + lag; the last `lag`
    # frames are never labelled. Every labelled frame counts at Δt = lag periods, none 1 µs below it.
    n = 120
    times = harness_frame_times_ns(fps, n)
    refers = np.arange(n - lag)
    delays = times[refers + lag] - times[refers]
    chosen = select_in_window(refers, delays, n, window_bound_ns(delta_ms), "strict")
    np.testing.assert_array_equal(chosen, [*range(n - lag), *[-1] * lag])
    early = select_in_window(refers, delays, n, window_bound_ns(delta_ms), "early_ok")
    np.testing.assert_array_equal(early, chosen)
    below = select_in_window(refers, delays, n, window_bound_ns(delta_ms - 0.001), "strict")
    assert (below == -1).all()


def test_one_frame_late_at_30_fps_worked_example() -> None:
    # issue 25 item 1: 30 frames at 30 fps, one class present on every frame, a model right on every
    # frame but one frame late; Δt = one period = 1000/30 ms.
    n = 30
    times = harness_frame_times_ns(30.0, n)
    refers = np.arange(n - 1)
    delays = times[refers + 1] - times[refers]
    # the recorded one-frame delays: 10 of the 29 are 33,333,334 ns, the others 33,333,333 ns
    assert sorted(set(delays.tolist())) == [33_333_333, 33_333_334]
    assert int(np.count_nonzero(delays == 33_333_334)) == 10
    chosen = select_in_window(refers, delays, n, window_bound_ns(1000 / 30), "strict")
    gt = np.ones((n, 1), dtype=bool)
    pred = gather_decisions(chosen, np.ones((n - 1, 1), dtype=bool), 1)
    # hand values: 29 frames answered and right, frame 29 unanswered -> TP 29, FP 0, FN 1
    assert (chosen >= 0).sum() / n == pytest.approx(29 / 30)  # 0.967 (was 19/30 = 0.633)
    p, r = 29 / (29 + 1e-9), 29 / (30 + 1e-9)
    assert f1_from_counts(class_counts(gt, pred)) == pytest.approx(2 * p * r / (p + r + 1e-9), abs=1e-12)
    assert f1_from_counts(class_counts(gt, pred)) == pytest.approx(58 / 59, abs=1e-8)  # 0.983 (was 0.776)


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
