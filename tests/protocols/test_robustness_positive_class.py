"""The robustness protocol's F1 counts the classes the online protocol's F1@Δt counts
(protocols/robustness.py ``score``, ``background``; protocols/online.py, issue 27): in a binary task, two
classes one of them the background, the positive class's F1, not micro over both (the frame accuracy).

One stream of ten frames, classes (silence, speech), the data's background named ``silence`` (as
``audio_files``' ``background_class`` names it; no class is called "background"). Labels: five silence
frames, then five speech frames. The model answers speech at frames 0, 5, 6, 7 and silence elsewhere, each
at its own frame (delay 0). Speech: TP 3 (5, 6, 7), FP 1 (0), FN 2 (8, 9), F1 = 6/9 = 2/3. Micro over
both classes adds silence's TP 4, FP 2, FN 1: TP 7, FP 3, FN 3, F1 = 14/20 = 0.7, the frame accuracy.
"""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols import online
from streambench.protocols.recording import StreamRecording
from streambench.protocols.robustness import F1_NOT_RECORDED, RobustnessConfig, RobustnessReport, plan, score
from tests.protocols.test_online import labels_bg_then_event, recording

CLASSES = ("silence", "speech")
SPEECH_AT = (0, 5, 6, 7)


def answered() -> StreamRecording:
    """The stream of the module docstring, every frame answered at its own arrival."""
    decided = np.zeros((10, 2), dtype=bool)
    decided[list(SPEECH_AT), 1] = True
    decided[:, 0] = ~decided[:, 1]
    scores = np.where(decided, 0.9, 0.1).astype(np.float32)
    return recording(list(range(10)), list(range(10)), scores, labels_bg_then_event())


def _report(**online_config: object) -> RobustnessReport:
    config = RobustnessConfig(
        online=online.OnlineConfig.model_validate({"bootstrap_resamples": 10, **online_config}),
        missing_rates_pct=(30,),
        audio_delays_ms=(),
        jitters_ms=(),
    )
    variants = plan(config)
    outcomes = {v.name: ([answered()], []) for v in variants}
    return score(outcomes, variants, config, CLASSES, background="silence")


def test_robustness_f1_is_online_f1_at_delta_of_the_positive_class() -> None:
    report = _report()
    settings = online.OnlineConfig(bootstrap_resamples=10)
    by_online = online.score([answered()], settings, CLASSES, background="silence").f1_at(0)
    for point in (report.clean, *report.points):
        assert point.f1 == pytest.approx(2 / 3, abs=1e-9) and point.f1 == pytest.approx(by_online)
        assert point.accuracy == pytest.approx(0.7)
        assert point.score is not None and point.score.scored_classes == ["speech"]
    # micro over every class (what the robustness F1 was on such data before): 0.7, the frame accuracy
    everything = online.score([answered()], settings, CLASSES).f1_at(0)  # no class named "background"
    assert everything == pytest.approx(0.7) and report.clean.f1 != pytest.approx(everything)
    assert report.f1_counts.startswith("binary task: F1 of the positive class 'speech' (background 'silence'")


def test_binary_f1_all_classes_and_exclude_classes_follow_online() -> None:
    both = _report(binary_f1="all_classes")
    assert both.clean.f1 == pytest.approx(0.7) and "binary_f1 = 'all_classes'" in both.f1_counts
    speech = _report(exclude_classes=("silence",))
    assert speech.clean.f1 == pytest.approx(2 / 3) and "excluded ['silence']" in speech.f1_counts


def test_a_report_written_before_the_rule_reads_with_not_recorded() -> None:
    tree = _report().model_dump(mode="json")
    del tree["f1_counts"]
    old = RobustnessReport.model_validate(tree)
    assert old.f1_counts == F1_NOT_RECORDED and old.f1_counts.startswith("not recorded")
