"""The session's own audit, planned and judged (protocols/session_audit.py; issue 24 item 6): the plan
draws distinct sources, cuts inside the stream and positions among the scored streams from its seed;
the judge passes equal copies, fails a copy that differs before its cut, and pairs failures."""

from __future__ import annotations

import numpy as np

from streambench.protocols.recording import StreamRecording
from streambench.protocols.session_audit import (
    AuditVariant,
    SessionAuditConfig,
    judge_session_audit,
    plan_session_audit,
)


def _recording(scores: np.ndarray, stream_id: str = "a") -> StreamRecording:
    n = scores.shape[0]
    return StreamRecording(
        stream_id=stream_id,
        role="test",
        t0_ns=0,
        segment_length_ns=None,
        frame_times_ns=np.arange(1, n + 1, dtype=np.int64) * 40_000_000,
        labels=np.zeros((n, 2), dtype=bool),
        latency_ns=np.zeros(n, dtype=np.int64),
        emitted_at=np.arange(n, dtype=np.int64),
        refers_to=np.arange(n, dtype=np.int64),
        scores=scores.astype(np.float32),
    )


def test_the_plan_draws_distinct_sources_cuts_inside_and_positions_among_the_streams() -> None:
    streams = [(f"s{k}", 50 + k) for k in range(30)]
    config = SessionAuditConfig(share=0.1, minimum=2)
    variants = plan_session_audit(streams, seed=7, config=config)
    assert len(variants) == 3  # ceil(0.1 * 30)
    assert len({v.source for v in variants}) == 3
    frames = dict(streams)
    for v in variants:
        assert 0 <= v.before <= 30
        assert v.cut is None if v.kind == "replay" else 0 <= v.cut <= frames[v.source] - 2  # type: ignore[operator]
    assert {v.kind for v in variants} == {"replay", "occlusion"}
    assert plan_session_audit(streams, seed=7, config=config) == variants  # the seed reproduces it
    assert plan_session_audit(streams, seed=8, config=config) != variants
    assert len(plan_session_audit(streams[:1], seed=1, config=config)) == 1  # never more than the streams
    assert plan_session_audit([], seed=1, config=config) == []


def test_the_judge_passes_equal_copies_and_fails_one_that_differs_before_its_cut() -> None:
    rng = np.random.default_rng(0)
    scores = rng.random((20, 2))
    scored = {"a": _recording(scores)}
    config = SessionAuditConfig()
    later = scores.copy()
    later[10:] += 0.5  # differs only after frame 9
    replay = AuditVariant(source="a", kind="replay", before=0)
    cut9 = AuditVariant(source="a", kind="occlusion", cut=9, before=1)
    cut12 = AuditVariant(source="a", kind="occlusion", cut=12, before=1)
    ok = judge_session_audit(scored, {}, [(replay, _recording(scores)), (cut9, _recording(later))], config, 1)
    assert ok.passed is True and len(ok.checks) == 2
    bad = judge_session_audit(scored, {}, [(cut12, _recording(later))], config, 1)
    assert bad.passed is False and bad.checks[0].first_frame == 10 and bad.checks[0].first_stream == "a"
    changed = judge_session_audit(scored, {}, [(replay, _recording(later))], config, 1)
    assert changed.passed is False


def test_failures_are_paired_a_copy_that_answers_what_the_scored_run_failed_is_a_finding() -> None:
    scores = np.full((5, 2), 0.5)
    config = SessionAuditConfig()
    replay = AuditVariant(source="a", kind="replay", before=0)
    failed = {"a": (2, "frame 2: raised")}
    answered = judge_session_audit({}, failed, [(replay, _recording(scores))], config, 1)
    assert answered.passed is False and "differently when audited" in answered.checks[0].detail
    both = judge_session_audit({}, failed, [(replay, "frame 2: raised")], config, 1)
    assert both.passed is True
    # an occluded copy may answer where the source failed after its cut (frames it does not share) ...
    cut1 = AuditVariant(source="a", kind="occlusion", cut=1, before=0)
    assert judge_session_audit({}, failed, [(cut1, _recording(scores))], config, 1).passed is True
    # ... not where the source failed on the prefix they share
    cut3 = AuditVariant(source="a", kind="occlusion", cut=3, before=0)
    assert judge_session_audit({}, failed, [(cut3, _recording(scores))], config, 1).passed is False
    copy_failed = judge_session_audit({"a": _recording(scores)}, {}, [(replay, "frame 0: raised")], config, 1)
    assert copy_failed.passed is False
    nothing = judge_session_audit({}, {}, [(replay, _recording(scores))], config, 1)
    assert nothing.passed is None and nothing.skipped
