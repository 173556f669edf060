"""The capacity protocol's F1@deadline counts the classes the online protocol's F1@Δt counts
(protocols/capacity_score.py ``f1_columns``; protocols/online.py, issue 27): in a binary task, two classes
one of them the background, the positive class's F1, not micro over both.

One stream of six frames, 40 ms apart, classes (background, speech), worked by hand. Labels
b s s b s b; the model answers b s b s s s (frame 2 misses speech, frames 3 and 5 are false alarms), every
frame 10 ms after its arrival but frame 4, 50 ms after. At a 40 ms deadline on the computation-aware clock
frame 4 is unanswered: speech TP 1, FP 2, FN 2, F1 = 1/3 (micro over both classes: TP 2, FP 3, FN 4,
4/11). Served instantly (the algorithmic clock) frame 4 is right: speech TP 2, FP 2, FN 1, F1 = 4/7 (micro
over both: TP 3, FP 3, FN 3, 1/2). The online protocol scores the same outputs, on its ``frame`` unit
(algorithmic) and its ``frame_paced`` unit (completion times), to the same figures.
"""

from __future__ import annotations

import numpy as np
import pytest

from streambench.harness.runs.capacity import _bind_classes
from streambench.protocols import online
from streambench.protocols.capacity import ArrivalSchedule, CapacityConfig
from streambench.protocols.capacity_score import ServedFrames, f1_columns, score_point
from streambench.protocols.recording import StreamRecording

MS = 1_000_000
CLASSES = ("background", "speech")
B, S = [True, False], [False, True]
LABELS = np.array([B, S, S, B, S, B], dtype=bool)
ANSWERS = np.array([B, S, B, S, S, S], dtype=np.float32)
RESPONSE_MS = np.array([10, 10, 10, 10, 50, 10])
ARRIVAL = (np.arange(6, dtype=np.int64) + 1) * 40 * MS
FRAMES = np.arange(6, dtype=np.int64)


def _schedule() -> ArrivalSchedule:
    zero = np.zeros(6, dtype=np.int64)
    return ArrivalSchedule(
        arrival_ns=ARRIVAL,
        channel=zero,
        session=zero,
        frame=FRAMES,
        session_channel=np.zeros(1, dtype=np.int64),
        session_source=np.zeros(1, dtype=np.int64),
        session_frames=np.array([6], dtype=np.int64),
        phase_ns=np.zeros(1, dtype=np.int64),
        duration_ns=280 * MS,
        num_streams=1,
        period_ns=40 * MS,
        first_of_session=FRAMES == 0,
        last_of_session=FRAMES == 5,
    )


def _served() -> ServedFrames:
    return ServedFrames(
        released_ns=ARRIVAL.copy(),
        start_ns=ARRIVAL + MS,
        finish_ns=ARRIVAL + RESPONSE_MS * MS,
        dropped=np.zeros(6, dtype=bool),
        batch_size=np.ones(6, dtype=np.int64),
        pred_frame=FRAMES.copy(),
        pred_refers=FRAMES.copy(),
        pred_scores=ANSWERS.copy(),
    )


def _online_f1(deadline_ms: float, unit: online.Unit, **config: object) -> float:
    """The online protocol's F1@deadline of the same outputs: emitted at each frame, finished when the
    capacity point's frame finished (a paced recording: started at arrival, ``latency`` = response)."""
    recording = StreamRecording(
        stream_id="s",
        role="test",
        t0_ns=0,
        segment_length_ns=1000 * MS,
        frame_times_ns=ARRIVAL.copy(),
        labels=LABELS.copy(),
        latency_ns=RESPONSE_MS * MS,
        emitted_at=FRAMES.copy(),
        refers_to=FRAMES.copy(),
        scores=ANSWERS.copy(),
        paced_start_ns=ARRIVAL.copy(),
        paced_policy="queue",
    )
    settings = online.OnlineConfig.model_validate(
        {"deltas_ms": (deadline_ms,), "bootstrap_resamples": 10, **config}
    )
    return online.score([recording], settings, CLASSES).f1_at(deadline_ms, "strict", unit)


def test_capacity_f1_is_the_positive_class_f1_of_the_online_rule() -> None:
    config = CapacityConfig(f1_reference="same_units", deadline_ms=40, classes=CLASSES)
    point = score_point(_schedule(), _served(), [LABELS], config)
    assert point.f1 == pytest.approx(1 / 3, abs=1e-6) and point.f1_unloaded == pytest.approx(4 / 7, abs=1e-6)
    assert point.f1 == pytest.approx(_online_f1(40, "frame_paced"))
    assert point.f1_unloaded == pytest.approx(_online_f1(40, "frame"))
    # micro over both classes (the rule before): 4/11 and 1/2, not what the online protocol reports
    everything = score_point(
        _schedule(), _served(), [LABELS], CapacityConfig(f1_reference="same_units", deadline_ms=40)
    )
    assert everything.f1 == pytest.approx(4 / 11, abs=1e-6) and everything.f1_unloaded == pytest.approx(
        1 / 2, abs=1e-6
    )
    assert everything.f1 != pytest.approx(point.f1)
    # the reference is the same rule's: the late frame costs 4/7 - 1/3, more than 1 point
    assert point.f1_reference == pytest.approx(4 / 7, abs=1e-6) and not point.accuracy_pass


def test_binary_f1_all_classes_and_exclude_classes_follow_online_too() -> None:
    both = CapacityConfig(f1_reference="same_units", deadline_ms=40, classes=CLASSES, binary_f1="all_classes")
    point = score_point(_schedule(), _served(), [LABELS], both)
    assert (
        point.f1
        == pytest.approx(4 / 11, abs=1e-6)
        == pytest.approx(_online_f1(40, "frame_paced", binary_f1="all_classes"))
    )
    # the background left out by name: speech alone again, as online scores it
    speech = CapacityConfig(
        f1_reference="same_units", deadline_ms=40, classes=CLASSES, exclude_classes=("background",)
    )
    excluded = score_point(_schedule(), _served(), [LABELS], speech)
    assert excluded.f1 == pytest.approx(1 / 3, abs=1e-6)
    assert excluded.f1 == pytest.approx(_online_f1(40, "frame_paced", exclude_classes=("background",)))


def test_the_rule_names_the_positive_class_and_a_bad_exclusion_is_refused() -> None:
    columns, rule = f1_columns(CapacityConfig(classes=CLASSES), 2)
    assert columns.tolist() == [False, True] and "positive class 'speech'" in rule
    # audio_files names its own background: the run fills it from the data
    named, _ = f1_columns(CapacityConfig(classes=("non-speech", "speech"), background_class="non-speech"), 2)
    assert named.tolist() == [False, True]
    three, rule = f1_columns(CapacityConfig(classes=("background", "dog", "cat")), 3)
    assert three.tolist() == [False, True, True] and "background 'background' left out" in rule  # as online
    with pytest.raises(ValueError, match=r"exclude_classes: unknown class\(es\) \['noise'\]"):
        f1_columns(CapacityConfig(classes=CLASSES, exclude_classes=("noise",)), 2)


def test_the_run_binds_the_data_classes_before_anything_runs() -> None:
    bound, rule = _bind_classes(CapacityConfig(), CLASSES, None)
    assert bound.classes == CLASSES and "positive class 'speech'" in rule
    with pytest.raises(ValueError, match="exclude_classes: unknown"):
        _bind_classes(CapacityConfig(exclude_classes=("noise",)), CLASSES, None)
    with pytest.raises(ValueError, match=r"classes: .* are not the data's"):
        _bind_classes(CapacityConfig(classes=("a", "b")), CLASSES, None)
