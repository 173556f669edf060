"""The online protocol's plan and score on hand-built recordings.

Seed 004 §6.2.2 and DESIGN.md "Time and delay" define the semantics.

Every stream below runs at 10 frames/s: frame i arrives at (i + 1) * 100 ms.
"""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols import online
from streambench.protocols.online import DecisionRule, OnlineConfig
from streambench.protocols.recording import StreamRecording, from_arrays, to_arrays

CLASSES = ("background", "event")
MS = 1_000_000


def labels_bg_then_event(num_frames: int = 10, event_from: int = 5) -> np.ndarray:
    labels = np.zeros((num_frames, 2), dtype=bool)
    labels[:event_from, 0] = True
    labels[event_from:, 1] = True
    return labels


def recording(
    emitted_at: list[int],
    refers_to: list[int],
    scores: np.ndarray | list[list[float]],
    labels: np.ndarray | None = None,
    stream_id: str = "s0",
    role: str = "test",
    latency_ms: float = 10.0,
    segment_ms: int | None = 500,
) -> StreamRecording:
    labels = labels_bg_then_event() if labels is None else labels
    t = labels.shape[0]
    return StreamRecording(
        stream_id=stream_id,
        role=role,  # type: ignore[arg-type]
        t0_ns=0,
        segment_length_ns=None if segment_ms is None else segment_ms * MS,
        frame_times_ns=(np.arange(t, dtype=np.int64) + 1) * 100 * MS,
        labels=labels,
        latency_ns=np.full(t, round(latency_ms * MS), dtype=np.int64),
        emitted_at=np.asarray(emitted_at, dtype=np.int64),
        refers_to=np.asarray(refers_to, dtype=np.int64),
        scores=np.asarray(scores, dtype=np.float32),
    )


def one_hot_scores(labels: np.ndarray) -> np.ndarray:
    return np.where(labels, 0.9, 0.1).astype(np.float32)


def point(score: online.OnlineScore, delta_ms: float, mode: str, unit: str = "frame") -> online.CurvePoint:
    return next(p for p in score.overall.accuracy.curves[unit][mode] if p.delta_ms == delta_ms)  # type: ignore[index]


CONFIG = OnlineConfig()
BOTH = OnlineConfig(binary_f1="all_classes")
"""Micro F1 over both classes of the binary background/event task: the default before issue 27, when
``binary_f1`` made the positive class's F1 the default (tests that pin the old figure use this)."""


def test_causal_perfect_model_scores_one_at_every_delta() -> None:
    labels = labels_bg_then_event()
    rec = recording(list(range(10)), list(range(10)), one_hot_scores(labels))
    score = online.score([rec], CONFIG, CLASSES)
    for mode in ("strict", "early_ok"):
        for p in score.overall.accuracy.curves["frame"][mode]:  # type: ignore[index]
            assert p.f1_micro == pytest.approx(1.0, abs=1e-8) and p.accuracy == 1.0 and p.answered == 1.0


def test_strict_ignores_anticipation_early_ok_counts_it_within_delta() -> None:
    # at frame i the model labels frame i+1 (delay -100 ms); frame 0 is never labelled
    labels = labels_bg_then_event()
    emitted = list(range(9))
    refers = [i + 1 for i in emitted]
    rec = recording(emitted, refers, one_hot_scores(labels)[refers])
    score = online.score([rec], CONFIG, CLASSES)
    for delta in CONFIG.deltas_ms:
        assert point(score, delta, "strict").f1_micro == 0.0
        assert point(score, delta, "strict").accuracy == 0.0
    assert point(score, 50, "early_ok").f1_micro == 0.0
    # Early-ok at 100 ms over both classes: 9 frames right, frame 0 predicts nothing -> TP 9, FP 0, FN 1
    p, r = 9 / (9 + 1e-9), 9 / (10 + 1e-9)
    both = point(score, 100, "early_ok").f1_micro_all_classes
    assert both == pytest.approx(2 * p * r / (p + r + 1e-9), abs=1e-12)
    # the positive class "event" (frames 5-9, all labelled in time): TP 5, FP 0, FN 0
    p = 5 / (5 + 1e-9)
    assert point(score, 100, "early_ok").f1_micro == pytest.approx(2 * p * p / (2 * p + 1e-9), abs=1e-12)
    assert point(score, 100, "early_ok").accuracy == pytest.approx(0.9)
    assert point(score, 100, "early_ok").answered == pytest.approx(0.9)


