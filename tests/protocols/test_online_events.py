"""Issue 27: the online protocol's event figures (protocols/online_events.py) and the F1 of a binary
task's positive class (protocols/online.py "Which classes an F1 counts").

Streams run at 10 frames/s: frame i captures (i * 100, (i + 1) * 100] ms and arrives at (i + 1) * 100 ms,
as in tests/protocols/test_online.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from streambench.protocols import online
from streambench.protocols.online import AccuracyFigures, CurvePoint, OnlineConfig, OnlineScore
from streambench.protocols.online_events import ClassEventFigures, DelayFigures, EventFigures, EventsConfig
from tests.protocols.test_online import CLASSES, labels_bg_then_event, one_hot_scores, point, recording
from tests.protocols.test_online_failed import failed

CONFIG = OnlineConfig(bootstrap_resamples=20)


def event_labels(first: int, last: int, num_frames: int = 10) -> np.ndarray:
    """Background, then the event on frames ``first..last``, then background."""
    labels = np.zeros((num_frames, 2), dtype=bool)
    labels[:, 0] = True
    labels[first : last + 1] = [False, True]
    return labels


def synchronous(
    labels: np.ndarray, latency_ms: float = 10.0, stream_id: str = "s0"
) -> online.StreamRecording:
    """A right answer for every frame, emitted at that frame after ``latency_ms``."""
    n = labels.shape[0]
    return recording(
        list(range(n)), list(range(n)), one_hot_scores(labels), labels, stream_id, latency_ms=latency_ms
    )


def test_onset_delay_is_the_prediction_finish_minus_the_event_start() -> None:
    # event on frames 3-5: starts at 300 ms (frame 3's capture begins), ends at 600 ms (frame 5 arrives).
    # Flagged when frame 3's prediction finishes (400 + 10 ms), ended when frame 6's does (700 + 10 ms).
    score = online.score([synchronous(event_labels(3, 5))], CONFIG, CLASSES)
    events = score.events
    assert events is not None and score.events_reason is None
    assert events.background_class == "background" and [c.name for c in events.classes] == ["event"]
    (event,) = events.classes
    assert (event.reference_events, event.detected_events, event.matched) == (1, 1, 1)
    assert (event.missed, event.false_alarms, event.f1) == (0, 0, 1.0)
    assert event.onset_delay is not None and event.offset_delay is not None
    assert event.onset_delay.median_ms == pytest.approx(110.0) and event.onset_delay.n == 1
    assert event.offset_delay.median_ms == pytest.approx(110.0)
    assert events.hours == pytest.approx(1.0 / 3600) and event.false_alarms_per_hour == 0.0
    assert events.overall.model_dump(exclude={"name"}) == event.model_dump(exclude={"name"})
    assert "computation-aware" in events.clock and "queue policy" in events.clock


def test_queueing_delays_the_detection_beyond_the_collar() -> None:
    """150 ms per frame at 10 frames/s: the queue grows (finish 250, 400, 550, 700 ms, ...), so frame 3
    is answered at 700 ms, 400 ms after its event began: outside ±200 ms, a miss and a false alarm; a
    500 ms collar matches it at 400 ms."""
    rec = synchronous(event_labels(3, 5), latency_ms=150.0)
    tight = online.score([rec], CONFIG, CLASSES).events
    assert tight is not None
    assert (tight.overall.matched, tight.overall.missed, tight.overall.false_alarms) == (0, 1, 1)
    assert tight.overall.onset_delay is None and tight.overall.f1 == 0.0
    assert tight.overall.false_alarms_per_hour == pytest.approx(3600.0)  # one in one second
    wide = online.score([rec], CONFIG.model_copy(update={"events": EventsConfig(t_collar_s=0.5)}), CLASSES)
    assert wide.events is not None and wide.events.overall.onset_delay is not None
    assert wide.events.overall.onset_delay.median_ms == pytest.approx(400.0)


def test_an_anticipated_onset_has_a_negative_delay() -> None:
    # at frame i the model labels frame i + 2: frame 3 is labelled by frame 1's prediction, done at 210 ms
    labels = event_labels(3, 5)
    emitted = list(range(8))
    refers = [i + 2 for i in emitted]
    rec = recording(emitted, refers, one_hot_scores(labels)[refers], labels)
    events = online.score([rec], CONFIG, CLASSES).events
    assert events is not None and events.overall.onset_delay is not None
    assert events.overall.onset_delay.median_ms == pytest.approx(-90.0)


def test_smoothing_merges_a_flickering_detection() -> None:
    # the model drops frame 4 of the event 3-5: two detections, the second a false alarm
    labels = event_labels(3, 5)
    flicker = labels.copy()
    flicker[4] = [True, False]
    rec = recording(list(range(10)), list(range(10)), one_hot_scores(flicker), labels)
    raw = online.score([rec], CONFIG, CLASSES).events
    assert raw is not None and (raw.overall.detected_events, raw.overall.false_alarms) == (2, 1)
    smoothed_config = CONFIG.model_copy(update={"events": EventsConfig(min_gap_s=0.15)})
    smoothed = online.score([rec], smoothed_config, CLASSES).events
    assert smoothed is not None and (smoothed.overall.detected_events, smoothed.overall.false_alarms) == (
        1,
        0,
    )


def test_a_failed_stream_misses_its_events_and_its_complement_raises_false_alarms() -> None:
    # f0: background 0-4, event 5-9; its complement is active on frames 0-4: one detection, never matched
    labels = event_labels(3, 5)
    score = online.score([synchronous(labels)], CONFIG, CLASSES, [failed(labels_bg_then_event())])
    events = score.events
    assert events is not None and (events.streams, events.failed_streams) == (2, 1)
    assert (events.overall.reference_events, events.overall.matched, events.overall.missed) == (2, 1, 1)
    assert (events.overall.detected_events, events.overall.false_alarms) == (2, 1)
    assert events.hours == pytest.approx(2.0 / 3600)


def test_no_background_no_events_and_the_f1_counts_every_class() -> None:
    labels = event_labels(3, 5)
    score = online.score([synchronous(labels)], CONFIG, ("fake", "real"))
    assert score.events is None and score.events_reason is not None
    assert "no background class" in score.events_reason
    assert score.scored_classes == ["fake", "real"] and score.scored_rule == "every class"


def test_the_data_sets_background_is_named_by_the_caller() -> None:
    # the VAD example's classes: the background is "non-speech", which only the data set knows
    labels = event_labels(3, 5)
    score = online.score([synchronous(labels)], CONFIG, ("non-speech", "speech"), background="non-speech")
    assert score.scored_classes == ["speech"] and score.scored_rule is not None
    assert "positive class 'speech'" in score.scored_rule
    assert score.events is not None and [c.name for c in score.events.classes] == ["speech"]


def test_a_binary_tasks_f1_is_the_positive_classs_by_default() -> None:
    """The model says "event" on frames 2-5 for the event 3-5 (one frame early). Over both classes (one
    label a frame) every error is a FP and a FN: micro F1 = accuracy = 9/10. The event class alone:
    TP 3, FP 1, FN 0, F1 = 6/7."""
    labels = event_labels(3, 5)
    said = event_labels(2, 5)
    rec = recording(list(range(10)), list(range(10)), one_hot_scores(said), labels)
    score = online.score([rec], CONFIG, CLASSES)
    assert score.scored_classes == ["event"] and score.classes == ["background", "event"]
    p = point(score, 0, "strict")
    assert p.f1_micro == pytest.approx(6 / 7, abs=1e-8) and p.f1_macro == pytest.approx(6 / 7, abs=1e-8)
    assert p.f1_micro_all_classes == pytest.approx(0.9, abs=1e-8) and p.accuracy == pytest.approx(0.9)
    assert score.f1_at(0) == p.f1_micro == pytest.approx(score.headline.f1_strict[0].estimate)
    assert score.overall.accuracy.segment_f1_micro_all_classes is not None
    both = online.score([rec], CONFIG.model_copy(update={"binary_f1": "all_classes"}), CLASSES)
    assert both.scored_classes == ["background", "event"]
    assert point(both, 0, "strict").f1_micro == pytest.approx(0.9, abs=1e-8)
    assert both.headline.f1_strict[0].estimate == pytest.approx(0.9, abs=1e-8)
    # an explicit exclusion is scored as given
    excluded = online.score([rec], CONFIG.model_copy(update={"exclude_classes": ("background",)}), CLASSES)
    assert excluded.scored_classes == ["event"] and excluded.classes == ["event"]
    assert excluded.scored_rule == "every class but the excluded ['background']"
    assert point(excluded, 0, "strict").f1_micro == pytest.approx(6 / 7, abs=1e-8)


def test_more_than_two_classes_leave_the_background_out_of_f1_and_give_events_per_class() -> None:
    classes = ("background", "dog", "cat")
    labels = np.zeros((10, 3), dtype=bool)
    labels[:, 0] = True
    labels[2:4] = [False, True, False]
    labels[6:9] = [False, False, True]
    score = online.score([synchronous(labels)], CONFIG, classes)
    # one rule for binary and multi-class tasks: the background named by the data is left out of F1
    assert score.scored_classes == ["dog", "cat"]
    assert (
        score.scored_rule is not None and "['dog', 'cat'], micro and macro (background" in score.scored_rule
    )
    everything = online.score(
        [synchronous(labels)], CONFIG.model_copy(update={"binary_f1": "all_classes"}), classes
    )
    assert everything.scored_classes == list(classes) and "background included" in str(everything.scored_rule)
    assert score.events is not None and [c.name for c in score.events.classes] == ["dog", "cat"]
    assert [c.matched for c in score.events.classes] == [1, 1] and score.events.macro_f1 == 1.0
    assert score.events.overall.onset_delay is not None and score.events.overall.onset_delay.n == 2


def test_a_model_that_never_answers_has_no_detection() -> None:
    labels = event_labels(3, 5)
    rec = recording([], [], np.zeros((0, 2)), labels)
    events = online.score([rec], CONFIG, CLASSES).events
    assert events is not None and (events.overall.detected_events, events.overall.missed) == (0, 1)
    assert events.overall.precision is None and events.overall.recall == 0.0 and events.overall.f1 is None


def test_every_new_result_field_is_defined_in_the_metrics_page() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    models = [EventFigures, ClassEventFigures, DelayFigures, EventsConfig]
    names = {name for model in models for name in model.model_fields}
    names |= {"scored_classes", "scored_rule", "events", "events_reason", "binary_f1"}
    names |= set(CurvePoint.model_fields) | set(AccuracyFigures.model_fields) - {"curves", "num_frames"}
    assert set(OnlineScore.model_fields) >= {"scored_classes", "events", "events_reason"}
    missing = sorted(n for n in names if not re.search(rf"`[^`]*\b{re.escape(n)}\b[^`]*`", page))
    assert missing == []
