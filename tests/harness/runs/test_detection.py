"""The detection run (harness/runs/detection.py): the reference detector on the synthetic spoof data, the
EER versus heard time, the seed-002 score file re-scored by ``streambench score detection``, the CLI."""

from __future__ import annotations

import io
import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

import streambench.harness.runs.detection as detection_run
from streambench.harness.cli import app
from streambench.harness.datasets.spoof import SpoofConfig
from streambench.harness.execution.config import RunConfig
from streambench.harness.io.score_file import read_score_file
from streambench.harness.results.files import load_protocol_result
from streambench.harness.runs.detection import (
    RESULT_FILE,
    SCORE_FILE,
    DetectionResult,
    cli_run,
    execute_detection,
    print_result,
)
from streambench.protocols.detection import DetectionConfig

runner = CliRunner()


def spoof_run(tmp_path: Path, seed: int = 0, utterances: int = 120, **data: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": "reference-detector",
            "data": {"kind": "synthetic_spoof", "seed": seed, "num_utterances": utterances, **data},
            "engine": {"warmup_frames": 100},
            "output_dir": tmp_path,
            "run_id": f"det-{seed}",
        }
    )


@pytest.fixture(scope="module")
def seed0(tmp_path_factory: pytest.TempPathFactory) -> tuple[DetectionResult, Path]:
    return execute_detection(spoof_run(tmp_path_factory.mktemp("det")), DetectionConfig())


@pytest.mark.processes
def test_eer_falls_with_heard_time(seed0: tuple[DetectionResult, Path], tmp_path: Path) -> None:
    # the first run is sealed (the default); this one in process, to keep the suite fast: the curve is
    # what is tested, and it must not depend on where the model ran
    here = spoof_run(tmp_path, seed=1).model_copy(update={"isolate": False})
    second, _ = execute_detection(here, DetectionConfig())
    for result in (seed0[0], second):
        curve = result.report.by_heard
        assert [p.heard_s for p in curve] == [0.5, 1.0, 2.0, 4.0, None]
        assert all(p.n_scored == 120 for p in curve)
        eers = [p.eer for p in curve]
        assert all(e is not None for e in eers)
        assert all(b <= a for a, b in itertools.pairwise(eers)), eers  # monotone non-increasing
        assert eers[0] - eers[-1] >= 0.15, eers  # and clearly so: 0.5 s is far from enough
        assert 0 < result.report.metrics.eer < 0.15  # non-trivial: some fakes are nearly clean
        assert result.report.metrics.eer == eers[-1]
        assert 0.9 < result.report.metrics.auc < 1.0


@pytest.mark.processes
def test_result_and_score_file_are_written(seed0: tuple[DetectionResult, Path]) -> None:
    result, run_dir = seed0
    assert run_dir.name == "det-0" and result.run_id == "det-0"
    loaded = load_protocol_result(run_dir / RESULT_FILE, DetectionResult)
    assert loaded.report == result.report and loaded.config == DetectionConfig()
    assert json.loads((run_dir / RESULT_FILE).read_text())["schema_version"] == 1
    labels, scores = read_score_file(run_dir / SCORE_FILE)
    assert labels.tolist() == [u.label for u in result.report.utterances]
    assert scores.tolist() == [u.score for u in result.report.utterances]
    assert int(labels.sum()) == 60 and labels.size == 120
    # every scored frame was timed: 120 utterances of 6 s at 50 frames/s; the warm-up ran first
    assert result.latency.n == 120 * 300 and result.warmup_frames == 100
    assert 0 < result.latency.p50_ms <= result.latency.p95_ms <= result.latency.max_ms


def test_score_file_rescored_offline_gives_the_same_eer(seed0: tuple[DetectionResult, Path]) -> None:
    result, run_dir = seed0
    res = runner.invoke(app, ["score", "detection", str(run_dir / SCORE_FILE), "--json"])
    assert res.exit_code == 0, res.output
    offline = json.loads(res.output)
    m = result.report.metrics
    assert offline["eer"] == m.eer and offline["eer_threshold"] == m.eer_threshold
    assert (offline["auc"], offline["f1"], offline["far"], offline["frr"]) == (m.auc, m.f1, m.far, m.frr)


@pytest.mark.processes
def test_aggregations_and_threshold_are_recorded(seed0: tuple[DetectionResult, Path], tmp_path: Path) -> None:
    config = DetectionConfig(aggregation="mean", threshold=0.5, heard_s=(1.0, "all"))
    result, _ = execute_detection(spoof_run(tmp_path, utterances=20), config)
    assert result.report.aggregation == "mean" and result.config.threshold == 0.5
    assert result.report.metrics.threshold == 0.5
    assert [p.heard_s for p in result.report.by_heard] == [1.0, None]


