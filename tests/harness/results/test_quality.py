"""The measurement-quality verdict (harness/results/quality.py), judged on synthetic data."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.harness.results.quality import QualityLimits, judge_quality, refusal


def test_quality_verdict_reasons() -> None:
    rng = np.random.default_rng(0)
    clean = rng.normal(1e6, 2e4, 1000)
    good = judge_quality(clean, streams=4, involuntary_switches=3, clock_resolution_ns=1.0)
    assert good.verdict == "VALID" and good.reasons == [] and good.notes == []
    busy = judge_quality(clean, streams=4, involuntary_switches=100, clock_resolution_ns=1.0)
    assert busy.verdict == "VALID" and "machine busy" in busy.notes[0]
    assert busy.preempted_share == pytest.approx(0.1)
    preempted = judge_quality(clean, streams=4, involuntary_switches=900, clock_resolution_ns=1.0)
    assert preempted.verdict == "INVALID" and "involuntary" in preempted.reasons[0]
    few = judge_quality(clean[:50], streams=1, involuntary_switches=0, clock_resolution_ns=1.0)
    assert few.verdict == "INVALID" and few.reasons == [
        "p99 of 50 frames is not a percentile: it needs at least 100 frames"
    ]
    spread = np.concatenate([clean, clean * 4])
    wide = judge_quality(spread, streams=4, involuntary_switches=0, clock_resolution_ns=1.0)
    assert wide.verdict == "INVALID" and "spread" in wide.reasons[0]
    coarse = judge_quality(clean, streams=4, involuntary_switches=0, clock_resolution_ns=1e5)
    assert coarse.verdict == "INVALID" and "resolution" in coarse.reasons[0]
    unknown = judge_quality(clean, streams=4, involuntary_switches=None, clock_resolution_ns=None)
    assert unknown.preempted_share is None and unknown.preempted_reason
    strict = judge_quality(clean, 4, 100, 1.0, limits=QualityLimits(max_preempted_share=0.05))
    assert strict.verdict == "INVALID"
    assert refusal({"base": good, "head": None}) is None
    message = refusal({"base": good, "head": few})
    assert message is not None and "head: p99 of 50 frames" in message and "--force" in message