def test_lookahead_counts_only_once_delta_covers_it() -> None:
    # a look-ahead of 2 frames: at frame i the label of frame i-2 (delay 200 ms)
    labels = labels_bg_then_event()
    emitted = list(range(2, 10))
    refers = [i - 2 for i in emitted]
    rec = recording(emitted, refers, one_hot_scores(labels)[refers])
    score = online.score([rec], CONFIG, CLASSES)
    both = [p.f1_micro_all_classes for p in score.overall.accuracy.curves["frame"]["strict"]]
    assert both[:3] == [0.0, 0.0, 0.0]  # 0, 50, 100 ms
    assert both[3] == both[4] == both[5] > 0.88  # 8 of 10 frames labelled
    # the positive class: event frames 5-7 labelled, 8-9 never (TP 3, FN 2)
    curve = [p.f1_micro for p in score.overall.accuracy.curves["frame"]["strict"]]
    assert curve[:3] == [0.0, 0.0, 0.0] and curve[3] == curve[5] == pytest.approx(6 / 8, abs=1e-8)
    assert score.f1_at(0) < score.f1_at(500)


def test_latest_prediction_inside_the_window_wins() -> None:
    # frame i: a wrong provisional label for i; frame i+1: the right label for i (delay 100 ms)
    labels = labels_bg_then_event()
    right, wrong = one_hot_scores(labels), one_hot_scores(~labels)
    emitted, refers, scores = [], [], []
    for i in range(10):
        emitted.append(i), refers.append(i), scores.append(wrong[i])
        if i >= 1:
            emitted.append(i), refers.append(i - 1), scores.append(right[i - 1])
    order = np.lexsort((np.arange(len(emitted)), emitted))
    rec = recording(list(np.array(emitted)[order]), list(np.array(refers)[order]), np.array(scores)[order])
    score = online.score([rec], CONFIG, CLASSES)
    assert point(score, 0, "strict").accuracy == 0.0  # only the provisional label is in time
    assert point(score, 50, "strict").accuracy == 0.0
    assert point(score, 100, "strict").accuracy == pytest.approx(0.9)  # frame 9 is never corrected
    assert score.overall.accuracy.frame_accuracy == pytest.approx(0.9)  # offline: latest, any delay


def test_segment_units_are_timed_from_the_segment_last_frame() -> None:
    # 500 ms segments = 5 frames. The model labels only frames 0..3 of segment 0 and 5..8 of segment 1,
    # each at once; the segment's delay is emission time minus the arrival of its last frame (< 0 here).
    labels = labels_bg_then_event()
    frames = [0, 1, 2, 3, 5, 6, 7, 8]
    rec = recording(frames, frames, one_hot_scores(labels)[frames])
    score = online.score([rec], CONFIG, CLASSES)
    assert score.overall.accuracy.num_segments == 2
    assert point(score, 50, "strict", "segment").answered == 0.0
    assert point(score, 100, "early_ok", "segment").accuracy == 1.0  # frame 3 at 400 ms, segment ends 500 ms
    assert point(score, 0, "early_ok", "segment").accuracy == 0.0
    assert score.overall.accuracy.segment_f1_micro == pytest.approx(1.0, abs=1e-8)


def test_macro_f1_and_excluded_classes() -> None:
    # model always says "event": frames 0-4 are wrong (FP event, FN background)
    rec = recording(list(range(10)), list(range(10)), np.tile([0.1, 0.9], (10, 1)))
    score = online.score([rec], BOTH, CLASSES)
    eps = 1e-9
    f1_event = 2 * (5 / (10 + eps)) * (5 / (5 + eps)) / (5 / (10 + eps) + 5 / (5 + eps) + eps)
    assert point(score, 0, "strict").f1_macro == pytest.approx((0.0 + f1_event) / 2, abs=1e-9)
    # micro over both classes: TP 5 (event), FP 5 (event on background), FN 5 (background missed)
    assert point(score, 0, "strict").f1_micro == pytest.approx(0.5, abs=1e-8)
    # the default: a binary task's F1 is the positive class's, micro and macro alike
    positive = online.score([rec], CONFIG, CLASSES)
    assert point(positive, 0, "strict").f1_micro == pytest.approx(f1_event, abs=1e-9)
    assert point(positive, 0, "strict").f1_macro == pytest.approx(f1_event, abs=1e-9)
    assert point(positive, 0, "strict").f1_micro_all_classes == pytest.approx(0.5, abs=1e-8)
    only_event = online.score([rec], OnlineConfig(exclude_classes=("background",)), CLASSES)
    assert only_event.classes == ["event"]
    assert point(only_event, 0, "strict").f1_macro == pytest.approx(f1_event, abs=1e-9)
    assert point(only_event, 0, "strict").accuracy == pytest.approx(0.5)
    with pytest.raises(ValueError, match="exclude_classes: unknown class"):
        online.score([rec], OnlineConfig(exclude_classes=("speech",)), CLASSES)


