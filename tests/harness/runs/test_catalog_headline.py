"""Headline figures (harness/results/headline.py): the same numbers as the result they come from, intervals
where the result has them, null with the reason where nothing was measured, for every result kind."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.results.files import ResultFileError, RunResult
from streambench.harness.results.headline import LATENCY_KEYS
from streambench.harness.runs.catalog import figures_of, load_headline
from streambench.harness.runs.causality.protocol import CausalityResult
from streambench.harness.runs.robustness import RESULT_FILE as ROBUSTNESS_FILE
from streambench.harness.runs.robustness import execute_robustness
from streambench.harness.runs.session import execute_run
from streambench.protocols.causality import CausalityConfig, CheckResult, summarize
from streambench.protocols.robustness import Failure, RobustnessConfig


def config(output_dir: Path, run_id: str = "run") -> RunConfig:
    return RunConfig.model_validate(
        {
            "data": {"num_streams": 3, "duration_s": 5.0},
            "engine": {"warmup_frames": 10},
            "output_dir": output_dir,
            "run_id": run_id,
        }
    )


@pytest.fixture(scope="module")
def online(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, Path]:
    result, _, run_dir = execute_run(config(tmp_path_factory.mktemp("headline")))
    return result, run_dir


@pytest.mark.processes
def test_online_figures_are_the_results_own(online: tuple[RunResult, Path]) -> None:
    result, _ = online
    figures = {f.key: f for f in figures_of(result)}
    assert list(figures) == [
        "f1@0ms", "f1@50ms", "f1@100ms", "f1@200ms", "f1@500ms", "f1@1000ms",
        "frame_acc", "mean", "p50", "p95", "p99", "fps", "rtf", "energy",
        "event_f1", "onset_delay_p50", "onset_delay_p90", "onset_delay_max", "event_miss_rate",
        "false_alarms_per_h",
    ]  # fmt: skip
    head, lat = result.metrics.headline, result.metrics.overall.speed.latency
    f1 = figures["f1@100ms"]
    assert f1.value == result.metrics.f1_at(100) == head.f1_strict[2].estimate
    assert (f1.low, f1.high, f1.n_streams) == (head.f1_strict[2].low, head.f1_strict[2].high, 3)
    assert f1.low is not None and f1.high is not None and f1.low <= f1.value <= f1.high
    assert figures["frame_acc"].value == result.metrics.overall.accuracy.frame_accuracy
    assert figures["frame_acc"].low is None  # no interval in the result: none invented
    assert figures["p95"].value == lat.p95_ms and figures["p95"].n_frames == lat.n == 3 * 125
    assert figures["p50"].value == lat.p50_ms and figures["p99"].value == lat.p99_ms
    mean = figures["mean"]
    assert (mean.value, mean.low, mean.high) == (
        head.mean_latency_ms.estimate,
        head.mean_latency_ms.low,
        head.mean_latency_ms.high,
    )
    fps = figures["fps"]
    assert fps.value == lat.fps
    assert fps.low == pytest.approx(1e3 / head.mean_latency_ms.high)
    assert fps.high == pytest.approx(1e3 / head.mean_latency_ms.low)
    assert figures["rtf"].value == head.rtf.estimate and figures["rtf"].better == "lower"
    # no GPU here: the energy is null, with the run's own reason, and no sample count
    energy = figures["energy"]
    assert energy.value is None and energy.reason == result.resources.energy_per_frame_reason
    assert energy.reason and energy.n_frames is None
    assert {k for k, f in figures.items() if f.latency} == LATENCY_KEYS
    # the event figures (issue 27) are the result's, every event class pooled
    events = result.metrics.events
    assert events is not None
    assert figures["event_f1"].value == events.overall.f1
    assert figures["false_alarms_per_h"].value == events.overall.false_alarms_per_hour
    missed = events.overall.missed / events.overall.reference_events
    assert figures["event_miss_rate"].value == missed and figures["event_miss_rate"].unit == "%"
    onset = events.overall.onset_delay
    assert figures["onset_delay_p90"].value == (onset.p90_ms if onset is not None else None)


@pytest.mark.processes
def test_run_directory_with_several_result_files(online: tuple[RunResult, Path], tmp_path: Path) -> None:
    result, run_dir = online
    sweep = RobustnessConfig(missing_rates_pct=(50,), audio_delays_ms=(100,), jitters_ms=())
    robust, robust_dir = execute_robustness(config(run_dir.parent), sweep)
    assert robust_dir == run_dir
    head = load_headline(run_dir)
    assert head.protocols == ["online", "robustness"] and head.run == "run"
    assert head.fingerprint == result.fingerprint and head.adapter == "reference"
    points = [f for f in head.figures if f.key.startswith("f1[")]
    assert [f.key for f in points] == ["f1[clean]", "f1[missing=50]", "f1[audio_delay=100]"]
    assert points[0].value == robust.report.clean.f1
    assert points[1].value == robust.report.points[0].f1 and points[1].label.startswith(
        "F1@0ms Missing-Rate@50%"
    )
    # the online run's warnings ("only 3 test streams" among them), and at most the robustness run's own
    # timing notes beside them (a loaded machine: "reset_state() takes 2.76 ms per stream ..., 22x a frame")
    online_warnings = result.metrics.headline.warnings
    assert head.warnings[: len(online_warnings)] == online_warnings
    assert all(
        w.startswith(("reset_state() takes", "the worker used"))
        for w in head.warnings[len(online_warnings) :]
    )
    assert any("only 3 test streams" in w for w in head.warnings)

    # a failed point is null with the adapter's error, not a number
    failed = robust.report.points[0].model_copy(
        update={"f1": None, "score": None, "failure": Failure(stream_id="syn-0001", frame=7, error="boom")}
    )
    report = robust.report.model_copy(update={"points": [failed, *robust.report.points[1:]]})
    figure = figures_of(robust.model_copy(update={"report": report}))[1]
    assert figure.value is None and figure.reason == "adapter failed at stream syn-0001 frame 7: boom"

    # robustness alone carries its own environment fingerprint (the same machine as the online run)
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / ROBUSTNESS_FILE).write_text((run_dir / ROBUSTNESS_FILE).read_text())
    only = load_headline(alone)
    assert only.fingerprint == result.fingerprint and only.fingerprint_reason is None
    # a result file written without one (an older file): null with the reason
    raw = json.loads((run_dir / ROBUSTNESS_FILE).read_text())
    raw.pop("fingerprint")
    (alone / ROBUSTNESS_FILE).write_text(json.dumps(raw))
    older = load_headline(alone)
    assert (
        older.fingerprint is None
        and older.fingerprint_reason == "robustness.json record no environment fingerprint"
    )


def test_causality_checks_pass_fail_and_skipped() -> None:
    result = CausalityResult(
        run_id="c",
        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc),
        adapter="peeking",
        config=CausalityConfig(),
        run=RunConfig(),
        streams=["s"],
        report=summarize(
            [
                CheckResult(
                    name="occlusion", passed=False, first_stream="s", first_frame=3, detail="changed at 3"
                ),
                CheckResult(name="state_leak", passed=True),
            ]
        ),
        skipped={"gradient_flow": "no sequence mode"},
    )
    figures = {f.key: f for f in figures_of(result)}
    assert figures["check[occlusion]"].value == 0.0 and figures["check[occlusion]"].reason == "changed at 3"
    assert figures["check[state_leak]"].value == 1.0 and figures["check[state_leak]"].reason is None
    assert figures["check[gradient_flow]"].value is None
    assert figures["check[gradient_flow]"].reason == "skipped: no sequence mode"


def test_bad_run_directories_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(ResultFileError, match="no such run directory"):
        load_headline(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultFileError, match=r"empty: holds none of result.json, robustness.json"):
        load_headline(tmp_path / "empty")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ROBUSTNESS_FILE).write_text('{"run_id": "x",\n  oops}')
    with pytest.raises(ResultFileError, match=r"broken/robustness.json: line 2: not valid JSON"):
        load_headline(broken)
    (broken / ROBUSTNESS_FILE).write_text('{"run_id": "x"}')
    with pytest.raises(ResultFileError, match=r"robustness.json: does not match the RobustnessResult schema"):
        load_headline(broken)
