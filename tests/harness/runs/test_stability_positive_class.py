"""The stability run's F1 of the same recordings counts the classes the online protocol's F1@Δt counts
(harness/runs/stability.py ``event_summary``; protocols/online.py, issue 27): with the data's background
named ``silence`` (``audio_files``' ``background_class``), two classes make a binary task and the F1 is the
positive class's (2/3 on the hand-made stream of tests/protocols/test_robustness_positive_class.py), not
micro over both (0.7, the frame accuracy). The console table's caption says what F1 counts.

The stability protocol itself (protocols/stability.py) scores the sparse features and has no class F1."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest
from rich.console import Console

from streambench.harness.datasets.audio_files import AudioFilesConfig
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.runs.stability import F1_NOT_RECORDED, EventSummary, StabilityResult, event_summary
from streambench.harness.runs.stability import print_result as print_stability
from streambench.protocols import online
from streambench.protocols.stability import StabilityConfig
from streambench.protocols.stability import score as score_stability
from tests.protocols.test_robustness_positive_class import CLASSES, answered

SETTINGS = online.OnlineConfig(bootstrap_resamples=10)
DATA = AudioFilesConfig(directory="unread", background_class="silence")  # type: ignore[arg-type]


def test_stability_f1_is_the_online_positive_class_f1() -> None:
    summary = event_summary([answered()], SETTINGS, CLASSES, DATA)
    by_online = online.score([answered()], SETTINGS, CLASSES, background="silence")
    first = summary.curve[0]
    assert first.delta_ms == 0 and first.f1_micro == pytest.approx(2 / 3, abs=1e-9)
    assert (
        first.f1_micro == pytest.approx(by_online.f1_at(0)) and summary.stream_f1["s0"][0] == first.f1_micro
    )
    assert summary.segment_f1_micro == pytest.approx(by_online.overall.accuracy.segment_f1_micro)
    assert summary.f1_counts.startswith("binary task: F1 of the positive class 'speech'")
    # micro over both classes, as the stability run scored data without a class named "background"
    assert first.f1_micro_all_classes == pytest.approx(0.7) and first.f1_micro != pytest.approx(0.7)
    # data with no background_class field (synthetic): a class named "background", none here: every class
    plain = event_summary([answered()], SETTINGS, CLASSES, SyntheticConfig())
    assert plain.curve[0].f1_micro == pytest.approx(0.7) and plain.f1_counts == "every class"


def test_the_console_caption_says_what_f1_counts_and_old_files_read() -> None:
    summary = event_summary([answered()], SETTINGS, CLASSES, DATA)
    features = np.repeat(np.array([[0, 1]], dtype=np.int64), 10, axis=0)
    report = score_stability([dataclasses.replace(answered(), features=features)], StabilityConfig())
    result = StabilityResult.model_construct(adapter_name="hand-made", report=report, events=summary)
    out = io.StringIO()
    assert print_stability(Console(file=out, width=300), result) == 0
    text = " ".join(out.getvalue().split())  # the caption wraps at the table's width
    assert "F1 counts binary task: F1 of the positive class 'speech'" in text
    assert "Strict, frame (classes: below)" in text and "Strict, frame, micro" not in text
    assert "66.7" in text and "70.0" not in text.split("frame accuracy")[0]
    tree = summary.model_dump(mode="json")
    del tree["f1_counts"]
    assert EventSummary.model_validate(tree).f1_counts == F1_NOT_RECORDED
