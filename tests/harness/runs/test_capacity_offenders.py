"""The capacity offenders through the whole flow, sealed (end-to-end: slow tier). The load shedder
(adapters/offenders/capacity_cheats.py: background at once when behind) is caught at a point where it
falls behind: F1 not held against its own unloaded output, its answers changed; its honest twin (same model,
same cost) is never flagged, whatever the load. Whether a search ends where a model is behind depends on
the machine; that a deterministic model's answers agree with its unloaded ones does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.runs.capacity import execute_capacity
from streambench.protocols.capacity import CapacityConfig

pytestmark = pytest.mark.slow

# N = 1, then N = 8: 8 streams of an 8 ms model at 25 frames/s need 1.6 cores of work, more than one replica;
# a long deadline (200 ms) keeps the shedder, 5 ms behind at most, from being cut short before it is scored
SETTINGS = {
    "streams": 8,
    "deadline_ms": 200,
    "confidence": 0.8,
    "target_miss_rate": 0.05,
    "slack_misses": 0,
    "min_point_s": 2.0,
}


def _search(adapter: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    run = RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": {"cost_ms": 8},
            "data": {"seed": 1, "num_streams": 4, "duration_s": 4},
            "output_dir": tmp_path,
            "run_id": adapter,
        }
    )
    result, _ = execute_capacity(run, CapacityConfig.model_validate({**SETTINGS, "budget_s": 120}))
    return result.score


def test_the_load_shedder_is_caught_and_its_twin_is_not_flagged(tmp_path: Path) -> None:
    shedder = _search("offender-load-shedder", tmp_path)
    caught = [p for p in shedder.curve if p.outputs_changed and not p.accuracy_pass]
    assert caught, [p.verdict for p in shedder.curve]
    assert all("answers changed under load" in p.verdict for p in caught), [p.verdict for p in caught]
    assert shedder.sources == "fresh" and shedder.f1_reference == "unloaded"
    twin = _search("offender-load-shedder-twin", tmp_path)
    assert all(p.agreement in (None, 1.0) and not p.outputs_changed for p in twin.curve), [
        p.verdict for p in twin.curve
    ]
