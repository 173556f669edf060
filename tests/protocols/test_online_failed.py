"""Issue 24 item 5: a stream the adapter failed on is scored as answered wrongly (the complement of its
reference on every unit), never dropped, and failing never scores above any answer the model could give.

Streams run at 10 frames/s (frame i arrives at (i + 1) * 100 ms), segments of 500 ms, as in
tests/protocols/test_online.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols import online
from streambench.protocols.online import DecisionRule, OnlineConfig, OnlineScore
from streambench.protocols.recording import (
    FailedStream,
    StreamRecording,
    failed_from_arrays,
    failed_to_arrays,
)
from tests.protocols.test_online import CLASSES, MS, labels_bg_then_event, one_hot_scores, point, recording

CONFIG = OnlineConfig(bootstrap_resamples=50)


def failed(
    labels: np.ndarray, stream_id: str = "f0", role: str = "test", frame: int | None = 3
) -> FailedStream:
    t = labels.shape[0]
    return FailedStream(
        stream_id=stream_id,
        role=role,  # type: ignore[arg-type]
        t0_ns=0,
        segment_length_ns=500 * MS,
        frame_times_ns=(np.arange(t, dtype=np.int64) + 1) * 100 * MS,
        labels=labels,
        frame=frame,
        error="AdapterCallError: predict() raised RuntimeError: boom",
    )


def perfect(labels: np.ndarray, stream_id: str = "s0", role: str = "test") -> StreamRecording:
    n = labels.shape[0]
    return recording(list(range(n)), list(range(n)), one_hot_scores(labels), labels, stream_id, role)


def silent(labels: np.ndarray, stream_id: str) -> StreamRecording:
    """A stream answered with nothing at all (no prediction)."""
    return recording([], [], np.zeros((0, labels.shape[1])), labels, stream_id)


def test_a_failed_stream_is_scored_as_the_complement_of_its_labels_worked_example() -> None:
    """Stream s0 answered perfectly, stream f0 (5 background frames, then 5 event frames) failed.

    f0 as the complement: frames 0-4 predict {event} (background FN, event FP), frames 5-9 predict
    {background} (background FP, event FN). Frames: TP = 10 (s0), FP = 10, FN = 10, so F1 = 20 / 40 =
    0.5 micro, per class 10 / 20 = 0.5 macro; accuracy 10 / 20. Segments (2 per stream): TP 2, FP 2, FN 2,
    F1 0.5. Dropping f0 would give 1.0 and predicting nothing on it 20 / 30."""
    labels = labels_bg_then_event()
    score = online.score([perfect(labels)], CONFIG, CLASSES, [failed(labels)])
    for mode in ("strict", "early_ok"):
        for delta in CONFIG.deltas_ms:
            p = point(score, delta, mode)
            assert p.f1_micro == pytest.approx(0.5, abs=1e-8) and p.f1_macro == pytest.approx(0.5, abs=1e-8)
            assert p.accuracy == 0.5 and p.answered == 0.5  # f0 answered nothing, and is never right
            seg = point(score, delta, mode, "segment")
            assert seg.f1_micro == pytest.approx(0.5, abs=1e-8) and seg.accuracy == 0.5
    overall = score.overall.accuracy
    assert (overall.num_frames, overall.num_segments) == (20, 4)
    assert overall.frame_accuracy == 0.5 and overall.segment_f1_micro == pytest.approx(0.5, abs=1e-8)
    assert score.headline.f1_strict[0].estimate == pytest.approx(0.5, abs=1e-8)
    assert score.headline.f1_strict[0].n_streams == 2
    assert [s.stream_id for s in score.streams] == ["s0"]  # the measured streams, with their speed
    (listed,) = score.failed
    assert listed.model_dump() == {
        "stream_id": "f0",
        "num_frames": 10,
        "num_segments": 2,
        "frame": 3,
        "error": "AdapterCallError: predict() raised RuntimeError: boom",
    }
    assert any(
        "1 test stream(s) failed (10 frames): scored as answered wrongly" in w
        for w in score.headline.warnings
    )
    assert score.overall.speed.latency.n == 10  # latency over the frames measured only

    dropped = online.score([perfect(labels)], CONFIG, CLASSES)
    assert dropped.f1_at(0) == pytest.approx(1.0, abs=1e-8)
    nothing = online.score([perfect(labels), silent(labels, "f0")], CONFIG, CLASSES)
    assert nothing.f1_at(0) == pytest.approx(2 / 3, abs=1e-8)  # silence beats the complement under F1
    assert score.f1_at(0) < nothing.f1_at(0) < dropped.f1_at(0)


def test_an_empty_reference_is_answered_with_every_class() -> None:
    """A failed frame whose reference is empty counts a false positive for every scored class; the
    excluded classes stay out. Classes (a, b, c), c excluded; s0 perfect on frames labelled {a}; f0's 4
    frames have no label: FP 2 each (a, b), so F1 = 2 * 4 / (2 * 4 + 8) = 0.5."""
    classes = ("a", "b", "c")
    labels = np.zeros((4, 3), dtype=bool)
    labels[:, 0] = True
    config = CONFIG.model_copy(update={"exclude_classes": ("c",)})
    score = online.score([perfect(labels)], config, classes, [failed(np.zeros((4, 3), dtype=bool))])
    assert score.f1_at(0) == pytest.approx(0.5, abs=1e-8)
    assert point(score, 0, "strict").accuracy == 0.5


@pytest.mark.parametrize("trial", range(12))
def test_failing_never_scores_above_any_answer(trial: int) -> None:
    """Random references, random answers (some late, some missing) and a random set of failed streams:
    every F1 and accuracy figure with those streams failed is at most the same figure with them
    answered, whatever the answer, and at most the figure with them answered by nothing."""
    rng = np.random.default_rng(trial)
    n_streams, frames, classes = 5, 10, ("a", "b", "c")
    recs, labels = [], []
    for k in range(n_streams):
        gt = rng.random((frames, 3)) < 0.4
        emitted = np.sort(rng.choice(frames, size=rng.integers(0, frames + 1), replace=False))
        refers = np.maximum(emitted - rng.integers(0, 3, size=emitted.size), 0)
        scores = rng.random((emitted.size, 3)).astype(np.float32)
        recs.append(recording(list(emitted), list(refers), scores, gt, f"s{k}"))
        labels.append(gt)
    fail = rng.random(n_streams) < 0.5
    fail[0] = False  # at least one measured stream
    fail[-1] = True  # at least one failed one
    answered = online.score(recs, CONFIG, classes)
    as_failed = online.score(
        [r for r, f in zip(recs, fail, strict=True) if not f],
        CONFIG,
        classes,
        [failed(labels[k], f"s{k}") for k in np.flatnonzero(fail)],
    )
    silence = online.score(
        [r if not f else silent(labels[k], f"s{k}") for k, (r, f) in enumerate(zip(recs, fail, strict=True))],
        CONFIG,
        classes,
    )
    assert as_failed.overall.accuracy.num_frames == answered.overall.accuracy.num_frames
    for other in (answered, silence):
        a, b = as_failed.overall.accuracy, other.overall.accuracy
        assert a.frame_accuracy <= b.frame_accuracy
        assert a.segment_f1_micro <= b.segment_f1_micro + 1e-12
        assert a.segment_f1_macro <= b.segment_f1_macro + 1e-12
        for unit in ("frame", "segment", "frame_replay"):
            for mode in ("strict", "early_ok"):
                for p, q in zip(a.curves[unit][mode], b.curves[unit][mode], strict=True):
                    assert p.f1_micro <= q.f1_micro + 1e-12 and p.f1_macro <= q.f1_macro + 1e-12
                    assert p.accuracy <= q.accuracy


def test_failed_validation_streams_fit_no_threshold() -> None:
    labels = labels_bg_then_event()
    rule = OnlineConfig(decision=DecisionRule(kind="per_class", threshold=0.5), bootstrap_resamples=20)
    val = perfect(labels, "v1", "validation")
    some = online.score([perfect(labels), val], rule, CLASSES, [failed(labels, "v0", "validation")])
    assert some.decision.fitted_on == ["v1"] and some.failed == []  # a validation stream is not scored
    assert any("fitted on the others" in w for w in some.headline.warnings)
    none = online.score([perfect(labels)], rule, CLASSES, [failed(labels, "v0", "validation")])
    assert none.decision.fitted_on == [] and none.decision.thresholds == [0.5, 0.5]
    assert any("the fixed threshold 0.5 stands in" in w for w in none.headline.warnings)
    with pytest.raises(ValueError, match="needs validation streams"):
        online.score([perfect(labels)], rule, CLASSES)


def test_a_failed_stream_counts_in_the_paced_unit_of_a_paced_run() -> None:
    labels = labels_bg_then_event()
    rec = perfect(labels)
    rec.paced_start_ns = (np.arange(10, dtype=np.int64) + 1) * 100 * MS  # each started on arrival
    rec.paced_policy = "queue"
    score = online.score([rec], CONFIG, CLASSES, [failed(labels)])
    paced = point(score, 1000, "strict", "frame_paced")
    assert paced.f1_micro == pytest.approx(0.5, abs=1e-8) and paced.accuracy == 0.5


def test_failed_streams_round_trip_through_arrays_and_old_scores_load() -> None:
    labels = labels_bg_then_event()
    items = [failed(labels, "f0"), failed(labels[:4], "f1", "validation", None)]
    back = failed_from_arrays(failed_to_arrays(items))
    assert [(f.stream_id, f.role, f.frame, f.error, f.segment_length_ns) for f in back] == [
        (f.stream_id, f.role, f.frame, f.error, f.segment_length_ns) for f in items
    ]
    assert all(np.array_equal(a.labels, b.labels) for a, b in zip(back, items, strict=True))
    assert failed_from_arrays({}) == []
    # a score written before failed streams were scored has no "failed" list: it loads, empty
    raw = online.score([perfect(labels)], CONFIG, CLASSES).model_dump(mode="json")
    raw.pop("failed")
    assert OnlineScore.model_validate(raw).failed == []
