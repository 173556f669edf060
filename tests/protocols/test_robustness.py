"""The robustness protocol (protocols/robustness.py): its plan, and the score of a stream failed under a
perturbation."""

from __future__ import annotations

import pytest

from streambench.protocols import online
from streambench.protocols.robustness import Failure, RobustnessConfig, plan, score
from tests.protocols.test_online import labels_bg_then_event
from tests.protocols.test_online_failed import failed, perfect


def test_plan_has_the_seed_default_points() -> None:
    variants = plan(RobustnessConfig())
    assert [v.name for v in variants][:2] == ["clean", "Missing-Rate@10% (visual, none)"]
    by_axis = {
        axis: [v.value for v in variants if v.axis == axis] for axis in ("missing", "audio_delay", "jitter")
    }
    assert by_axis == {
        "missing": [10, 20, 30, 50],
        "audio_delay": [0, 50, 100, 200, 500],
        "jitter": [0, 10, 20, 50],
    }
    with pytest.raises(ValueError, match="report_delta_ms"):
        RobustnessConfig(report_delta_ms=7)


def test_a_stream_failed_under_a_perturbation_counts_as_answered_wrongly() -> None:
    """One stream answered perfectly, one failed: the point's F1 is the online F1 with the failed stream
    as the complement of its labels (0.5, tests/protocols/test_online_failed.py), not 1.0 (dropped)."""
    labels = labels_bg_then_event()
    config = RobustnessConfig(missing_rates_pct=(30,), audio_delays_ms=(), jitters_ms=())
    variants = plan(config)
    outcomes = {
        variants[0].name: ([perfect(labels), perfect(labels, "s1")], []),
        variants[1].name: ([perfect(labels)], [failed(labels, "s1", frame=2)]),
    }
    report = score(outcomes, variants, config, ("background", "event"))
    point = report.points[0]
    assert report.clean.f1 == pytest.approx(1.0, abs=1e-8) and point.f1 == pytest.approx(0.5, abs=1e-8)
    assert point.accuracy == 0.5 and point.abs_drop == pytest.approx(0.5, abs=1e-8)
    assert point.failures == [Failure(stream_id="s1", frame=2, error=failed(labels).error)]
    assert point.score is not None and [f.stream_id for f in point.score.failed] == ["s1"]
    dropped = online.score([perfect(labels)], config.online, ("background", "event"))
    assert dropped.f1_at(0) > point.f1
