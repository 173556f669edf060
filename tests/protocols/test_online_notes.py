"""The one-line explanations of figures that look broken alone (issue 37 item 5): the compute-aware F1 at
0 ms, frame F1 far from event F1, and the segment unit. Streams at 10 frames/s as in test_online_events."""

from __future__ import annotations

import pytest

from streambench.protocols import online
from streambench.protocols.online_notes import (
    compute_aware_note,
    figure_notes,
    frame_event_note,
    segment_note,
)
from tests.protocols.test_online import CLASSES
from tests.protocols.test_online_events import CONFIG, event_labels, synchronous


def test_the_compute_aware_f1_at_0_ms_is_explained_as_zero_by_construction() -> None:
    score = online.score([synchronous(event_labels(3, 5))], CONFIG, CLASSES)
    replay = score.overall.accuracy.curves["frame_replay"]["strict"]
    assert replay[0].delta_ms == 0 and replay[0].f1_micro == 0 and replay[1].f1_micro == pytest.approx(1.0)
    note = compute_aware_note(score)
    assert note is not None and note.startswith("F1 compute-aware at 0 ms is 0 by construction")
    assert note.endswith("at 50 ms it is 100.0 %")  # the first Δt a 10 ms prediction fits in
    # a score without the 0 ms point has nothing to explain
    later = online.score(
        [synchronous(event_labels(3, 5))], CONFIG.model_copy(update={"deltas_ms": (50,)}), CLASSES
    )
    assert compute_aware_note(later) is None


def test_a_frame_f1_far_from_the_event_f1_says_how_late_the_detections_began() -> None:
    """150 ms per frame at 10 frames/s: every frame right on the algorithmic clock (frame F1 100 %), but the
    queue makes the detection start 400 ms after the event: outside ±200 ms, event F1 0."""
    late = online.score([synchronous(event_labels(3, 5), latency_ms=150.0)], CONFIG, CLASSES)
    assert late.overall.accuracy.curves["frame"]["strict"][-1].f1_micro == pytest.approx(1.0)
    assert late.events is not None and late.events.overall.f1 == 0.0
    assert late.events.overall.flagged == 1 and late.events.overall.flag_delay is not None
    note = frame_event_note(late)
    assert note == (
        "frame F1 100.0 % (Strict, 1000 ms) vs event F1 0.0 %: frame F1 counts each frame alone, an event "
        "counts only when a detection starts within ±200 ms of its onset; 1 of 1 events were flagged, a "
        "median 400 ms after their onset"
    )
    prompt = online.score([synchronous(event_labels(3, 5))], CONFIG, CLASSES)  # both 100 %: nothing to say
    assert frame_event_note(prompt) is None


def test_detections_that_break_up_are_named() -> None:
    """The event on frames 2-8 answered on frames 2, 4, 6 and 8 only: four detections for one event."""
    labels = event_labels(2, 8)
    answered = labels.copy()
    answered[[3, 5, 7]] = [True, False]
    rec = synchronous(labels)
    rec.scores[:] = answered  # one prediction per frame: frames 3, 5 and 7 answered background
    score = online.score([rec], CONFIG, CLASSES)
    assert score.events is not None and score.events.overall.detected_events == 4
    note = frame_event_note(score)
    assert note is not None and note.endswith(
        "4 detections for 1 events: the runs of frames decided active break up (events.min_gap_s merges them)"
    )


def test_the_segment_unit_says_its_frames_and_where_its_length_came_from() -> None:
    origin = "data.segment_length_s = 0.5 s, as set"  # the recordings' streams have 0.5 s segments
    score = online.score([synchronous(event_labels(3, 5))], CONFIG, CLASSES)
    assert score.segment_unit == "0.5 s segments of 5 frames of 100 ms"
    assert segment_note(score, origin) == (
        f"segment F1: 0.5 s segments of 5 frames of 100 ms ({origin}): a segment's labels are its frames' "
        "together, its answer the last prediction for one of its frames"
    )
    set_here = CONFIG.model_copy(update={"segment_length_s": 1.0})  # the protocol's, whatever the data says
    note = segment_note(online.score([synchronous(event_labels(3, 5))], set_here, CLASSES), origin)
    assert note is not None and note.startswith(
        "segment F1: 1 s segments of 10 frames of 100 ms (protocol.segment_length_s): a segment's"
    )
    assert figure_notes(score, origin) == [compute_aware_note(score), segment_note(score, origin)]
    assert segment_note(score.model_copy(update={"segment_unit": None})) is None  # an older result


def test_a_result_written_before_these_fields_still_reads_and_says_what_it_can() -> None:
    late = online.score([synchronous(event_labels(3, 5), latency_ms=150.0)], CONFIG, CLASSES)
    raw = late.model_dump(mode="json")
    del raw["segment_unit"]
    for figures in [raw["events"]["overall"], *raw["events"]["classes"]]:
        del figures["flagged"], figures["flag_delay"]
    older = online.OnlineScore.model_validate(raw)
    assert older.segment_unit is None and older.events is not None and older.events.overall.flagged is None
    notes = figure_notes(older, "data.segment_length_s = 1 s, as set")
    assert len(notes) == 2 and notes[1].endswith(
        "an event counts only when a detection starts within ±200 ms of its onset"
    )