def test_macro_classes_gives_sed_eval_figure() -> None:
    # the model always says "event" on the background-then-event stream: "event" TP 5, FP 5;
    # "background" present on 5 frames, never predicted (F1 0). The seed's macro averages both classes;
    # sed_eval's class-wise average leaves out a class never predicted, so it is F1(event) alone.
    rec = recording(list(range(10)), list(range(10)), np.tile([0.1, 0.9], (10, 1)))
    eps = 1e-9
    f1_event = 2 * (5 / (10 + eps)) * (5 / (5 + eps)) / (5 / (10 + eps) + 5 / (5 + eps) + eps)
    seed = online.score([rec], BOTH, CLASSES)
    sed = online.score([rec], OnlineConfig(macro_classes="sed_eval", binary_f1="all_classes"), CLASSES)
    assert point(seed, 0, "strict").f1_macro == pytest.approx(f1_event / 2, abs=1e-9)
    assert point(sed, 0, "strict").f1_macro == pytest.approx(f1_event, abs=1e-9)  # 2/3
    assert sed.overall.accuracy.segment_f1_macro == pytest.approx(f1_event, abs=1e-9)
    assert point(sed, 0, "strict").f1_micro == point(seed, 0, "strict").f1_micro  # micro unaffected


def test_one_frame_late_at_30_fps_counts_at_one_frame_period() -> None:
    # issue 25 item 1, as the tester ran it: 30 frames at 30 fps with times recorded as the harness does
    # (nearest ns), "event" on every frame, a model right on every frame but one frame late, Δt = 1000/30
    # ms. Hand values: 29 of 30 frames answered and right -> TP 29, FN 1 -> F1 58/59, Acc 29/30.
    n = 30
    labels = np.zeros((n, 2), dtype=bool)
    labels[:, 1] = True
    times = np.round(np.arange(1, n + 1, dtype=np.float64) / 30.0 * 1e9).astype(np.int64)
    rec = StreamRecording(
        stream_id="s30",
        role="test",
        t0_ns=0,
        segment_length_ns=1_000_000_000,
        frame_times_ns=times,
        labels=labels,
        latency_ns=np.full(n, MS, dtype=np.int64),
        emitted_at=np.arange(1, n, dtype=np.int64),
        refers_to=np.arange(n - 1, dtype=np.int64),
        scores=one_hot_scores(labels)[: n - 1],
    )
    config = OnlineConfig(deltas_ms=(0, 1000 / 30, 50, 100))
    score = online.score([rec], config, CLASSES)
    for mode in ("strict", "early_ok"):
        at_one_period = point(score, 1000 / 30, mode)
        assert at_one_period.answered == pytest.approx(29 / 30)  # was 19/30 = 0.633
        assert at_one_period.accuracy == pytest.approx(29 / 30)
        assert at_one_period.f1_micro == pytest.approx(58 / 59, abs=1e-8)  # 0.983, was 0.776
        assert point(score, 0, mode).answered == 0.0
        assert point(score, 50, mode).f1_micro == at_one_period.f1_micro


def test_micro_f1_aggregates_counts_over_streams() -> None:
    labels = labels_bg_then_event()
    good = recording(list(range(10)), list(range(10)), one_hot_scores(labels), stream_id="good")
    bad = recording(list(range(10)), list(range(10)), one_hot_scores(~labels), stream_id="bad")
    score = online.score([good, bad], CONFIG, CLASSES)
    # good: TP 10; bad: FP 10, FN 10 -> P = 10/20, R = 10/20
    assert point(score, 0, "strict").f1_micro == pytest.approx(0.5, abs=1e-8)
    assert [s.stream_id for s in score.streams] == ["good", "bad"]
    assert score.streams[1].accuracy.curves["frame"]["strict"][0].f1_micro == 0.0


