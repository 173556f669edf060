"""``--adapter websocket`` against the example WebSocket server (examples/serving/websocket_server.py) and
faulty variants of it, all on 127.0.0.1 in this process (tests/adapters/served/servers.py): the served
reference model answers exactly as the in-process one, every reply's model-only figure is recorded per frame,
a delay on the wire shows in the end-to-end figure only, and every fault is the stream's failure at its
frame, within the stated timeout."""

from __future__ import annotations

import time

import numpy as np
import pytest

from streambench.adapters.registry import AdapterLoadError, create_adapter
from streambench.harness.execution.engine import AdapterCallError, Engine
from tests.adapters.served.servers import (
    BOUND,
    STREAMS,
    SessionCount,
    answers_as_in_process,
    batched_equals_alone,
    delay_proxy,
    faulty_session,
    served_engine,
    websocket_server,
)


def _engine(url: str, **options: object) -> Engine:
    return served_engine("websocket", url, **options)


def test_the_served_reference_model_answers_as_the_in_process_one() -> None:
    with websocket_server() as url:
        served = _engine(url)
        assert served.adapter.info.name == "websocket:reference-causal"
        answers_as_in_process(served)  # float32 through JSON: exact


def test_a_delay_on_the_wire_shows_end_to_end_and_not_in_the_model_only_figure() -> None:
    with websocket_server() as url:
        port = int(url.rpartition(":")[2])
        with delay_proxy(f"127.0.0.1:{port}", 0.005) as proxied:
            record = _engine(f"ws://127.0.0.1:{proxied}").run_stream(STREAMS[0])
    assert record.server_ns is not None
    overhead = record.latency_ns - record.server_ns
    assert overhead.min() >= 9_500_000  # 5 ms each way, at least, on every frame
    assert np.median(record.server_ns) < 5_000_000  # the model's own time does not hold the wire's


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("drop", "the connection was lost awaiting the reply to frame 7"),
        ("silent", "no reply to frame 7 within 0.5 s (reply_timeout_s): the server is slow or silent"),
        ("garbage", "malformed reply to frame 7: not JSON"),
        ("wrong_index", "malformed reply to frame 7: the reply names frame 8, the frame sent was 7"),
        ("short_scores", "malformed reply to frame 7: scores of shape (3,), expected (29,)"),
        ("error", "the server failed on frame 7: CUDA out of memory (planted)"),
    ],
)
def test_each_fault_is_the_streams_failure_at_its_frame(fault: str, says: str) -> None:
    with websocket_server(faulty_session(fault, at=7)) as url:
        engine = _engine(url, reply_timeout_s=0.5)
        with pytest.raises(AdapterCallError) as caught:
            engine.run_stream(STREAMS[0])
        assert (caught.value.stream_id, caught.value.frame) == (STREAMS[0].stream_id, 7)
        assert says in str(caught.value) and url in str(caught.value)
        if fault != "drop":  # the next stream opens a new session and fails at its own frame 7 again
            with pytest.raises(AdapterCallError) as again:
                engine.run_stream(STREAMS[1])
            assert again.value.frame == 7


def test_a_slow_reply_within_the_timeout_is_a_slow_frame_not_a_failure() -> None:
    with websocket_server(faulty_session("slow", at=3, delay_s=0.05)) as url:
        record = _engine(url, reply_timeout_s=2.0).run_stream(STREAMS[0])
    assert record.server_ns is not None
    assert record.latency_ns[3] - record.server_ns[3] >= 50_000_000
    with (
        websocket_server(faulty_session("slow", at=3, delay_s=1.0)) as url,
        pytest.raises(AdapterCallError, match=r"no reply to frame 3 within 0\.2 s"),
    ):
        _engine(url, reply_timeout_s=0.2).run_stream(STREAMS[0])


def test_a_server_that_cannot_be_reached_or_serves_other_classes_fails_at_load() -> None:
    with websocket_server() as url:
        pass  # stopped: nothing listens there now
    with pytest.raises(AdapterLoadError, match=r"cannot connect within 0.5 s \(connect_timeout_s\)"):
        create_adapter("websocket", {"url": url, "connect_timeout_s": 0.5}, data_bound=BOUND)
    other = {**BOUND, "classes": ("background", "speech")}
    with (
        websocket_server() as url,
        pytest.raises(AdapterLoadError, match=r"serves 'reference-causal' with classes \['background', "),
    ):
        create_adapter("websocket", {"url": url}, data_bound=other)


def test_batch_mode_serves_each_stream_on_its_own_concurrent_session() -> None:
    with websocket_server() as url:
        adapter = create_adapter("websocket", {"url": url}, data_bound=BOUND)
        assert batched_equals_alone(adapter) == len(STREAMS)


def test_batch_mode_ends_the_sessions_of_streams_that_ended() -> None:
    sessions = SessionCount()
    with websocket_server(sessions) as url:
        adapter = create_adapter("websocket", {"url": url, "idle_session_s": 0.2}, data_bound=BOUND)
        frames = [next(iter(s.frames())) for s in STREAMS]
        adapter.predict_batch([(k, f) for k, f in enumerate(frames)])  # type: ignore[attr-defined]
        time.sleep(1.1)  # past the idle limit and the once-a-second look
        adapter.predict_batch([(10, frames[0])])  # type: ignore[attr-defined]
        assert list(adapter._sessions) == [10]  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10
        while sessions.open > 1 and time.monotonic() < deadline:  # the ended ones close on the server too
            time.sleep(0.05)
        assert sessions.open == 1
