"""The robustness run (harness/runs/robustness.py): drops from the clean run, failures recorded and the
sweep finished, the CLI's table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streambench.adapters.contract import AdapterInfo, Frame, Prediction
from streambench.harness.datasets.synthetic import SyntheticConfig, classes
from streambench.harness.execution.config import RunConfig
from streambench.harness.runs.robustness import execute_robustness
from streambench.protocols.robustness import Failure, RobustnessConfig

_CLASSES = classes(SyntheticConfig())


class BrittleAdapter:
    """Crashes when the visual modality is missing: a robustness failure, not a harness crash."""

    def __init__(self) -> None:
        self._info = AdapterInfo(name="brittle", classes=_CLASSES, modalities=("audio", "visual"))
        self._scores = np.full(len(_CLASSES), 1 / len(_CLASSES), dtype=np.float32)

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> Prediction:
        frame.inputs["visual"].sum()  # TypeError when the modality is missing (None)
        return Prediction(scores=self._scores)


@pytest.mark.processes
def test_sweep_records_failures_and_drops(tmp_path: Path) -> None:
    run = RunConfig.model_validate(
        {
            "adapter": f"{__name__}:BrittleAdapter",
            "data": {"num_streams": 2},
            "output_dir": tmp_path,
            "run_id": "b",
        }
    )
    sweep = RobustnessConfig(missing_rates_pct=(30,), audio_delays_ms=(0, 200), jitters_ms=(0,))
    result, run_dir = execute_robustness(run, sweep)
    missing = result.report.points[0]
    assert isinstance(missing.failure, Failure)
    assert missing.failure.stream_id == "syn-0000" and "predict() raised" in missing.failure.error
    # the point went on with its next stream, which failed too; both count as answered wrongly
    assert [f.stream_id for f in missing.failures] == ["syn-0000", "syn-0001"]
    assert (missing.f1, missing.accuracy, missing.score) == (0.0, 0.0, None)
    assert [p.failure for p in result.report.points[1:]] == [None, None, None]  # the sweep went on
    assert (run_dir / "robustness.json").exists()

    ref = RunConfig.model_validate({"data": {"num_streams": 4}, "output_dir": tmp_path, "run_id": "ref"})
    report = execute_robustness(ref, sweep)[0].report
    delay0, delay200 = report.points[1], report.points[2]
    assert delay0.abs_drop == pytest.approx(0.0) and delay0.rel_drop == pytest.approx(0.0)
    assert delay200.f1 is not None and report.clean.f1 is not None
    assert delay200.abs_drop == pytest.approx(report.clean.f1 - delay200.f1)


@pytest.mark.processes
def test_cli_robustness_prints_the_table(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from streambench.harness.cli import app

    args = [
        "run",
        "--protocol",
        "robustness",
        "--streams",
        "2",
        "--output-dir",
        str(tmp_path),
        "--no-progress",
    ]
    res = CliRunner().invoke(app, [*args, "--run-id", "cli"])
    assert res.exit_code == 0, res.output
    assert "Audio-Delay@500ms" in res.output and (tmp_path / "cli" / "robustness.json").exists()
    bad = CliRunner().invoke(app, ["run", "--protocol", "nope", "--no-progress"])
    assert bad.exit_code == 2 and "expected one of online, robustness, causality, detection" in bad.output
