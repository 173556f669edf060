"""The ``timed_untimed`` check's F1 counts the classes the online protocol's F1@Δt counts
(harness/runs/causality/checks.py ``timed_untimed_f1``; protocols/online.py, issue 27): with the data's
background named ``silence`` (``audio_files``' ``background_class``), two classes make a binary task and the
detail's F1 is the positive class's (2/3 on the hand-made stream of
tests/protocols/test_robustness_positive_class.py), not micro over both (0.7, the frame accuracy)."""

from __future__ import annotations

from streambench.harness.execution.config import RunConfig
from streambench.harness.runs.causality.checks import timed_untimed_f1
from tests.protocols.test_robustness_positive_class import CLASSES, answered


def _run(**protocol: object) -> RunConfig:
    data = {"kind": "audio_files", "directory": "unread", "background_class": "silence"}
    return RunConfig.model_validate({"data": data, "protocol": {"bootstrap_resamples": 10, **protocol}})


def test_the_detail_f1_is_the_online_positive_class_f1() -> None:
    detail = timed_untimed_f1([answered()], [answered()], _run(), CLASSES)
    assert detail.startswith("F1@0ms 66.67 % timed, 66.67 % untimed (F1 counts binary task: F1 of the ")
    assert "positive class 'speech' (background 'silence' left out" in detail and "70.00" not in detail
    # binary_f1 = "all_classes": micro over both, the frame accuracy, as online scores it
    both = timed_untimed_f1([answered()], [answered()], _run(binary_f1="all_classes"), CLASSES)
    assert both.startswith("F1@0ms 70.00 % timed, 70.00 % untimed (F1 counts every class")


def test_the_detail_names_the_smallest_delta_when_zero_is_not_scored() -> None:
    detail = timed_untimed_f1([answered()], [answered()], _run(deltas_ms=[100, 200]), CLASSES)
    assert detail.startswith("F1@100ms 66.67 % timed, 66.67 % untimed")
