"""The robustness section of the run report (harness/runs/robustness.py) holds a hostile value only as text:
the adapter, the classes its F1 counts, each sweep point's name, and the stream and error of a point where
the adapter failed, as ``robustness.json`` can hold them (:mod:`tests.harness.report.hostile`)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from streambench.harness.execution.config import RunConfig
from streambench.harness.report import build_report
from streambench.harness.report.bundle import RunBundle
from streambench.harness.runs import registry
from streambench.harness.runs.robustness import RobustnessResult
from streambench.protocols.robustness import Failure, PointResult, RobustnessConfig, RobustnessReport, Variant
from tests.harness.report.hostile import Planter, assert_only_escaped


def test_the_robustness_section_shows_every_planted_value_as_text(tmp_path: Path) -> None:
    plant = Planter()

    def point(axis: str, value: float, f1: float | None, failure: Failure | None = None) -> PointResult:
        variant = Variant(name=plant(f"variant.{axis}"), axis=axis, value=value, perturbations=())  # type: ignore[arg-type]
        drop = None if f1 is None else 0.8 - f1
        failures = [failure] if failure is not None else []
        return PointResult(
            variant=variant,
            f1=f1,
            accuracy=f1,
            abs_drop=drop,
            rel_drop=drop,
            failure=failure,
            failures=failures,
            score=None,
        )

    failure = Failure(stream_id=plant("failure.stream"), frame=3, error=plant("failure.error"))
    report = RobustnessReport(
        report_delta_ms=100.0,
        f1_counts=plant("f1_counts"),
        clean=point("clean", 0.0, 0.8),
        points=[point("missing", 50.0, 0.6), point("jitter", 20.0, 0.4, failure)],
    )
    result = RobustnessResult(
        run_id="rob",
        created_at=datetime(2026, 1, 2, tzinfo=timezone.utc),
        adapter=plant("adapter"),
        config=RobustnessConfig(),
        run=RunConfig.model_validate({"adapter": "reference"}),
        report=report,
    )
    bundle = RunBundle(run_dir=tmp_path, name=plant("run_id"))
    for protocol in registry.protocols():
        bundle.add_sections(protocol.name, protocol.report_sections())
    bundle.results["robustness"] = result
    page = build_report([bundle])
    assert '<svg class="plot"' in page  # the curves, drawn
    assert_only_escaped(page, plant.planted)
