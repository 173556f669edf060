"""The capacity search with sealed serving workers on the wall clock (issue 28): the planted cross-stream
peeker, in its own sandboxed process, finds nothing of another stream's future, in both serving modes;
a batch size the adapter refuses stops the run before any point, naming the setting."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams, make_warmup_stream
from streambench.harness.execution.capacity_search import SourceStreams, run_search
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.load_generator import WallClock
from streambench.harness.execution.sealed_feed import encode_frame
from streambench.harness.execution.serving_pool import sealed_pool
from streambench.harness.execution.setup import data_bound_of
from streambench.protocols.capacity import CapacityConfig

PEEKER = "streambench.adapters.offenders.cross_stream:CrossStreamPeekerAdapter"
DATA = SyntheticConfig(seed=11, num_streams=3, duration_s=2)


@pytest.mark.slow
@pytest.mark.parametrize("serving", ["replicas", "batched"])
def test_the_peeker_in_a_sealed_worker_finds_nothing(serving: str) -> None:
    streams = make_streams(DATA)
    warmup = [encode_frame(f) for f in make_warmup_stream(DATA, 8).frames()]
    run = RunConfig(adapter=PEEKER, data=DATA, adapter_options={"scan_every": 1})
    # a short fixed point: N = 1 and N = 3 for a second each, a loose deadline (each call of the peeker walks
    # every object of its process: tens of ms; what it finds is the point, not its speed)
    config = CapacityConfig(
        deadline_ms=10_000,
        serving=serving,  # type: ignore[arg-type]
        max_batch=4,
        max_wait_us=2000,
        streams=3,
        confidence=0.5,
        target_miss_rate=0.2,
        slack_misses=0,
        min_point_s=1.0,
        budget_s=60,
    )
    sources = SourceStreams.of(streams)
    with sealed_pool(run, config, data_bound_of(streams[0]), warmup) as (pool, record):
        score = run_search(sources, config, pool, WallClock())
    assert record.info is not None and record.info.name == "offender-cross-stream"
    assert record.sandbox is not None and not record.leftover
    assert [p.streams for p in score.curve] == [1, 3] and score.status == "fixed"
    for point in score.curve:  # every frame answered (a CrossStreamLeak would have raised)
        assert point.served == point.frames > 20 and point.aborted is None
        assert point.workers_cpu_share is not None and point.workers_cpu_share > 0
    assert np.isfinite(score.curve[1].response_p99_ms or np.nan)


@pytest.mark.slow
def test_a_batch_size_the_adapter_refuses_stops_before_any_point() -> None:
    streams = make_streams(DATA)
    run = RunConfig(adapter="reference-lookahead", data=DATA)
    config = CapacityConfig(serving="batched", max_batch=8)
    refused = "max_batch = 8: adapter 'reference-lookahead' has no batch mode"
    with pytest.raises(ValueError, match=refused), sealed_pool(run, config, data_bound_of(streams[0]), []):
        pass
