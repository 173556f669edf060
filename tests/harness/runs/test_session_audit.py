"""The online run carries its own causality verdict (issue 24 item 6): copies of scored streams are fed
at random among them, in the same sealed worker, under tokens like any stream. A model that is honest
only on a stream it has seen before (adapters/offenders/first_sight.py: boosted on a first sight) passes
any audit run after the scored streams, and fails this one; the honest reference passes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import RunConfig
from streambench.harness.runs.session import execute_run


def _run(tmp_path: Path, adapter: str, **update: object) -> RunConfig:
    return RunConfig(
        adapter=adapter,
        data=SyntheticConfig(num_streams=6, duration_s=2.0),
        output_dir=tmp_path,
        engine={"warmup_frames": 20},  # type: ignore[arg-type]
        **update,  # type: ignore[arg-type]
    )


@pytest.mark.processes
def test_a_model_honest_only_on_a_second_sight_fails_the_session_audit(tmp_path: Path) -> None:
    result, _, _ = execute_run(_run(tmp_path, "offender-first-sight"))
    audit = result.session_audit
    assert audit is not None and audit.passed is False and audit.seed is not None
    assert result.measurement_quality is not None and result.measurement_quality.verdict == "INVALID"
    assert any("session's audit failed" in r for r in result.measurement_quality.reasons)


@pytest.mark.processes
def test_the_reference_passes_and_an_in_process_run_says_it_was_not_audited(tmp_path: Path) -> None:
    result, recordings, _ = execute_run(_run(tmp_path, "reference"))
    audit = result.session_audit
    assert audit is not None and audit.passed is True and len(audit.checks) == len(audit.variants) >= 2
    assert {r.stream_id for r in recordings} == {f"syn-{k:04d}" for k in range(6)}  # copies are not scored
    assert result.host_timing is not None and result.host_timing.verdict == "agree"
    here, _, _ = execute_run(_run(tmp_path, "reference", isolate=False, run_id="here"))
    assert here.execution.mode == "in-process"
    assert here.session_audit is not None and here.session_audit.passed is None
    assert here.host_timing is not None and here.host_timing.verdict == "not-checked"
