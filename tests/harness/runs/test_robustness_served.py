"""The robustness protocol against a served model (docs/serving.md): the perturbed streams (a modality
missing, delayed audio, jittered clocks) are sent to the example gRPC server as they would be fed to a
model in process (a missing payload is absent from the request), so the served reference model scores
every point of the sweep as the in-process one does."""

from __future__ import annotations

from pathlib import Path

import pytest

import streambench
from streambench.harness.execution.config import RunConfig
from streambench.harness.runs.robustness import RobustnessResult
from streambench.protocols.robustness import RobustnessConfig
from tests.adapters.served.servers import grpc_server

pytestmark = pytest.mark.slow  # sealed workers

SWEEP = {"missing_rates_pct": [30, 100], "audio_delays_ms": [200], "jitters_ms": [20], "seed": 4}


def _robustness(tmp_path: Path, run_id: str, adapter: str, **options: object) -> RobustnessResult:
    run = RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": options,
            "data": {"kind": "synthetic", "num_streams": 3, "duration_s": 2.0, "seed": 5},
            "engine": {"warmup_frames": 5},
            "output_dir": tmp_path,
            "run_id": run_id,
        }
    )
    outcome = streambench.run(run, "robustness", RobustnessConfig.model_validate(SWEEP))
    assert isinstance(outcome.result, RobustnessResult)
    return outcome.result


def test_the_served_model_scores_every_point_of_the_sweep_as_the_in_process_one(tmp_path: Path) -> None:
    local = _robustness(tmp_path, "local", "reference")
    with grpc_server() as url:
        served = _robustness(tmp_path, "served", "grpc", url=url)
    points = [served.report.clean, *served.report.points]
    assert [p.variant.name for p in points] == [
        p.variant.name for p in [local.report.clean, *local.report.points]
    ]
    for mine, theirs in zip(points, [local.report.clean, *local.report.points], strict=True):
        assert not mine.failures and mine.f1 == theirs.f1 and mine.accuracy == theirs.accuracy, (
            mine.variant.name
        )
    all_missing = next(
        p for p in served.report.points if p.variant.axis == "missing" and p.variant.value == 100
    )
    assert all_missing.abs_drop not in (None, 0.0)  # the perturbation reached the model
