"""F1 held against the model's own unloaded output (protocols/capacity_accuracy.py, through score_point):
a model that answers background when it falls behind keeps "F1 held" against its own loaded outputs
(``same_units``) and loses it against its unloaded ones; an honest model answering late but the same
keeps every answer (agreement 1)."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols.capacity import CapacityConfig, arrival_schedule
from streambench.protocols.capacity_accuracy import Outputs, UnloadedReference, agreement_over
from streambench.protocols.capacity_score import ServedFrames, score_point

PERIOD = 40_000_000
LOOSE = {"confidence": 0.5, "target_miss_rate": 0.2, "slack_misses": 0}
"""A loose bound, so that 14 frames on time pass on latency and the verdict is accuracy's."""
CLASSES = ("background", "event")


def _schedule():  # type: ignore[no-untyped-def]
    times = np.arange(1, 9, dtype=np.int64) * PERIOD  # one source of 8 frames, played by 2 streams
    return arrival_schedule(2, [times], 8 * PERIOD, PERIOD, seed=0)


LABELS = np.array([[0, 1]] * 4 + [[1, 0]] * 4, dtype=bool)  # frames 0-3 the event, 4-7 background


def _truth(schedule) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.where(LABELS[schedule.frame][:, 1:2], [[0.1, 0.9]], [[0.9, 0.1]]).astype(np.float32)


def _served(schedule, scores: np.ndarray) -> ServedFrames:  # type: ignore[no-untyped-def]
    count = schedule.num_frames
    finish = schedule.arrival_ns + 5_000_000  # every frame answered 5 ms after it arrived
    return ServedFrames(
        released_ns=schedule.arrival_ns.copy(),
        start_ns=schedule.arrival_ns.copy(),
        finish_ns=finish,
        dropped=np.zeros(count, dtype=bool),
        batch_size=np.ones(count, dtype=np.int64),
        pred_frame=np.arange(count, dtype=np.int64),
        pred_refers=schedule.frame.copy(),
        pred_scores=scores,
    )


def _unloaded(schedule) -> UnloadedReference:  # type: ignore[no-untyped-def]
    count = schedule.num_frames
    outputs = Outputs(np.arange(count, dtype=np.int64), schedule.frame.copy(), _truth(schedule))
    return UnloadedReference(outputs, np.ones(count, dtype=bool))


def test_a_shedder_keeps_f1_held_against_itself_and_loses_it_against_its_unloaded_output() -> None:
    schedule = _schedule()
    shed = _truth(schedule)
    late = schedule.channel == 1  # stream 1 fell behind: its answers are all background
    shed[late] = [1.0, 0.0]
    config = {"deadline_ms": 40, "classes": CLASSES, "background_class": "background", **LOOSE}
    itself = score_point(
        schedule, _served(schedule, shed), [LABELS], CapacityConfig(**config, f1_reference="same_units")
    )
    assert itself.accuracy_pass and itself.passed  # F1 "held": the shed outputs held against themselves
    honest = score_point(
        schedule, _served(schedule, shed), [LABELS], CapacityConfig(**config), unloaded=_unloaded(schedule)
    )
    # positive class F1: the loaded run finds 4 of 8 event frames (TP 4, FN 4): 2/3; unloaded: all 8, 1.0
    assert honest.f1_compared == pytest.approx(2 / 3) and honest.f1_reference == pytest.approx(1.0)
    assert not honest.accuracy_pass and honest.outputs_changed
    # each stream is cut at the point's end by its phase: 7 frames each; stream 1's 4 event frames changed
    assert schedule.num_frames == 14 and honest.reference_frames == 14
    assert honest.agreement == pytest.approx(10 / 14)
    assert "fell more than 0.01 below the model's unloaded 1.0000 on the same 14 frames" in honest.verdict
    assert "answers changed under load on 28.6 %" in honest.verdict


def test_an_honest_model_keeps_every_answer_and_f1() -> None:
    schedule = _schedule()
    config = CapacityConfig(deadline_ms=40, classes=CLASSES, background_class="background", **LOOSE)
    point = score_point(
        schedule, _served(schedule, _truth(schedule)), [LABELS], config, unloaded=_unloaded(schedule)
    )
    assert point.accuracy_pass and not point.outputs_changed and point.agreement == 1.0
    assert point.f1_compared == point.f1_reference == pytest.approx(1.0)


def test_no_unloaded_reference_holds_nothing() -> None:
    schedule = _schedule()
    point = score_point(
        schedule, _served(schedule, _truth(schedule)), [LABELS], CapacityConfig(deadline_ms=40)
    )
    assert point.f1_reference is None and not point.accuracy_pass
    assert point.verdict.endswith("no unloaded reference was measured") or "misses" in point.verdict


def test_agreement_counts_whole_rows_over_the_counted_columns() -> None:
    a = np.array([[1, 0], [0, 1], [1, 1]], dtype=bool)
    b = np.array([[1, 1], [0, 1], [0, 1]], dtype=bool)
    frames = np.array([True, True, True])
    assert agreement_over(a, b, frames, np.array([True, True])) == pytest.approx(1 / 3)
    assert agreement_over(a, b, frames, np.array([True, False])) == pytest.approx(2 / 3)
    assert agreement_over(a, b, np.zeros(3, dtype=bool), np.array([True, True])) is None


def test_changed_answers_are_named_in_a_verdict_that_failed_on_time_too() -> None:
    schedule = _schedule()
    shed = _truth(schedule)
    shed[schedule.channel == 1] = [1.0, 0.0]
    strict = CapacityConfig(
        deadline_ms=40, classes=CLASSES, background_class="background"
    )  # 14 frames: too few
    point = score_point(schedule, _served(schedule, shed), [LABELS], strict, unloaded=_unloaded(schedule))
    assert not point.latency_pass and point.verdict.startswith("misses 0 of 14 frames")
    assert point.verdict.endswith("; answers changed under load on 28.6 % of replayed frames")
