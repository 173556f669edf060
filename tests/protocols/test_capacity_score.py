"""The capacity protocol's score of one point (protocols/capacity_score.py), worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols.capacity import ArrivalSchedule, CapacityConfig
from streambench.protocols.capacity_score import NOT_SERVED, ServedFrames, score_point

MS = 1_000_000
# one stream of four frames, 40 ms apart: background, event, event, background
LABELS = [np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=bool)]
ARRIVAL = np.array([40, 80, 120, 160], dtype=np.int64) * MS


def _schedule() -> ArrivalSchedule:
    frame = np.arange(4, dtype=np.int64)
    return ArrivalSchedule(
        arrival_ns=ARRIVAL,
        channel=np.zeros(4, dtype=np.int64),
        session=np.zeros(4, dtype=np.int64),
        frame=frame,
        session_channel=np.zeros(1, dtype=np.int64),
        session_source=np.zeros(1, dtype=np.int64),
        session_frames=np.array([4], dtype=np.int64),
        phase_ns=np.zeros(1, dtype=np.int64),
        duration_ns=200 * MS,
        num_streams=1,
        period_ns=40 * MS,
        first_of_session=frame == 0,
        last_of_session=frame == 3,
    )


def _served(response_ms: list[float], dropped: tuple[int, ...] = (), extra: bool = False) -> ServedFrames:
    """Each frame served 1 ms after its arrival, answered ``response_ms`` after it (NOT_SERVED: dropped),
    with the right label for itself; ``extra``: frame 3 also labels frame 2 and a frame past the cut."""
    done = np.array([i not in dropped for i in range(4)])
    finish = np.where(done, ARRIVAL + (np.array(response_ms) * MS).astype(np.int64), NOT_SERVED)
    emitted = [i for i in range(4) if done[i]]
    refers = list(emitted)
    if extra:
        emitted += [3, 3]
        refers += [2, 7]
    scores = np.array(
        [LABELS[0][r].astype(np.float32) if r < 4 else [1, 0] for r in refers], dtype=np.float32
    )
    return ServedFrames(
        released_ns=ARRIVAL.copy(),
        start_ns=np.where(done, ARRIVAL + MS, NOT_SERVED),
        finish_ns=finish,
        dropped=~done,
        batch_size=done.astype(np.int64),
        pred_frame=np.array(emitted, dtype=np.int64),
        pred_refers=np.array(refers, dtype=np.int64),
        pred_scores=scores,
    )


def test_a_late_answer_costs_f1_on_the_computation_aware_clock() -> None:
    """Frame 2 answered 50 ms after it arrived, past the 40 ms deadline: at Δt = 40 ms it is unanswered
    (one event missed: TP 3, FN 1, F1 = 6/7); served instantly (the algorithmic clock) all four are right."""
    point = score_point(
        _schedule(), _served([10, 10, 50, 10]), LABELS, CapacityConfig(f1_reference="same_units")
    )
    assert point.frames == point.served == 4 and point.late == point.misses == 1
    assert point.miss_rate == 0.25 and not point.latency_pass
    assert point.f1 == pytest.approx(6 / 7) and point.f1_unloaded == pytest.approx(1.0)
    assert not point.accuracy_pass and not point.passed and point.keeps_up
    assert point.response_p50_ms == 10.0 and point.response_max_ms == 50.0 and point.wait_p50_ms == 1.0
    assert point.verdict.startswith("misses 1 of 4 frames at 40 ms: bound")
    # a deadline of 60 ms takes it: every frame on time, F1 held (too few frames for the bound to pass)
    wide = score_point(
        _schedule(),
        _served([10, 10, 50, 10]),
        LABELS,
        CapacityConfig(f1_reference="same_units", deadline_ms=60),
    )
    assert wide.misses == 0 and wide.f1 == pytest.approx(1.0) and wide.accuracy_pass
    assert wide.frames_needed == 459 - 4


def test_a_later_label_counts_from_its_own_completion_and_a_label_past_the_cut_is_dropped() -> None:
    """Frame 3 (done at 170 ms) relabels frame 2 (arrived at 120 ms): delay 50 ms, outside 40 ms, inside
    60 ms; its label for frame 7 (past the point's end) is ignored."""
    late = score_point(
        _schedule(), _served([10, 10, 50, 10], extra=True), LABELS, CapacityConfig(f1_reference="same_units")
    )
    assert late.f1 == pytest.approx(6 / 7)
    wide = score_point(
        _schedule(),
        _served([10, 10, 50, 10], extra=True),
        LABELS,
        CapacityConfig(f1_reference="same_units", deadline_ms=60),
    )
    assert wide.f1 == pytest.approx(1.0)


def test_a_dropped_frame_is_a_miss_and_predicts_nothing() -> None:
    point = score_point(
        _schedule(),
        _served([10, 10, 10, 10], dropped=(1,)),
        LABELS,
        CapacityConfig(f1_reference="same_units"),
    )
    assert point.dropped == 1 and point.misses == 1 and point.served == 3
    assert point.f1 == pytest.approx(6 / 7) and point.f1_unloaded == pytest.approx(6 / 7)
    assert not point.keeps_up  # a quarter dropped: more than the 1 % allowed


def test_the_one_stream_reference() -> None:
    config = CapacityConfig(f1_reference="one_stream", deadline_ms=60)
    point = score_point(_schedule(), _served([10, 10, 50, 10]), LABELS, config, one_stream_f1=0.9)
    assert point.f1_reference == 0.9 and point.accuracy_pass  # 1.0 >= 0.9 - 0.01
    lower = score_point(
        _schedule(),
        _served([10, 10, 50, 10]),
        LABELS,
        CapacityConfig(f1_reference="same_units"),
        one_stream_f1=0.9,
    )
    assert lower.f1_reference == pytest.approx(1.0)  # same_units: the point's own outputs, served instantly
