"""The robustness run binds the data's ``background_class`` (harness/runs/robustness.py, issue 27): on an
``audio_files`` data set whose background is named ``silence``, two classes make a binary task and every
point's F1 is the positive class's, as the online protocol's F1@Δt, not micro over both (the frame
accuracy); the console table and the report caption say what F1 counts."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import soundfile
from markupsafe import escape
from rich.console import Console

from streambench.adapters.contract import AdapterInfo, Frame, Prediction
from streambench.harness.datasets.catalog import make_streams
from streambench.harness.execution.config import RunConfig
from streambench.harness.results.summary import print_robustness
from streambench.harness.runs.catalog import load_bundle
from streambench.harness.runs.robustness import execute_robustness, robustness_section
from streambench.protocols.robustness import RobustnessConfig

CLASSES = ("silence", "speech")


class AlwaysSpeech:
    """Answers speech on every frame: positive-class F1 = 2 S / (S + T) for S speech frames of T, micro
    F1 over both classes = S / T (the frame accuracy)."""

    def __init__(self) -> None:
        self._info = AdapterInfo(name="always-speech", classes=CLASSES, modalities=("audio",))
        self._prediction = Prediction(scores=np.array([0.1, 0.9], dtype=np.float32))

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> Prediction:
        return self._prediction


def _run(tmp_path: Path) -> RunConfig:
    recordings = tmp_path / "rec"
    recordings.mkdir()
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        soundfile.write(str(recordings / f"{name}.wav"), 0.1 * rng.standard_normal(8000), 16000)
        (recordings / f"{name}.txt").write_text("0.1\t0.3\tspeech\n")
    return RunConfig.model_validate(
        {
            "adapter": f"{__name__}:AlwaysSpeech",
            "data": {"kind": "audio_files", "directory": str(recordings), "background_class": "silence"},
            "engine": {"warmup_frames": 0},
            "isolate": False,
            "output_dir": tmp_path / "results",
            "run_id": "vad",
        }
    )


@pytest.mark.processes
def test_robustness_f1_on_audio_files_is_the_positive_class_f1(tmp_path: Path) -> None:
    run = _run(tmp_path)
    labels = np.concatenate([s.labels for s in make_streams(run.data)])
    speech, frames = int(labels[:, 1].sum()), labels.shape[0]
    assert 0 < speech < frames and make_streams(run.data)[0].classes == CLASSES
    sweep = RobustnessConfig(missing_rates_pct=(), audio_delays_ms=(), jitters_ms=(0,))
    result, run_dir = execute_robustness(run, sweep)
    report = result.report
    for point in (report.clean, *report.points):
        assert point.score is not None and point.score.scored_classes == ["speech"]
        assert point.f1 == pytest.approx(2 * speech / (speech + frames))
        # micro over both classes, the figure before: the frame accuracy, S / T
        first = point.score.overall.accuracy.curves["frame"]["strict"][0]
        assert first.f1_micro_all_classes == pytest.approx(speech / frames) == pytest.approx(point.accuracy)
        assert point.f1 != pytest.approx(first.f1_micro_all_classes)
    assert "positive class 'speech' (background 'silence'" in report.f1_counts
    out = io.StringIO()
    print_robustness(Console(file=out, width=300), report)
    assert "(Strict, frame)" in out.getvalue() and "micro" not in out.getvalue().splitlines()[0]
    assert "F1 counts binary task: F1 of the positive class 'speech'" in out.getvalue()
    html = robustness_section(load_bundle(run_dir))
    assert "ms (Strict, frame) under each perturbation" in html
    assert escape("F1 counts binary task: F1 of the positive class 'speech'") in html
