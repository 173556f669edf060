"""Batched serving through the load generator is causal across streams (issue 28;
harness/execution/load_generator.py): one stream served alone equals the same stream served among
others; a planted cross-stream peeker finds nothing of another stream's future in the load
generator's batches, and finds what a prefetching worker would hold."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import Frame
from streambench.adapters.registry import create_adapter
from streambench.harness.execution.capacity_search import SourceStreams
from streambench.harness.execution.load_generator import run_point
from streambench.harness.execution.serving_worker import ServingCore, ServingError
from tests.adapters.test_reference_batch import BOUND, STREAMS
from tests.harness.execution.capacity_sim import SimClock, SimLane, _core, _setup, _stream


def test_one_stream_alone_equals_it_among_others_through_the_load_generator() -> None:
    """End to end on the simulated clock, batched (up to 4 streams a batch, 2 ms wait): the first session
    of stream 0 scores the same served alone (N = 1) and among 5 streams."""
    sources = SourceStreams.of(STREAMS[:1])
    scores = {}
    for n in (1, 5):
        clock = SimClock()
        core = ServingCore(lambda: create_adapter("reference", {}, data_bound=BOUND), "batched", 4)
        lane = SimLane(clock, core, 1_000_000, per_frame_ns=200_000)
        classes = len(BOUND["classes"])
        setup = _setup(sources, n, 1_500_000_000, 1, max_batch=4, max_wait_ns=2_000_000, num_classes=classes)
        served = run_point(setup, [lane], clock)
        mine = (setup.schedule.session[served.pred_frame] == 0) & (
            setup.schedule.channel[served.pred_frame] == 0
        )
        order = np.argsort(served.pred_refers[mine])
        scores[n] = served.pred_scores[mine][order]
        if n == 5:
            assert max(len(keys) for _, keys, _ in lane.sent) > 1  # it was really batched with others
    assert scores[1].shape == scores[5].shape and len(scores[1]) > 10
    assert np.allclose(scores[1], scores[5], atol=2e-6)


def test_the_peeker_finds_nothing_in_the_load_generators_batches() -> None:
    sources = SourceStreams.of([_stream(f"s{k}", 40.0, 10, k) for k in range(2)])
    clock = SimClock()
    lane = SimLane(clock, _core("batched", 4, scan_every=1), 3_000_000)
    served = run_point(_setup(sources, 3, 300_000_000, 1, max_batch=4, max_wait_ns=5_000_000), [lane], clock)
    assert served.pred_frame.size == (served.finish_ns >= 0).sum() > 10


class PrefetchingLane(SimLane):
    """A worker fed ahead of time: it decodes every frame of the point when the first batch comes (as a
    pipelined server that pushed the streams into the worker would)."""

    def __init__(self, *args: object, future: list[bytes], **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.future = future
        self.held: list[Frame] = []

    def send(self, message: bytes) -> None:
        if not self.held:
            from streambench.harness.execution.sealed_feed import decode_frame

            self.held = [decode_frame(data) for data in self.future]
        super().send(message)


def test_the_peeker_finds_a_prefetching_workers_future() -> None:
    sources = SourceStreams.of([_stream("s", 40.0, 10, 0)])
    clock = SimClock()
    lane = PrefetchingLane(clock, _core("batched", 4, scan_every=1), 3_000_000, future=sources.encoded[0][5:])
    with pytest.raises(ServingError, match="never handed to it: index 5"):
        run_point(_setup(sources, 2, 300_000_000, 1, max_batch=4), [lane], clock)
