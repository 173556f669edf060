"""An A/B job gives no verdict, pass or fail, when either side's measurement is INVALID
(harness/runs/ab.py): an unchanged model would otherwise pass on figures the gate cannot trust."""

from __future__ import annotations

import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.rounds import RoundsConfig, Side
from streambench.harness.results.compare import FailOnSpec
from streambench.harness.results.quality import MeasurementQuality, QualityLimits
from streambench.harness.runs import ab


def _invalid(side: object) -> MeasurementQuality:
    return MeasurementQuality(
        verdict="INVALID", reasons=["planted: a busy machine"], frames=1, streams=1, latency_spread=None,
        preempted_share=None, clock_resolution_ns=None, limits=QualityLimits(),
    )  # fmt: skip


@pytest.mark.processes
@pytest.mark.parametrize("force", [False, True])
def test_an_invalid_side_gets_no_pass(monkeypatch: pytest.MonkeyPatch, force: bool) -> None:
    run = RunConfig(adapter="busywait", adapter_options={"duration_us": 200.0},
                    data=SyntheticConfig(seed=1, num_streams=2, duration_s=2.0),
                    engine=EngineConfig(warmup_frames=10))  # fmt: skip
    monkeypatch.setattr(ab, "_quality", _invalid)
    rules = FailOnSpec.parse("p50:+50%").rules  # a floor so wide that the same model passes it
    rounds = RoundsConfig(rounds=8, streams_per_round=1, restart_every=None, budget_s=None)
    report = ab.run_ab(Side(label="base", run=run), Side(label="head", run=run), rounds, rules, force=force)
    assert report.gate.verdict == "no regression"  # what the pairs alone say
    if force:
        assert report.verdict == "no regression" and report.refusal is None
    else:
        assert report.verdict == "inconclusive" and report.exit_code == 3
        assert report.refusal is not None and "no verdict is called, pass or fail" in report.refusal
