"""The run report, the comparison and its verdict hold a hostile value only as text (DESIGN.md "Results":
reports escape every string they show; harness/report/html.py escapes by default): a value planted in
every field a model, a user or a file controls (adapter and model names, run ids, option keys and values,
data set settings, environment items, warnings, failure messages, stage names, measurement-quality
reasons, causality checks, missing-file reasons) reaches the page as text, and no element or event handler
comes from it (:mod:`tests.harness.report.hostile`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.instruments.host_items import Item
from streambench.harness.report import build_report
from streambench.harness.report.bundle import RunBundle
from streambench.harness.report.decision import decision_section
from streambench.harness.results.files import FailureRecord, RunResult
from streambench.harness.results.quality import MeasurementQuality
from streambench.harness.runs.catalog import load_bundle
from streambench.harness.runs.causality.checks import CausalityResult
from streambench.protocols.causality import CausalityConfig, CausalityReport, CheckResult
from streambench.protocols.online_speed import StageRow
from tests.harness.report.hostile import BREAKOUT, SCRIPT, Planter, assert_only_escaped, hostile
from tests.support import quick_run


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two short in-process online runs of one data draw: the reference model and its lookahead twin."""
    root = tmp_path_factory.mktemp("hostile")
    for run_id, adapter in (("ref", "reference"), ("look", "reference-lookahead")):
        quick_run(root, run_id, adapter)
    return root


def _quality(result: RunResult, verdict: str, plant: Planter) -> MeasurementQuality:
    """The run's measurement-quality verdict set to ``verdict``, its reasons (INVALID) or notes (VALID)
    hostile."""
    assert result.measurement_quality is not None
    words = [plant(f"quality.{'reason' if verdict == 'INVALID' else 'note'}")]
    reasons, notes = (words, []) if verdict == "INVALID" else ([], words)
    update = {"verdict": verdict, "reasons": reasons, "notes": notes}
    return result.measurement_quality.model_copy(update=update)


def _planted_run(run_dir: Path, plant: Planter, verdict: str = "INVALID") -> RunBundle:
    """The run's bundle with a hostile value in every string of its result the report shows."""
    bundle = load_bundle(run_dir)
    r = bundle.result
    assert r is not None
    bundle.name = r.run_id = plant("run_id")  # the directory is named after it
    bundle.title = plant("model_name")
    r.adapter = plant("adapter")
    r.adapter_info = r.adapter_info.model_copy(update={"name": plant("adapter_info.name")})
    r.adapter_options = {plant("option.key"): plant("option.value"), "nested": [plant("option.item"), 1]}
    r.dataset = plant("dataset")
    r.dataset_config = {**r.dataset_config, plant("data.key"): plant("data.value")}
    update = {
        "cpu_model": Item(value=plant("cpu_model")),
        "gpu_model": Item(reason=plant("gpu_model.reason")),
    }
    r.environment = r.environment.model_copy(update=update)
    r.fingerprint = plant("fingerprint")
    r.streambench_version = plant("version")
    r.incomplete_reason = plant("incomplete_reason")
    if r.warmup is not None:
        r.warmup = r.warmup.model_copy(update={"stream_id": plant("warmup.stream")})
    r.metrics.headline.warnings.append(plant("warning"))
    r.threads = r.threads.model_copy(update={"warning": plant("threads.warning")})
    failure = {"role": "test", "frame": 3, "error_type": "ValueError", "traceback": ""}
    r.failures = [
        FailureRecord(stream_id=plant("failure.stream"), message=plant("failure.message"), **failure)
    ]
    r.metrics.overall.speed.breakdown = [
        StageRow(stage=plant("stage"), ms_per_frame=1.0, share=1.0, method=plant("stage.method"))
    ]
    r.measurement_quality = _quality(r, verdict, plant)
    events = r.metrics.events
    if events is not None:
        events.background_class = plant("events.background")
    return bundle


def _causality(bundle: RunBundle, plant: Planter) -> None:
    """A causality result with a failed check and a skipped one, every string hostile."""
    r = bundle.result
    assert r is not None
    check = CheckResult(
        name=plant("check.name"),
        passed=False,
        first_stream=plant("check.stream"),
        first_frame=4,
        max_difference=0.5,
        detail=plant("check.detail"),
    )
    bundle.results["causality"] = CausalityResult(
        run_id=r.run_id,
        created_at=r.created_at,
        adapter=plant("causality.adapter"),
        config=CausalityConfig(),
        run=RunConfig.model_validate({"adapter": "reference"}),
        streams=["syn-0000"],
        report=CausalityReport(passed=False, checks=(check,), failed=(check.name,)),
        skipped={plant("skipped.check"): plant("skipped.why")},
    )


@pytest.mark.processes
def test_the_run_report_shows_every_planted_value_as_text(root: Path) -> None:
    plant = Planter("run")
    bundle = _planted_run(root / "ref", plant)
    _causality(bundle, plant)
    bundle.missing["robustness"] = plant("robustness.missing")  # the note of sections without data
    assert_only_escaped(build_report([bundle]), plant.planted)


@pytest.mark.processes
def test_the_comparison_shows_every_planted_value_as_text(root: Path) -> None:
    """Two runs with hostile names, data, fingerprints and verdicts; one without its arrays (the reason is
    shown) and a directory without a result (named among those not compared)."""
    plant = Planter("compare")
    first = _planted_run(root / "ref", plant, verdict="VALID")
    second = _planted_run(root / "look", plant)
    second.recordings = None
    second.missing["arrays"] = plant("arrays.missing")
    skipped = RunBundle(
        run_dir=root / "none", name=plant("skipped.name"), result_reason=plant("skipped.reason")
    )
    assert_only_escaped(build_report([first, second, skipped]), plant.planted)


@pytest.mark.processes
def test_the_verdict_for_a_budget_shows_every_planted_value_as_text(root: Path) -> None:
    """The chosen run and the runner-up, a run over the budget and an INVALID one: every label and reason
    hostile."""
    plant = Planter("verdict")
    results = []
    for name, verdict in (("ref", "VALID"), ("look", "VALID"), ("ref", "VALID"), ("look", "INVALID")):
        result = load_bundle(root / name).result
        assert result is not None
        result.measurement_quality = _quality(result, verdict, plant)
        results.append(result)
    speed = results[2].metrics.overall.speed
    speed.latency = replace(speed.latency, p95_ms=1e9)  # over any budget
    labels = [plant(f"label{i}") for i in range(len(results))]
    assert_only_escaped(decision_section(list(zip(labels, results, strict=True)), None), plant.planted)


def test_the_check_finds_a_value_that_went_in_raw() -> None:
    """The detector itself: a value pasted into markup is caught, with the field named; the same value
    escaped passes; a value not on the page at all is reported lost."""
    value = hostile("x.field")
    with pytest.raises(AssertionError, match=r"unescaped fields: \['x.field'\]"):
        assert_only_escaped(f"<p>{value}</p>", [value])
    with pytest.raises(AssertionError, match="img"):
        assert_only_escaped(f'<p title="{BREAKOUT}">', [])
    escaped = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    assert_only_escaped(f"<p>{escaped}</p>", [value])
    with pytest.raises(AssertionError, match=r"not on the page as text: \['x.field'\]"):
        assert_only_escaped("<p>nothing</p>", [value])
    assert SCRIPT in value
