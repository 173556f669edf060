"""Progress within a stream (issue 17): an isolated or sealed worker (harness/execution/isolation.py)
reports the frame it is at. No timing is asserted: each stream spins long enough that a report must
fall inside it."""

from __future__ import annotations

import pytest

from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.isolation import IsolatedEngine


@pytest.mark.processes
@pytest.mark.parametrize("sealed", [False, True], ids=["isolated", "sealed"])
def test_an_isolated_worker_reports_the_frame_it_is_at(sealed: bool) -> None:
    # 2 streams of 4 s at 25 fps, 10 ms of spinning per frame: each stream lasts 1 s or more in the worker
    config = RunConfig(
        adapter="busywait",
        adapter_options={"duration_us": 10_000},
        data={"num_streams": 2, "duration_s": 4.0, "seed": 0},
        engine={"warmup_frames": 5},
    )
    seen: list[tuple[str, int, int | None]] = []
    with IsolatedEngine(config, IsolationConfig(sealed=sealed)) as engine:
        engine.warm_up()
        stream_id = engine.stream_ids[0]
        engine.run_stream(stream_id, progress=lambda s, done, total: seen.append((s, done, total)))
        engine.run_stream(engine.stream_ids[1])  # without a hook: nothing reported
    assert seen and {s for s, _, _ in seen} == {stream_id}
    assert all(total == 100 and 0 <= done < 100 for _, done, total in seen)
    assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen)
