"""The causality run (harness/causality_run.py): the reference model passes every check, and each planted
offender (adapters/offenders.py) fails exactly the check meant for it; the result file is written."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness.causality_run import RESULT_FILE, CausalityResult, execute_causality, print_causality
from harness.runner import RunConfig
from protocols.causality import CausalityConfig, CausalityReport, plan_occlusion

SEQUENCE_CHECKS = {"gradient_flow", "stream_sequence"}


def small(tmp_path: Path, adapter: str, **options: Any) -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": options,
            "data": {"num_streams": 3, "duration_s": 5.0},
            "engine": {"warmup_frames": 20},
            "output_dir": tmp_path,
            "run_id": "x",
        }
    )


def run(tmp_path: Path, adapter: str, **options: Any) -> CausalityResult:
    result, run_dir = execute_causality(small(tmp_path, adapter, **options), CausalityConfig())
    assert run_dir == tmp_path / "x"
    return result


def names(report: CausalityReport) -> set[str]:
    return {c.name for c in report.checks}


def test_reference_passes_every_check(tmp_path: Path) -> None:
    calls: list[tuple[int, int, str]] = []
    config = small(tmp_path, "reference")
    result, run_dir = execute_causality(config, CausalityConfig(), lambda *a: calls.append(a))
    assert result.report.passed, result.report.failed
    assert names(result.report) == {"occlusion", "state_leak", "reset_idempotent", "caching"}
    assert set(result.skipped) == SEQUENCE_CHECKS  # no sequence mode: skipped, not claimed as passed
    assert len(result.occlusion_runs) == 3 * 3 * 3 and all(r.passed for r in result.occlusion_runs)
    assert result.streams == ["syn-0000", "syn-0001", "syn-0002"]
    assert calls and calls[-1][0] == calls[-1][1] == len(calls)
    # the file is written and reads back
    path = run_dir / RESULT_FILE
    assert path.is_file()
    loaded = CausalityResult.model_validate_json(path.read_text())
    assert loaded.report == result.report and loaded.run_id == "x"
    assert json.loads(path.read_text())["adapter"] == "reference"


def test_peeking_fails_occlusion_only_at_the_cut(tmp_path: Path) -> None:
    result = run(tmp_path, "adapters.offenders:PeekingAdapter")
    assert result.report.failed == ("occlusion",)
    check = next(c for c in result.report.checks if c.name == "occlusion")
    first_cut = plan_occlusion(125, CausalityConfig())[0]
    assert check.first_stream == "syn-0000" and check.first_frame == first_cut
    assert 0 < check.max_difference < math.inf
    # every occluded variant is caught at its own cut
    assert not any(r.passed for r in result.occlusion_runs)
    assert [r.first_frame for r in result.occlusion_runs] == [
        c for _ in range(3) for c in plan_occlusion(125, CausalityConfig()) for _ in range(3)
    ]
    # the back door is closed after the run
    from adapters.offenders import PeekingAdapter

    assert PeekingAdapter._leaked == {}


def test_leaky_reset_fails_state_leak_only(tmp_path: Path) -> None:
    result = run(tmp_path, "adapters.offenders:LeakyResetAdapter")
    assert result.report.failed == ("state_leak",)
    check = next(c for c in result.report.checks if c.name == "state_leak")
    assert check.first_stream == "syn-0000" and check.first_frame == 0


def test_caching_adapter_fails_caching_only(tmp_path: Path) -> None:
    result = run(tmp_path, "adapters.offenders:CachingAdapter", miss_cost_ms=0.5)
    assert result.report.failed == ("caching",)
    check = next(c for c in result.report.checks if c.name == "caching")
    assert check.first_stream == "syn-0000" and check.max_difference > 2.0


@pytest.mark.parametrize("offset", [0, 1])
def test_offbyone_mask_fails_gradient_flow_and_sequence_only(tmp_path: Path, offset: int) -> None:
    result = run(tmp_path, "adapters.offenders:OffByOneMaskAdapter", mask_offset=offset)
    assert not result.skipped
    assert names(result.report) >= SEQUENCE_CHECKS
    if offset == 0:  # the correctly masked control
        assert result.report.passed, result.report.failed
        return
    assert set(result.report.failed) == SEQUENCE_CHECKS
    gradient = next(c for c in result.report.checks if c.name == "gradient_flow")
    assert (gradient.first_frame, gradient.first_source) == (0, 1)
    assert gradient.first_stream == "syn-0000"
    sequence = next(c for c in result.report.checks if c.name == "stream_sequence")
    assert sequence.first_frame == 0


def test_print_causality(tmp_path: Path) -> None:
    result = run(tmp_path, "adapters.offenders:LeakyResetAdapter")
    buffer = io.StringIO()
    print_causality(Console(file=buffer, width=200), result.report, result.skipped)
    text = buffer.getvalue()
    assert "state_leak" in text and "FAILED" in text and "skipped" in text and "syn-0000" in text


def test_cli_causality_exit_code_follows_the_verdict(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from harness.cli import app

    args = ["run", "--protocol", "causality", "--streams", "3", "--duration", "5", "--warmup-frames", "20"]
    args += ["--output-dir", str(tmp_path), "--no-progress"]
    clean = CliRunner().invoke(app, [*args, "--run-id", "ref"])
    assert clean.exit_code == 0, clean.output
    cheat = CliRunner().invoke(
        app, [*args, "--run-id", "peek", "--adapter", "adapters.offenders:PeekingAdapter"]
    )
    assert cheat.exit_code == 1 and (tmp_path / "peek" / "causality.json").exists()
