"""The capacity protocol against served models (docs/serving.md): N live streams are N concurrent client
sessions on the server (the example WebSocket and gRPC servers around the reference model, started by
the test on 127.0.0.1), timed end to end on the load generator's clock."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.serving_worker import ServingError
from streambench.harness.runs.capacity import execute_capacity
from streambench.protocols.capacity import CapacityConfig
from tests.adapters.served.servers import SessionCount, faulty_session, grpc_server, websocket_server

QUICK = {"streams": 4, "confidence": 0.5, "target_miss_rate": 0.2, "slack_misses": 0, "min_point_s": 1.0}


def _run(tmp_path: Path, adapter: str, url: str, isolate: bool, **settings: object) -> CapacityConfig:
    run = RunConfig.model_validate(
        {
            "adapter": adapter,
            "adapter_options": {"url": url},
            "data": {"seed": 3, "num_streams": 3, "duration_s": 2},
            "engine": {"warmup_frames": 5},
            "output_dir": tmp_path,
            "run_id": "cap",
            "isolate": isolate,
        }
    )
    result, _ = execute_capacity(run, CapacityConfig.model_validate({**QUICK, "budget_s": 60, **settings}))
    assert result.score.status == "fixed" and [p.streams for p in result.score.curve] == [1, 4]
    for point in result.score.curve:  # every frame answered (whether in time is the machine's: not asserted)
        assert point.served == point.frames or point.aborted is not None, point.verdict
        if point.misses == 0:  # every answer in time: F1@deadline is what the outputs score served instantly
            assert point.f1 == pytest.approx(point.f1_unloaded)
    return result.config


@pytest.mark.processes
@pytest.mark.parametrize(("serving", "settings"), [("batched", {"max_batch": 4}), ("replicas", {})])
def test_n_live_streams_are_n_concurrent_sessions_on_the_server(
    tmp_path: Path, serving: str, settings: dict[str, object]
) -> None:
    sessions = SessionCount()
    with websocket_server(sessions) as url:
        _run(tmp_path, "websocket", url, isolate=False, serving=serving, **settings)
    assert sessions.most >= 4 and sessions.open == 0


@pytest.mark.slow  # sealed serving workers
def test_sealed_serving_workers_reach_the_server_and_serve_it_batched(tmp_path: Path) -> None:
    with grpc_server() as url:
        config = _run(tmp_path, "grpc", url, isolate=True, serving="batched", max_batch=4)
    assert config.serving == "batched"


@pytest.mark.processes
def test_a_silent_server_ends_the_search_naming_the_live_stream_and_frame_within_the_timeout(
    tmp_path: Path,
) -> None:
    """The first session to reach frame 7 gets no reply: the search ends within the served adapter's reply
    timeout (not the load generator's 30 s per batch), naming live stream 0 and frame 7, whether the
    capacity protocol raises the failure or records it in ``score.failure`` with the points before it."""
    run = RunConfig.model_validate(
        {
            "adapter": "websocket",
            "adapter_options": {"url": "", "reply_timeout_s": 0.5},
            "data": {"seed": 3, "num_streams": 3, "duration_s": 2},
            "engine": {"warmup_frames": 5},
            "output_dir": tmp_path,
            "isolate": False,
        }
    )
    config = CapacityConfig.model_validate({**QUICK, "budget_s": 60})
    with websocket_server(faulty_session("silent", at=7, times=1)) as url:
        run.adapter_options["url"] = url
        started = time.monotonic()
        try:
            result, _ = execute_capacity(run, config)
        except ServingError as exc:
            said = str(exc)
            assert "stream 0, frame 7: " in said
        else:
            failure = getattr(result.score, "failure", None)
            assert failure is not None and (failure.stream, failure.frame) == (0, 7), result.score.notes
            said = failure.message
    assert time.monotonic() - started < 30
    assert re.search(r"no reply to frame 7 within 0\.5 s \(reply_timeout_s\)", said), said
