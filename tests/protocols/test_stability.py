"""The stability protocol (seed 000 §1-5 over recordings) against a small case computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols.recording import StreamRecording, StreamRole
from streambench.protocols.stability import StabilityConfig, frame_features, relation, score

# stream A (K = 2): {0,1} {1,2} {1,2} {3,4} {0,1}; stream B: {0,1} three times
A = [[0, 1], [1, 2], [1, 2], [3, 4], [0, 1]]
B = [[0, 1], [1, 0], [0, 1]]


def recording(
    stream_id: str,
    features: np.ndarray | None,
    refers_to: list[int] | None = None,
    num_frames: int | None = None,
    role: StreamRole = "test",
) -> StreamRecording:
    p = 0 if features is None else len(features)
    refs = np.arange(p) if refers_to is None else np.asarray(refers_to)
    t = num_frames if num_frames is not None else p
    return StreamRecording(
        stream_id=stream_id,
        role=role,
        t0_ns=0,
        segment_length_ns=None,
        frame_times_ns=np.arange(1, t + 1, dtype=np.int64) * 40_000_000,
        labels=np.zeros((t, 2), dtype=bool),
        latency_ns=np.ones(t, dtype=np.int64),
        emitted_at=refs.astype(np.int64),
        refers_to=refs.astype(np.int64),
        scores=np.zeros((p, 2), dtype=np.float32),
        features=features,
    )


def hand_case() -> list[StreamRecording]:
    return [recording("A", np.array(A, dtype=np.int64)), recording("B", np.array(B, dtype=np.int64))]


def test_hand_computed_per_stream_and_overall() -> None:
    report = score(hand_case(), StabilityConfig())
    assert (report.k, report.num_features, report.feature_kind) == (2, 5, "indices")
    a, b = (s.figures for s in report.streams)
    # A: steps J = 1/3, 1, 0, 0; flips 2, 0, 4, 4; new 1, 0, 2, 2 (of K = 2)
    assert a.jaccard == pytest.approx(1 / 3)
    assert a.flips == 2.5
    assert a.turnover == pytest.approx(0.625)
    # A's runs: f0 [1, 1], f1 [3, 1], f2 [2], f3 [1], f4 [1]
    assert (a.num_runs, a.num_transient_runs) == (7, 5)
    assert a.lifetime_runs == pytest.approx(10 / 7)
    assert a.lifetime_per_feature == pytest.approx(7 / 5)
    assert a.transient_ratio == pytest.approx(5 / 7)
    assert a.relation.bound == pytest.approx(8 / 3)  # 2·2·(1 − 1/3)
    assert a.relation.ratio == pytest.approx(2.5 / (8 / 3))
    # B: nothing changes; two runs of 3
    assert (b.jaccard, b.flips, b.turnover, b.lifetime_runs, b.transient_ratio) == (1.0, 0.0, 0.0, 3.0, 0.0)
    assert b.relation.bound == 0.0 and b.relation.ratio is None
    # overall: 6 steps pooled, 9 runs pooled (f0 [1, 1, 3], f1 [3, 1, 3], f2 [2], f3 [1], f4 [1])
    o = report.overall
    assert (o.num_frames, o.num_steps, o.num_runs, o.num_transient_runs) == (8, 6, 9, 5)
    assert o.jaccard == pytest.approx(5 / 9)
    assert o.flips == pytest.approx(5 / 3)
    assert o.turnover == pytest.approx(5 / 12)
    assert o.lifetime_runs == pytest.approx(16 / 9)
    assert o.lifetime_per_feature == pytest.approx(8 / 5)
    assert o.transient_ratio == pytest.approx(5 / 9)
    assert o.relation.bound == pytest.approx(16 / 9)  # 2K(1 − J) = 4 · 4/9
    assert o.relation.exact_k == pytest.approx(8 / 7)  # (16/9) / (1 + 5/9)
    assert o.relation.ratio == pytest.approx(15 / 16)


def test_activation_vectors_with_threshold_give_the_same_figures() -> None:
    rng = np.random.default_rng(0)
    recs = []
    for sid, rows in (("A", A), ("B", B)):
        dense = rng.uniform(0.0, 0.1, size=(len(rows), 7))  # below the threshold: inactive
        np.put_along_axis(dense, np.array(rows), rng.uniform(0.5, 1.0, size=(len(rows), 2)), axis=1)
        recs.append(recording(sid, dense))
    active = score(recs, StabilityConfig(feature_kind="active", threshold=0.2))
    indices = score(hand_case(), StabilityConfig())
    assert (active.k, active.num_features) == (2, 7)  # K: the largest frame; D: the vector length
    assert active.overall.model_dump() == indices.overall.model_dump()
    # at threshold 0 every value is active: nothing ever changes, and K becomes 7
    everything = score(recs, StabilityConfig(feature_kind="active"))
    assert (everything.k, everything.overall.jaccard, everything.overall.flips) == (7, 1.0, 0.0)
    # an explicit K changes turnover (new / K) and the relation, not Jaccard or flips
    wide = score(recs, StabilityConfig(feature_kind="active", threshold=0.2, k=4))
    assert wide.overall.turnover == pytest.approx(indices.overall.turnover / 2)
    assert wide.overall.relation.bound == pytest.approx(2 * 4 * (1 - 5 / 9))
    with pytest.raises(ValueError, match="k=1 is smaller than the 2 active"):
        score(recs, StabilityConfig(feature_kind="active", threshold=0.2, k=1))


def test_latest_prediction_per_frame_and_frames_without_features() -> None:
    # frame 1 labelled twice (the later row counts), frame 3 never: rows for frames 0, 1, 2, 4
    feats = np.array([[0, 1], [7, 8], [1, 2], [1, 2], [0, 1]], dtype=np.int64)
    rec = recording("C", feats, refers_to=[0, 1, 1, 2, 4], num_frames=5)
    rows, missing = frame_features(rec)
    np.testing.assert_array_equal(rows, [[0, 1], [1, 2], [1, 2], [0, 1]])
    assert missing == 1
    report = score([rec], StabilityConfig(num_features=10))
    assert report.streams[0].frames_without_features == 1
    assert report.num_features == 10
    assert report.overall.flips == pytest.approx((2 + 0 + 2) / 3)


def test_what_is_scored_and_what_is_skipped() -> None:
    recs = [
        *hand_case(),
        recording("short", np.array([[0, 1]], dtype=np.int64)),
        recording("val", np.array([[5, 6], [7, 8]], dtype=np.int64), role="validation"),
    ]
    report = score(recs, StabilityConfig(per_stream=False))
    assert report.streams == []
    assert report.skipped == {"short": "1 frame(s) with features: no adjacent pair"}
    assert report.overall.jaccard == pytest.approx(5 / 9)  # validation streams are not scored
    with pytest.raises(ValueError, match="no features were recorded"):
        score([recording("none", None, num_frames=3)], StabilityConfig())
    with pytest.raises(ValueError, match="outside num_features=4"):
        score(hand_case(), StabilityConfig(num_features=4))
    with pytest.raises(ValueError, match="integer features"):
        score([recording("f", np.array(A, dtype=np.float32))], StabilityConfig())
    with pytest.raises(ValueError, match="stream 'dup': features: indices must be distinct"):
        score([recording("dup", np.array([[0, 1], [2, 2]], dtype=np.int64))], StabilityConfig())
    with pytest.raises(ValueError, match="no test stream has two frames"):
        score([recs[2]], StabilityConfig())


def test_relation_matches_the_seed_figure() -> None:
    # seed 000 "数学关系" 1: Window TopK, Jaccard 0.849, K = 128 -> 2K(1 − J) = 38.7; measured flips 4.66
    rel = relation(4.66, 0.849, 128)
    assert round(rel.bound or 0.0, 1) == 38.7
    assert rel.ratio == pytest.approx(4.66 / 38.656)
    assert relation(1.0, float("nan"), 4).bound is None


def test_turnover_skips_the_steps_into_an_empty_frame() -> None:
    """Seed 000 §4 defines turnover for a non-empty Top-K only: a step into a frame with no active feature
    is undefined, left out of the mean (as Jaccard leaves out its undefined steps), not counted as 0."""
    # active sets: {0,1} {0,2} {} {0,1}; steps: new {2}/2 = 0.5, undefined, new {0,1}/2 = 1.0
    dense = np.zeros((4, 3))
    for frame, active in enumerate([[0, 1], [0, 2], [], [0, 1]]):
        dense[frame, active] = 1.0
    report = score([recording("E", dense)], StabilityConfig(feature_kind="active", threshold=0.5))
    assert report.overall.turnover == pytest.approx(0.75)  # (0.5 + 1.0) / 2, not (0.5 + 0 + 1.0) / 3
    # no defined step at all: no number, not 0
    empty_after = np.zeros((2, 3))
    empty_after[0, 0] = 1.0
    alone = score([recording("F", empty_after)], StabilityConfig(feature_kind="active", threshold=0.5, k=1))
    assert alone.overall.turnover is None
