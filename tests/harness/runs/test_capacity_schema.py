"""capacity.json's versions (harness/runs/capacity.py ``SCHEMA_VERSION``): a file of version 1 (written by
the release before the unloaded reference, tests/data/capacity_v1.json) still loads, prints, gives its
headline and its report; ``streambench schema capacity.json`` describes the new fields; and the report's
axes do not magnify noise (F1 on its whole range, miss rates from 0)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.report.bundle import RunBundle
from streambench.harness.runs import capacity_report, registry
from streambench.harness.runs.capacity import CapacityResult, print_result

OLD = Path(__file__).resolve().parents[2] / "data" / "capacity_v1.json"


def _old_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "v1"
    run_dir.mkdir()
    shutil.copy(OLD, run_dir / "capacity.json")
    return run_dir


def test_a_version_1_file_loads_prints_and_reports(tmp_path: Path) -> None:
    protocol = registry.get("capacity")
    run_dir = _old_run(tmp_path)
    result = protocol.load_result(run_dir)
    assert isinstance(result, CapacityResult) and result.schema_version == 1
    assert result.score.failure is None and result.score.interference is None
    assert result.config.f1_reference == "same_units" and result.score.f1_reference == "same_units"
    console = Console(file=io.StringIO(), width=200)
    assert print_result(console, result) == 0
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert "live streams" in printed and "sources replayed" not in printed  # old files are not re-judged
    (figure,) = protocol.headline(result)
    assert figure.key == "capacity@40ms" and figure.label.endswith("(replicas)")
    shown = CliRunner().invoke(app, ["show", str(run_dir), "--results-dir", str(tmp_path)])
    assert shown.exit_code == 0, shown.output
    bundle = RunBundle(run_dir=run_dir, name="v1")
    protocol.read(run_dir, bundle)
    (section,) = protocol.report_sections()
    assert "<svg" in section.render(bundle)


def test_the_schema_names_the_new_fields() -> None:
    done = CliRunner().invoke(app, ["schema", "capacity.json"])
    assert done.exit_code == 0
    for field in ("failure", "interference", "agreement", "f1_compared", "attempts", "others_cpu", "sources"):
        assert f'"{field}"' in done.output


def test_the_f1_axis_spans_f1_and_the_miss_axis_starts_at_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: list[Any] = []
    monkeypatch.setattr(capacity_report, "to_svg", lambda fig: drawn.append(fig) or "<svg></svg>")
    result = registry.get("capacity").load_result(_old_run(tmp_path))
    assert isinstance(result, CapacityResult)
    for point, f1 in zip(result.score.curve, (0.994, 0.9955), strict=False):
        point.f1, point.f1_reference = f1, f1  # the case: F1 moving between 0.994 and 0.9955
    capacity_report._curve_figure(result.score, result.config.target_miss_rate)
    left, right = drawn[0].axes
    assert right.get_ylim() == pytest.approx(capacity_report.F1_AXIS)
    assert left.get_ylim()[0] == 0


def test_a_search_that_failed_before_any_point_says_so_in_the_report(tmp_path: Path) -> None:
    from streambench.protocols.capacity_score import CapacityFailure

    protocol = registry.get("capacity")
    run_dir = _old_run(tmp_path)
    result = protocol.load_result(run_dir)
    assert isinstance(result, CapacityResult)
    result.score.curve = []
    result.score.failure = CapacityFailure(
        streams=1, phase="point", kind="died", stream=0, source="syn-0000", frame=3, error_type="WorkerEnded",
        message="the serving worker (pid 7) was killed by SIGKILL",
    )  # fmt: skip
    bundle = RunBundle(run_dir=run_dir, name="v1")
    bundle.results["capacity"] = result
    (section,) = protocol.report_sections()
    assert "the adapter failed at N = 1, stream 0 (syn-0000) frame 3" in section.render(bundle)