def test_latency_fps_and_rtf() -> None:
    labels = labels_bg_then_event()
    rec = recording(list(range(10)), list(range(10)), one_hot_scores(labels), latency_ms=10.0)
    rec.latency_ns[-1] = 50 * MS
    speed = online.score([rec], CONFIG, CLASSES).overall.speed
    assert speed.latency.n == 10 and speed.latency.max_ms == pytest.approx(50.0)
    assert speed.latency.mean_ms == pytest.approx(14.0)
    assert speed.latency.p50_ms == pytest.approx(10.0)
    assert speed.latency.fps == pytest.approx(1000 / 14.0)
    assert speed.rtf == pytest.approx(0.14 / 1.0)  # 140 ms of processing for a 1 s stream
    assert speed.duration_s == pytest.approx(1.0)


def test_decision_rules_threshold_and_top_k() -> None:
    labels = labels_bg_then_event()
    scores = np.where(labels, 0.45, 0.05).astype(np.float32)  # right ranking, below 0.5
    rec = recording(list(range(10)), list(range(10)), scores)
    assert point(online.score([rec], CONFIG, CLASSES), 0, "strict").f1_micro == 0.0
    low = OnlineConfig(decision=DecisionRule(threshold=0.4))
    assert point(online.score([rec], low, CLASSES), 0, "strict").accuracy == 1.0
    top1 = online.score([rec], OnlineConfig(decision=DecisionRule(kind="top_k", k=1)), CLASSES)
    assert point(top1, 0, "strict").accuracy == 1.0 and top1.decision.k == 1


def test_per_class_thresholds_are_fitted_on_validation_streams_only() -> None:
    config = OnlineConfig(decision=DecisionRule(kind="per_class", validation_fraction=0.25))
    plan = online.plan(config, [f"s{i}" for i in range(8)])
    assert plan == online.plan(config, [f"s{i}" for i in range(8)])
    val, test = plan.ids("validation"), plan.ids("test")
    assert len(val) == 2 and len(test) == 6 and not set(val) & set(test)

    labels = labels_bg_then_event()
    calibrated = np.where(labels, 0.35, 0.25).astype(np.float32)

    def recs(test_scores: np.ndarray) -> list[StreamRecording]:
        return [
            recording(
                list(range(10)),
                list(range(10)),
                calibrated if s.role == "validation" else test_scores,
                stream_id=s.stream_id,
                role=s.role,
            )
            for s in plan.streams
        ]

    a = online.score(recs(calibrated), config, CLASSES)
    b = online.score(recs(np.full((10, 2), 0.99, dtype=np.float32)), config, CLASSES)
    assert a.decision.thresholds == b.decision.thresholds
    assert a.decision.fitted_on == val
    assert all(0.25 < t <= 0.35 for t in a.decision.thresholds or [])
    assert point(a, 0, "strict").accuracy == 1.0
    assert [s.stream_id for s in a.streams] == test


def test_scoring_needs_test_streams_and_segment_length() -> None:
    labels = labels_bg_then_event()
    rec = recording(list(range(10)), list(range(10)), one_hot_scores(labels), role="validation")
    with pytest.raises(ValueError, match="no test stream"):
        online.score([rec], CONFIG, CLASSES)
    no_seg = recording(list(range(10)), list(range(10)), one_hot_scores(labels), segment_ms=None)
    with pytest.raises(ValueError, match="no segment length"):
        online.score([no_seg], CONFIG, CLASSES)
    assert (
        online.score([no_seg], OnlineConfig(segment_length_s=0.5), CLASSES).overall.accuracy.num_segments == 2
    )


def test_config_rejects_unordered_deltas() -> None:
    with pytest.raises(ValueError, match="deltas_ms"):
        OnlineConfig(deltas_ms=(100, 50))


def test_rescoring_saved_arrays_gives_the_same_score() -> None:
    labels = labels_bg_then_event()
    recs = [
        recording(list(range(2, 10)), list(range(8)), one_hot_scores(labels)[:8], stream_id="a"),
        recording(list(range(10)), list(range(10)), one_hot_scores(~labels), stream_id="b"),
    ]
    again = from_arrays(to_arrays(recs))
    assert online.score(again, CONFIG, CLASSES) == online.score(recs, CONFIG, CLASSES)


