"""The hysteresis protocol (protocols/hysteresis.py): seed 001's metrics on hand-built trajectories, the
plan of the four experiments, frame weights from recordings, rows over repeats."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from streambench.protocols.hysteresis import (
    HysteresisConfig,
    PlannedStream,
    frame_weights,
    measure,
    plan,
    score,
)
from streambench.protocols.metrics.router import dtw_distance
from streambench.protocols.recording import StreamRecording


def two_domain(w_a: list[float]) -> np.ndarray:
    a = np.asarray(w_a, dtype=np.float64)
    return np.stack([a, 1.0 - a], axis=1)


# A1 (6 frames) → B (4) → A2 (6): w_A per frame
A1 = [1.0] * 6
B = [0.7, 0.4, 0.05, 0.05]  # w_B = 0.3, 0.6, 0.95, 0.95
A2 = [0.05, 0.5, 0.7, 0.95, 0.92, 0.99]
FORWARD = two_domain(A1 + B + A2)
CONTROL = two_domain([1.0] * 12)
ENTRY = PlannedStream(
    stream_id="f",
    experiment="b_length",
    setting="4",
    arm="run",
    repeat=0,
    part="forward",
    layout="aba",
    len_a=6,
    len_mid=4,
    a_share=0.0,
)


def test_switch_lags_on_a_hand_built_trajectory() -> None:
    m = measure(HysteresisConfig(), FORWARD, CONTROL, ENTRY)
    # A→B: w_B ≥ 0.9 at frames 8, 9, 10 (10 is A2's first frame, w_B = 0.95): lag 8 − 6 = 2
    assert m.lag_ab == 2
    # B→A: w_A ≥ 0.9 at frames 13, 14, 15: lag 13 − 10 = 3
    assert m.lag_ba == 3 and m.asymmetry == 1
    # K = 2 finds frames 8, 9 for A→B (lag 2) and 13, 14 for B→A (lag 3); K = 4 finds no run to B
    assert measure(HysteresisConfig(k=4), FORWARD, CONTROL, ENTRY).lag_ab is None
    assert measure(HysteresisConfig(threshold=0.5), FORWARD, CONTROL, ENTRY).lag_ba == 1


def test_return_gap_loop_area_on_a_hand_built_trajectory() -> None:
    m = measure(HysteresisConfig(), FORWARD, CONTROL, ENTRY)
    a = np.asarray(A2)
    cosine = np.mean(1.0 - a / np.sqrt(a**2 + (1 - a) ** 2))  # A1 rows are [1, 0]
    assert math.isclose(m.gap_cosine, float(cosine), rel_tol=1e-12)
    assert math.isclose(m.gap_euclidean, float(np.mean(np.sqrt(2.0) * (1 - a))), rel_tol=1e-12)
    assert math.isclose(m.gap_dtw, dtw_distance(FORWARD[:6], FORWARD[10:]), rel_tol=1e-12)
    assert math.isclose(m.loop_area, 0.95 + 0.5 + 0.3 + 0.05 + 0.08 + 0.01, rel_tol=1e-12)
    assert m.control_gap_cosine == 0.0 and m.mix_entropy is None


def test_mix_entropy_is_the_mean_over_the_mix_segment() -> None:
    entry = ENTRY.model_copy(update={"layout": "mix", "a_share": 0.5})
    m = measure(HysteresisConfig(), FORWARD, CONTROL, entry)
    w = np.asarray(B)
    expected = np.mean(-(w * np.log(w + 1e-10) + (1 - w) * np.log(1 - w + 1e-10)))
    assert m.mix_entropy is not None and math.isclose(m.mix_entropy, float(expected), rel_tol=1e-9)
    assert m.lag_ab is None  # no A→B lag across a mix


def test_plan_lays_out_the_four_experiments() -> None:
    config = HysteresisConfig(repeats=2)
    planned = plan(config)
    ids = [p.stream_id for p in planned]
    assert len(ids) == len(set(ids))
    count = {
        e: sum(p.experiment == e for p in planned) for e in ("b_length", "mix", "aggregation", "hard_label")
    }
    assert count == {
        "b_length": 5 * 2 * 2,
        "mix": 3 * 2 * 2,
        "aggregation": 3 * 2 * 3,
        "hard_label": 3 * 2 * 2,
    }
    b64 = next(p for p in planned if p.setting == "64" and p.part == "forward" and p.repeat == 1)
    assert b64.stream_id == "b_length/64/run/forward/r1" and b64.bounds() == (64, 64, 128)
    mix = next(p for p in planned if p.experiment == "mix" and p.part == "forward")
    assert mix.setting == "0.2/0.8" and mix.layout == "mix" and mix.a_share == 0.2 and mix.len_mid == 32
    arms = {p.arm for p in planned if p.experiment == "hard_label"}
    assert arms == {"soft", "hard", "hard_state"}
    hybrid = [p for p in planned if p.part == "hybrid"]
    assert {p.experiment for p in hybrid} == {"aggregation"} and all(p.a_share == 0.5 for p in hybrid)
    assert [p.experiment for p in plan(HysteresisConfig(experiments=("mix",)))] == ["mix"] * 24


def test_config_defaults_are_the_seeds_and_bad_values_are_refused() -> None:
    c = HysteresisConfig()
    assert (c.threshold, c.k, c.b_lengths, c.a_shares) == (0.9, 3, (4, 8, 16, 32, 64), (0.2, 0.5, 0.8))
    with pytest.raises(ValidationError, match="a_shares"):
        HysteresisConfig(a_shares=(0.5, 1.2))
    with pytest.raises(ValidationError):
        HysteresisConfig(experiments=("length_of_b",))  # type: ignore[arg-type]


def recording(
    sid: str, rows: np.ndarray, emitted_at: list[int] | None = None, weights: bool = True
) -> StreamRecording:
    t = rows.shape[0] if emitted_at is None else max(emitted_at) + 1
    emitted = np.arange(t) if emitted_at is None else np.asarray(emitted_at)
    return StreamRecording(
        stream_id=sid,
        role="test",
        t0_ns=0,
        segment_length_ns=None,
        frame_times_ns=(np.arange(t) + 1) * 40_000_000,
        labels=np.zeros((t, rows.shape[1]), dtype=bool),
        latency_ns=np.zeros(t, dtype=np.int64),
        emitted_at=emitted,
        refers_to=emitted,
        scores=np.full((emitted.size, rows.shape[1]), 0.5, dtype=np.float32)
        if weights
        else rows.astype(np.float32),
        weights=rows if weights else None,
    )


def test_frame_weights_take_the_latest_row_and_fall_back_to_scores() -> None:
    rows = two_domain([0.9, 0.2, 0.6])
    rec = recording("s", rows, emitted_at=[1, 1, 3])
    np.testing.assert_allclose(frame_weights(rec), two_domain([0.5, 0.2, 0.2, 0.6]))
    scores_only = recording("s", rows, weights=False)
    np.testing.assert_allclose(frame_weights(scores_only), rows, rtol=1e-6)


def test_score_averages_repeats_and_counts_undefined_lags() -> None:
    config = HysteresisConfig(experiments=("b_length",), b_lengths=(4,), len_a=6, repeats=2)
    planned = plan(config)
    no_switch = two_domain(A1 + [0.6, 0.6, 0.6, 0.6] + [1.0] * 6)  # never reaches B
    recs = {
        "b_length/4/run/forward/r0": recording("f0", FORWARD),
        "b_length/4/run/control/r0": recording("c0", CONTROL),
        "b_length/4/run/forward/r1": recording("f1", no_switch),
        "b_length/4/run/control/r1": recording("c1", CONTROL),
    }
    report = score(config, planned, recs)
    assert report.weights_source == "weights"
    (row,) = report.rows
    assert (row.experiment, row.setting, row.arm, row.repeats) == ("b_length", "4", "run", 2)
    assert row.lag_ab == 2.0 and row.lag_ab_undefined == 1
    assert row.lag_ba == 1.5 and row.lag_ba_undefined == 0  # (3 + 0) / 2
    assert row.asymmetry == 1.0  # only repeat 0 has both lags
    assert math.isclose(row.loop_area, 1.89 / 2, rel_tol=1e-12)
    with pytest.raises(ValueError, match="no recording for planned stream"):
        score(config, planned, {k: v for k, v in recs.items() if "r1" not in k})
