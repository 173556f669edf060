"""``streambench run`` and ``streambench ab`` measure one model the same way (harness/runs/ab.py
``differs_from_run``): the same model through both, its p50s agree within the noise the two outputs report,
and ab's report names what it measures differently."""

from __future__ import annotations

import math

import numpy as np
import pytest

import streambench
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.rounds import RoundsConfig

pytestmark = pytest.mark.slow


def _spread(values: list[float]) -> float:
    logs = np.log(values)
    return float(1.4826 * np.median(np.abs(logs - np.median(logs))))


def test_the_same_model_in_run_and_in_ab(tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = SyntheticConfig(seed=4, num_streams=8, duration_s=4.0)
    model = RunConfig(adapter="work", adapter_options={"blocks": 30}, data=data, output_dir=tmp_path)
    ran = streambench.run(model)
    per_stream = [s.speed.latency.p50_ms for s in ran.result.metrics.streams]
    run_p50 = ran.result.metrics.overall.speed.latency.p50_ms
    report = streambench.ab(model, model, RoundsConfig(rounds=8, budget_s=None), "p50:+10%")
    p50 = next(e for e in report.gate.effects if e.key == "p50")
    ab_p50 = p50.base_median / 1e6
    # the noise each output reports: the spread of run's per-stream p50s, the spread between ab's rounds
    noise = math.hypot(_spread(per_stream), p50.base_spread)
    assert abs(math.log(run_p50 / ab_p50)) <= 3 * noise + 0.05, (run_p50, ab_p50, noise)
    said = " ".join(report.differs_from_run)
    assert "frames in turn" in said and "fresh worker processes" in said and "CPU clock" in said
    assert "data:" not in said or "synthetic streams" in said