def test_breakdown_rows_share_the_total_latency() -> None:
    labels = labels_bg_then_event()
    a = recording(list(range(10)), list(range(10)), one_hot_scores(labels), stream_id="a", latency_ms=10.0)
    b = recording(list(range(10)), list(range(10)), one_hot_scores(labels), stream_id="b", latency_ms=10.0)
    a.stage_ns = {"visual": 60 * MS, "audio": 20 * MS}
    b.stage_ns = {"visual": 40 * MS}
    rows = online.score([a, b], CONFIG, CLASSES).overall.speed.breakdown
    assert [r.stage for r in rows] == ["visual", "audio", "(outside stages)"]
    assert [r.ms_per_frame for r in rows] == pytest.approx([5.0, 1.0, 4.0])  # 200 ms over 20 frames
    assert [r.share for r in rows] == pytest.approx([0.5, 0.1, 0.4])
    assert online.score([a], CONFIG, CLASSES).streams[0].speed.breakdown[0].share == pytest.approx(0.6)
    plain = recording(list(range(10)), list(range(10)), one_hot_scores(labels))
    assert online.score([plain], CONFIG, CLASSES).overall.speed.breakdown == []
    again = from_arrays(to_arrays([a, b]))
    assert again[0].stage_ns == a.stage_ns and again[1].stage_ns == b.stage_ns


def test_headline_intervals_and_spread_warning() -> None:
    labels = labels_bg_then_event()
    good = [
        recording(list(range(10)), list(range(10)), one_hot_scores(labels), stream_id=f"g{i}")
        for i in range(6)
    ]
    bad = [
        recording(list(range(10)), list(range(10)), one_hot_scores(~labels), stream_id=f"b{i}")
        for i in range(6)
    ]
    head = online.score(good + bad, CONFIG, CLASSES).headline
    assert [ci.estimate for ci in head.f1_strict] == pytest.approx([0.5] * 6, abs=1e-8)
    assert all(0.0 < ci.low < 0.5 < ci.high < 1.0 for ci in head.f1_strict)  # streams disagree
    assert head.mean_latency_ms.estimate == pytest.approx(10.0) and head.mean_latency_ms.low == pytest.approx(
        10.0
    )
    assert head.rtf.estimate == pytest.approx(0.1)
    assert head.latency_spread == 0.0 and head.warnings == []
    noisy = recording(list(range(10)), list(range(10)), one_hot_scores(labels), stream_id="n")
    noisy.latency_ns[::2] *= 3
    warned = online.score([noisy], CONFIG, CLASSES).headline.warnings
    assert any("spread" in w for w in warned) and any("only 1 test streams" in w for w in warned)


def test_a_model_that_never_predicts_a_label_is_warned_about() -> None:
    """Issue 17: scores all below the threshold give F1 0 with no word; now a warning says why."""
    labels = labels_bg_then_event()
    silent = [
        recording(list(range(10)), list(range(10)), np.full(labels.shape, 0.2), stream_id=f"q{i}")
        for i in range(10)
    ]
    warned = online.score(silent, CONFIG, CLASSES).headline.warnings
    assert any("never predicted a label" in w for w in warned)
    speaking = [
        recording(list(range(10)), list(range(10)), one_hot_scores(labels), stream_id=f"p{i}")
        for i in range(10)
    ]
    assert not any("never predicted" in w for w in online.score(speaking, CONFIG, CLASSES).headline.warnings)


def test_unanswered_units_are_never_hits_even_with_empty_references() -> None:
    # only the background class exists in the reference; scoring without it leaves empty label sets
    labels = np.zeros((10, 2), dtype=bool)
    labels[:, 0] = True
    late = recording(list(range(2, 10)), list(range(8)), one_hot_scores(labels)[:8], labels=labels)
    score = online.score([late], OnlineConfig(exclude_classes=("background",)), CLASSES)
    assert point(score, 0, "strict").accuracy == 0.0 and point(score, 0, "strict").answered == 0.0
    assert point(score, 200, "strict").accuracy == pytest.approx(0.8)


def test_segments_without_frames_are_not_units() -> None:
    labels = labels_bg_then_event()
    rec = recording(list(range(10)), list(range(10)), one_hot_scores(~labels))  # wrong on every frame
    score = online.score([rec], OnlineConfig(segment_length_s=0.03), CLASSES)  # shorter than a frame
    assert score.overall.accuracy.num_segments == 10
    assert point(score, 0, "strict", "segment").accuracy == 0.0