def test_print_result(seed0: tuple[DetectionResult, Path]) -> None:
    result = seed0[0]
    buffer = io.StringIO()
    assert print_result(Console(file=buffer, width=200), result) == 0
    text = buffer.getvalue()
    m = result.report.metrics
    assert f"{100 * m.eer:.2f} % at threshold {m.eer_threshold:.6g}" in text
    assert f"{m.auc:.4f}" in text and "F1 (real)" in text and "balanced accuracy" in text
    for p in result.report.by_heard:
        label = "all" if p.heard_s is None else f"{p.heard_s:g} s"
        assert any(label in line and f"{100 * p.eer:.2f} %" in line for line in text.splitlines())
    assert f"p50 {result.latency.p50_ms:.4f} ms" in text and f"over {result.latency.n} frames" in text


def test_cli_run_swaps_in_the_spoof_data_and_the_detector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[RunConfig, DetectionConfig]] = []

    def fake(config: RunConfig, protocol: DetectionConfig, progress: object = None) -> Any:
        seen.append((config, protocol))
        return None, tmp_path

    monkeypatch.setattr(detection_run, "execute_detection", fake)
    cli_run(RunConfig(), None)
    assert seen[-1][0].data == SpoofConfig() and seen[-1][0].adapter == "reference-detector"
    assert seen[-1][1] == DetectionConfig()
    cli_run(RunConfig.model_validate({"data": {"num_streams": 12, "seed": 3}, "adapter": "x:Y"}), None)
    assert seen[-1][0].data == SpoofConfig(seed=3, num_utterances=12) and seen[-1][0].adapter == "x:Y"
    own = RunConfig.model_validate({"data": {"kind": "synthetic_spoof", "num_utterances": 6}})
    cli_run(own, None)
    assert seen[-1][0].data == SpoofConfig(num_utterances=6)


def test_protocol_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(detection_run, "execute_detection", lambda c, p, progress=None: (p, tmp_path))
    toml = tmp_path / "det.toml"
    toml.write_text('aggregation = "max"\nheard_s = [0.5, 2, "all"]\nthreshold = 0.4\n')
    protocol, _ = cli_run(RunConfig(), toml)
    assert protocol == DetectionConfig(aggregation="max", heard_s=(0.5, 2.0, "all"), threshold=0.4)
    bad = tmp_path / "bad.json"
    bad.write_text('{"aggregation": "median", "heard_s": [2, 1]}')
    with pytest.raises(
        ValueError, match=r"bad\.json: invalid detection configuration \(aggregation, heard_s\)"
    ):
        cli_run(RunConfig(), bad)


@pytest.mark.processes
def test_streambench_run_protocol_detection(tmp_path: Path) -> None:
    args = ["run", "--protocol", "detection", "--streams", "10", "--no-progress", "--no-report"]
    res = runner.invoke(app, [*args, "--output-dir", str(tmp_path), "--run-id", "cli"])
    assert res.exit_code == 0, res.output
    assert "EER versus heard time" in res.output and "5 real + 5 fake utterances" in res.output
    result = load_protocol_result(tmp_path / "cli" / RESULT_FILE, DetectionResult)
    assert result.adapter == "reference-detector" and result.dataset_seed_kind == "secret"  # no --seed
    drawn = result.run.data.seed  # type: ignore[union-attr]
    assert isinstance(drawn, int) and result.run.data == SpoofConfig(num_utterances=10, seed=drawn)
    labels, scores = read_score_file(tmp_path / "cli" / SCORE_FILE)
    assert labels.size == 10 and np.isfinite(scores).all()


def test_headline_figures(seed0: tuple[DetectionResult, Path]) -> None:
    result = seed0[0]
    figures = {f.key: f for f in detection_run.headline_figures(result)}
    m = result.report.metrics
    assert list(figures) == [
        "eer", "auc", "f1[real]", "balanced_accuracy", "eer@0.5s", "eer@1s", "eer@2s", "eer@4s", "eer@all",
    ]  # fmt: skip
    assert (figures["eer"].value, figures["auc"].value, figures["f1[real]"].value) == (m.eer, m.auc, m.f1)
    assert figures["eer"].better == "lower" and figures["auc"].better == "higher"
    assert figures["eer@0.5s"].value == result.report.by_heard[0].eer
    assert figures["eer@all"].value == m.eer and figures["eer@all"].n_streams == 120


@pytest.mark.processes
def test_reference_detector_is_causal(tmp_path: Path) -> None:
    from streambench.harness.runs.causality.protocol import execute_causality
    from streambench.protocols.causality import CausalityConfig

    result, _ = execute_causality(spoof_run(tmp_path, utterances=3), CausalityConfig())
    verdicts = {c.name: c.passed for c in result.report.checks}
    # the caching audit compares wall times (a loaded test machine can fail it): not asserted here
    for name in ("occlusion", "state_leak", "reset_idempotent", "timed_untimed"):
        assert verdicts[name], (name, result.report.failed)
