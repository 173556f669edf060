"""Paced execution replayed in virtual time (protocols/pacing.py; DESIGN.md "The engine", replay clock,
and "Time and delay", computation-aware clock).

Hand-computed timelines for both policies, the vectorised queue against a plain loop, and the
invariants of drop-to-newest on random streams (hypothesis).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streambench.protocols.pacing import (
    NOT_EMITTED_NS,
    PacingPolicy,
    computation_aware_delays,
    paced_delays,
    paced_emit_times,
    replay_paced,
    replay_recording,
)
from streambench.protocols.recording import StreamRecording

# Case A: period 10, no frame ever waits for long enough to be dropped.
ARR_A = [10, 20, 30, 40]
LAT_A = [5, 15, 12, 3]
# Case B: a backlog builds up; drop-to-newest skips frames 1 and 4.
ARR_B = [10, 20, 30, 40, 50, 60]
LAT_B = [25, 5, 5, 30, 1, 1]


def assert_same(a: np.ndarray, expected: list[int] | list[bool]) -> None:
    assert a.tolist() == expected


def test_queue_hand_case_a() -> None:
    t = replay_paced(ARR_A, LAT_A, "queue")
    assert_same(t.start_ns, [10, 20, 35, 47])
    assert_same(t.finish_ns, [15, 35, 47, 50])
    assert_same(t.wait_ns, [0, 0, 5, 7])
    assert_same(t.response_ns, [5, 15, 17, 10])
    assert_same(t.processed, [True] * 4)
    assert t.drop_rate() == 0.0 and t.policy == "queue"


def test_drop_equals_queue_when_nothing_waits_behind_a_newer_frame() -> None:
    q, d = replay_paced(ARR_A, LAT_A, "queue"), replay_paced(ARR_A, LAT_A, "drop")
    for name in ("start_ns", "finish_ns", "wait_ns", "response_ns", "processed"):
        assert np.array_equal(getattr(q, name), getattr(d, name)), name


def test_queue_hand_case_b() -> None:
    t = replay_paced(ARR_B, LAT_B, "queue")
    assert_same(t.start_ns, [10, 35, 40, 45, 75, 76])
    assert_same(t.finish_ns, [35, 40, 45, 75, 76, 77])
    assert_same(t.wait_ns, [0, 15, 10, 5, 25, 16])
    assert_same(t.response_ns, [25, 20, 15, 35, 26, 17])


def test_drop_hand_case_b() -> None:
    t = replay_paced(ARR_B, LAT_B, "drop")
    # free at 35: frames 1 (20) and 2 (30) wait, 2 is taken; free at 40 = arrival of 3: 3 is taken
    # (arriving exactly when the worker frees counts as arrived); free at 70: 4 and 5 wait, 5 is taken
    assert_same(t.processed, [True, False, True, True, False, True])
    assert_same(t.start_ns, [10, -1, 35, 40, -1, 70])
    assert_same(t.finish_ns, [35, -1, 40, 70, -1, 71])
    assert_same(t.wait_ns, [0, -1, 5, 0, -1, 10])
    assert_same(t.response_ns, [25, -1, 10, 30, -1, 11])
    assert t.drop_rate() == pytest.approx(2 / 6)


def test_deadline_misses_default_is_the_next_arrival() -> None:
    q = replay_paced(ARR_A, LAT_A, "queue")
    assert_same(q.deadlines(), [20, 30, 40, 50])  # the last frame gets the last period (10)
    assert_same(q.deadline_misses(), [False, True, True, False])  # finishing at the deadline is on time
    assert q.deadline_miss_rate() == 0.5
    assert_same(q.deadline_misses(deadline_ns=15), [False, False, True, False])  # response > 15
    d = replay_paced(ARR_B, LAT_B, "drop")
    assert_same(d.deadline_misses(), [True, True, False, True, True, True])  # dropped frames miss
    assert d.deadline_miss_rate() == pytest.approx(5 / 6)


def test_a_one_frame_stream_is_due_one_capture_interval_after_it_arrives() -> None:
    """Its one period is the data's own: the frame's capture interval, from the stream's start (arrival
    0) to its arrival at 40, so it is due at 80 (before, a ValueError ended the scoring)."""
    t = replay_paced([40], [50], "queue")
    assert_same(t.deadlines(), [80])
    assert_same(t.deadline_misses(), [True])  # finished at 90
    assert_same(replay_paced([40], [40], "queue").deadline_misses(), [False])  # at 80: on time
    assert_same(t.deadline_misses(deadline_ns=50), [False])
    assert_same(t.deadline_misses(deadline_ns=49), [True])
    with pytest.raises(ValueError, match="arriving at its start has no frame period: pass deadline_ns"):
        replay_paced([0], [5], "queue").deadline_misses()  # no capture interval: none to take


def test_staleness_hand_cases() -> None:
    # A, queue: outputs ready at 15 (frame 0), 35 (1), 47 (2), 50 (3)
    assert_same(replay_paced(ARR_A, LAT_A, "queue").staleness_ns(), [-1, 10, 20, 20])
    # B, drop: outputs ready at 35 (frame 0), 40 (2), 70 (3), 71 (5); at 40 frame 2's output is ready
    assert_same(replay_paced(ARR_B, LAT_B, "drop").staleness_ns(), [-1, -1, -1, 10, 20, 30])


def test_computation_aware_delays_hand_case() -> None:
    t = replay_paced(ARR_B, LAT_B, "drop")
    emitted = [0, 1, 2, 3, 3, 5]
    refers = [0, 1, 2, 3, 1, 4]
    kept, delay = computation_aware_delays(emitted, refers, t)
    assert_same(kept, [True, False, True, True, True, True])
    assert_same(delay, [25, NOT_EMITTED_NS, 10, 30, 50, 21])


def _recording(
    arrival: list[int], latency: list[int], emitted: list[int], refers: list[int]
) -> StreamRecording:
    t0 = 1_000
    n, p = len(arrival), len(emitted)
    return StreamRecording(
        stream_id="s",
        role="test",
        t0_ns=t0,
        segment_length_ns=None,
        frame_times_ns=np.asarray(arrival, dtype=np.int64) + t0,
        labels=np.zeros((n, 2), dtype=bool),
        latency_ns=np.asarray(latency, dtype=np.int64),
        emitted_at=np.asarray(emitted, dtype=np.int64),
        refers_to=np.asarray(refers, dtype=np.int64),
        scores=np.zeros((p, 2), dtype=np.float32),
    )


def test_recording_helpers_use_arrivals_relative_to_t0() -> None:
    rec = _recording(ARR_B, LAT_B, [0, 1, 2, 3, 3, 5], [0, 1, 2, 3, 1, 4])
    t = replay_recording(rec, "drop")
    assert_same(t.arrival_ns, ARR_B)
    kept, t_pred = paced_emit_times(rec, "drop")
    assert_same(kept, [True, False, True, True, True, True])
    assert_same(t_pred, [1035, NOT_EMITTED_NS, 1040, 1070, 1070, 1071])
    kept2, delay = paced_delays(rec, "drop")
    assert np.array_equal(kept, kept2)
    assert np.array_equal(delay[kept], (t_pred - rec.frame_times_ns[rec.refers_to])[kept])


@pytest.mark.parametrize("policy", ["queue", "drop"])
def test_faster_than_real_time_has_no_wait_and_delays_equal_latencies(policy: PacingPolicy) -> None:
    period = 40_000_000
    rng = np.random.default_rng(0)
    arrival = (np.arange(50) + 1) * period
    latency = rng.integers(0, period + 1, size=50)  # at most one period: never behind
    t = replay_paced(arrival, latency, policy)
    assert t.processed.all() and (t.wait_ns == 0).all()
    assert np.array_equal(t.response_ns, latency) and np.array_equal(t.start_ns, arrival)
    assert t.deadline_miss_rate() == 0.0 and t.drop_rate() == 0.0
    frames = np.arange(50)
    kept, delay = computation_aware_delays(frames, frames, t)
    assert kept.all() and np.array_equal(delay, latency)


def test_same_inputs_same_outputs_and_read_only() -> None:
    policies: tuple[PacingPolicy, ...] = ("queue", "drop")
    for policy in policies:
        a, b = replay_paced(ARR_B, LAT_B, policy), replay_paced(ARR_B, LAT_B, policy)
        for name in ("start_ns", "finish_ns", "processed", "wait_ns", "response_ns"):
            assert np.array_equal(getattr(a, name), getattr(b, name))
        with pytest.raises(ValueError):
            a.finish_ns[0] = 0


@pytest.mark.parametrize(
    ("arrival", "latency", "policy", "message"),
    [
        ([], [], "queue", "empty"),
        ([1, 2], [1], "queue", "one per frame"),
        ([2, 1], [1, 1], "queue", "non-decreasing"),
        ([-1, 1], [1, 1], "queue", "non-negative"),
        ([1, 2], [1, -1], "drop", "latency_ns must be non-negative"),
        ([1, 2], [1, 1], "fifo", "policy"),
    ],
)
def test_invalid_inputs_are_named(arrival: list[int], latency: list[int], policy: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        replay_paced(np.asarray(arrival, dtype=np.int64), np.asarray(latency, dtype=np.int64), policy)


def test_float_times_are_refused() -> None:
    with pytest.raises(ValueError, match="integer dtype"):
        replay_paced(np.array([1.0, 2.0]), np.array([1, 1]))


def test_delays_reject_out_of_range_frames() -> None:
    t = replay_paced(ARR_A, LAT_A)
    with pytest.raises(ValueError, match="refers_to"):
        computation_aware_delays([0], [4], t)


# --- random streams -------------------------------------------------------------------------------

_streams = st.integers(1, 60).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(1, 50), min_size=n, max_size=n),  # gaps between arrivals (strictly increasing)
        st.lists(st.integers(0, 120), min_size=n, max_size=n),  # latencies
    )
)


def _arrays(data: tuple[list[int], list[int]]) -> tuple[np.ndarray, np.ndarray]:
    gaps, lat = data
    return np.cumsum(np.asarray(gaps, dtype=np.int64)), np.asarray(lat, dtype=np.int64)


def _queue_loop(arrival: np.ndarray, latency: np.ndarray) -> list[int]:
    finish, out = 0, []
    for i, (a, lat) in enumerate(zip(arrival.tolist(), latency.tolist(), strict=True)):
        finish = (a if i == 0 else max(a, finish)) + lat
        out.append(finish)
    return out


@settings(max_examples=200, deadline=None)
@given(_streams)
def test_vectorised_queue_equals_a_plain_loop(data: tuple[list[int], list[int]]) -> None:
    arrival, latency = _arrays(data)
    t = replay_paced(arrival, latency, "queue")
    assert t.finish_ns.tolist() == _queue_loop(arrival, latency)
    assert t.processed.all() and (t.wait_ns >= 0).all()
    assert np.array_equal(t.response_ns, t.wait_ns + latency)


@settings(max_examples=200, deadline=None)
@given(_streams)
def test_drop_invariants(data: tuple[list[int], list[int]]) -> None:
    arrival, latency = _arrays(data)
    d, q = replay_paced(arrival, latency, "drop"), replay_paced(arrival, latency, "queue")
    done = np.flatnonzero(d.processed)
    # the first and the last frame are always processed (the last is the newest once the worker frees)
    assert done[0] == 0 and done[-1] == arrival.size - 1
    start, finish = d.start_ns[done], d.finish_ns[done]
    # in order, one at a time, never before arrival, each for its own recorded latency
    assert (start >= arrival[done]).all() and (start[1:] >= finish[:-1]).all()
    assert np.array_equal(finish - start, latency[done])
    # work-conserving and drop-to-newest: a processed frame starts as soon as the worker is free or
    # it arrives, and no newer frame had arrived by then
    assert np.array_equal(start[1:], np.maximum(arrival[done[1:]], finish[:-1]))
    inner = done[done + 1 < arrival.size]
    assert (arrival[inner + 1] > d.start_ns[inner]).all()
    # a frame is dropped only if it was waiting when a newer one was taken
    for i in np.flatnonzero(~d.processed):
        j = done[np.searchsorted(done, i)]
        assert arrival[i] <= d.start_ns[j]
    # dropping never makes a processed frame later than queueing would
    assert (start <= q.start_ns[done]).all()