def test_top_k_larger_than_the_classes_is_refused() -> None:
    labels = labels_bg_then_event()
    rec = recording(list(range(10)), list(range(10)), one_hot_scores(labels))
    config = OnlineConfig(decision=DecisionRule(kind="top_k", k=2), exclude_classes=("background",))
    with pytest.raises(ValueError, match=r"decision\.k = 2 is more than the 1 classes"):
        online.score([rec], config, CLASSES)


def test_computation_aware_curve_from_the_replayed_latencies() -> None:
    # frames arrive every 100 ms at 100 (i + 1); predict() takes 150 ms: with a queue, frame i finishes
    # at 250 + 150 i, so its answer is 150 + 50 i ms late on the computation-aware clock
    labels = labels_bg_then_event()
    rec = recording(list(range(10)), list(range(10)), one_hot_scores(labels), latency_ms=150.0)
    score = online.score([rec], CONFIG, CLASSES)
    replay = {p.delta_ms: p.answered for p in score.overall.accuracy.curves["frame_replay"]["strict"]}
    assert replay == pytest.approx({0: 0.0, 50: 0.0, 100: 0.0, 200: 0.2, 500: 0.8, 1000: 1.0})
    assert score.f1_at(0) == pytest.approx(1.0, abs=1e-8)  # the algorithmic clock ignores compute time
    dropped = online.score([rec], OnlineConfig(pacing_policy="drop"), CLASSES)
    answered = dropped.overall.accuracy.curves["frame_replay"]["strict"][-1].answered
    assert 0.0 < answered < 1.0  # drop-to-newest skips frames: they are never answered


def test_replay_figures_deadline_misses_and_waits() -> None:
    labels = labels_bg_then_event()
    slow = recording(list(range(10)), list(range(10)), one_hot_scores(labels), latency_ms=150.0)
    replay = online.score([slow], CONFIG, CLASSES).overall.speed.replay
    # queue: frame i finishes at 250 + 150 i, its deadline is the next arrival 100 (i + 2): all late
    assert replay.deadline_miss_rate == 1.0 and replay.drop_rate == 0.0
    assert replay.mean_wait_ms == pytest.approx(sum(50 * i for i in range(10)) / 10)
    # latency from arrival: wait + 150 ms of compute, i.e. 150 + 50 i ms (no coordinated omission)
    assert replay.p50_response_ms == pytest.approx(np.percentile([150 + 50 * i for i in range(10)], 50))
    fast = recording(list(range(10)), list(range(10)), one_hot_scores(labels), latency_ms=10.0)
    quick = online.score([fast], CONFIG, CLASSES).overall.speed.replay
    assert quick.deadline_miss_rate == 0.0 and quick.mean_wait_ms == 0.0
    assert quick.p95_staleness_ms == pytest.approx(100.0)  # the previous frame's output, 100 ms old


@pytest.mark.parametrize("paced", [False, True], ids=["replayed", "paced"])
def test_a_one_frame_test_stream_is_scored_its_period_its_capture_interval(paced: bool) -> None:
    """A test stream of one frame among others (before: ValueError 'a one-frame stream has no frame
    period: pass deadline_ns' from the replay). Its frame arrives at 100 ms, one capture interval after
    the stream's start: due at 200 ms, it misses with 150 ms of compute, the ten-frame stream (10 ms a
    frame, due at the next arrival) misses none."""
    one_label = np.array([[False, True]])
    one = recording([0], [0], one_hot_scores(one_label), labels=one_label, stream_id="one", latency_ms=150.0)
    ten = recording(list(range(10)), list(range(10)), one_hot_scores(labels_bg_then_event()), stream_id="ten")
    if paced:  # measured on the wall clock: each predict() started at its frame's arrival
        one.paced_start_ns = one.frame_times_ns - one.t0_ns
        ten.paced_start_ns = ten.frame_times_ns - ten.t0_ns
    score = online.score([one, ten], CONFIG, CLASSES)
    replay = score.overall.speed.replay
    assert replay.measured is paced
    assert replay.deadline_miss_rate == pytest.approx(1 / 11)
    alone = online.score([one], CONFIG, CLASSES)
    assert alone.overall.speed.replay.deadline_miss_rate == 1.0
    assert alone.f1_at(1000) == pytest.approx(1.0) and point(alone, 0, "strict").answered == 1.0
