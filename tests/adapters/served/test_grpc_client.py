"""``--adapter grpc`` against the example gRPC server (examples/serving/grpc_server.py) and faulty variants
of it, on 127.0.0.1 in this process: the served reference model answers exactly as the in-process one, the
model-only figure is recorded per frame, a delay on the wire shows end to end only, each fault is the
stream's failure at its frame within the stated timeout; and the committed ``streambench_serving_pb2`` is
what the shipped ``.proto`` compiles to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streambench.adapters.registry import AdapterLoadError, create_adapter
from streambench.harness.execution.engine import AdapterCallError, Engine
from tests.adapters.served.servers import (
    BOUND,
    STREAMS,
    answers_as_in_process,
    batched_equals_alone,
    delay_proxy,
    faulty_grpc,
    grpc_server,
    served_engine,
)

SERVED = Path(__file__).resolve().parents[3] / "adapters" / "served"


def _engine(url: str, **options: object) -> Engine:
    return served_engine("grpc", url, **options)


def test_the_served_reference_model_answers_as_the_in_process_one() -> None:
    with grpc_server() as url:
        served = _engine(url)
        assert served.adapter.info.name == "grpc:reference-causal"
        answers_as_in_process(served)


def test_a_missing_modality_is_absent_from_the_request_and_answered_as_in_process() -> None:
    frames = list(STREAMS[0].frames())
    for frame in frames[::3]:
        frame.inputs = {**frame.inputs, "visual": None}
    local = create_adapter("reference", data_bound=BOUND)
    with grpc_server() as url:
        adapter = create_adapter("grpc", {"url": url}, data_bound=BOUND)
        adapter.reset_state()
        local.reset_state()
        for frame in frames:
            np.testing.assert_array_equal(adapter.predict(frame).scores, local.predict(frame).scores)  # type: ignore[union-attr]


def test_a_delay_on_the_wire_shows_end_to_end_and_not_in_the_model_only_figure() -> None:
    with grpc_server() as url, delay_proxy(url, 0.005) as proxied:
        record = _engine(f"127.0.0.1:{proxied}").run_stream(STREAMS[0])
    assert record.server_ns is not None
    assert (record.latency_ns - record.server_ns).min() >= 9_500_000  # 5 ms each way, at least
    assert np.median(record.server_ns) < 5_000_000


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("drop", "the session was lost awaiting the reply to frame 7 (StatusCode.UNAVAILABLE: planted"),
        ("silent", "no reply to frame 7 within 0.5 s (reply_timeout_s): the server is slow or silent"),
        ("wrong_index", "malformed reply to frame 7: the reply names frame 8, the frame sent was 7"),
        ("short_scores", "malformed reply to frame 7, predictions[0]: scores of shape (3,), expected (29,)"),
        ("error", "the server failed on frame 7: CUDA out of memory (planted)"),
    ],
)
def test_each_fault_is_the_streams_failure_at_its_frame(fault: str, says: str) -> None:
    with grpc_server(faulty_grpc(fault, at=7)) as url:
        engine = _engine(url, reply_timeout_s=0.5)
        for stream in STREAMS[:2]:  # and the next stream, on a new session, at its own frame 7
            with pytest.raises(AdapterCallError) as caught:
                engine.run_stream(stream)
            assert (caught.value.stream_id, caught.value.frame) == (stream.stream_id, 7)
            assert says in str(caught.value) and url in str(caught.value)


def test_a_server_that_stops_fails_the_stream_at_its_frame_and_the_next_at_its_first() -> None:
    with grpc_server() as url:
        engine = _engine(url, reply_timeout_s=2.0, connect_timeout_s=0.5)
        engine.run_stream(STREAMS[0])
        engine.adapter.reset_state()
    with pytest.raises(AdapterCallError) as caught:  # the server is gone: the session cannot be served
        engine.run_stream(STREAMS[1])
    assert caught.value.frame == 0 and "StatusCode.UNAVAILABLE" in str(caught.value)


def test_a_server_that_cannot_be_reached_fails_at_load() -> None:
    with grpc_server() as url:
        pass
    with pytest.raises(AdapterLoadError, match=r"cannot connect within 0.5 s \(connect_timeout_s\)"):
        create_adapter("grpc", {"url": url, "connect_timeout_s": 0.5}, data_bound=BOUND)


def test_batch_mode_serves_each_stream_on_its_own_concurrent_session() -> None:
    with grpc_server() as url:
        adapter = create_adapter("grpc", {"url": url}, data_bound=BOUND)
        assert batched_equals_alone(adapter) == len(STREAMS)


def _without_json_names(file: Any) -> None:
    for message in [*file.message_type, *(n for m in file.message_type for n in m.nested_type)]:
        for field in message.field:
            field.ClearField("json_name")


@pytest.mark.processes
def test_the_committed_module_is_what_the_shipped_proto_compiles_to(tmp_path: Path) -> None:
    """The messages and the service the committed module registers are the ``.proto``'s, as protoc reads it
    now (compared as descriptors: the generated text also depends on protoc's version)."""
    pytest.importorskip("grpc_tools")
    from google.protobuf import descriptor_pb2

    import streambench.adapters.served.streambench_serving_pb2 as committed

    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", f"-I{SERVED}", f"--descriptor_set_out={tmp_path / 'set'}",
         str(SERVED / "streambench_serving.proto")],
        check=True,
    )  # fmt: skip
    (compiled,) = descriptor_pb2.FileDescriptorSet.FromString((tmp_path / "set").read_bytes()).file
    _without_json_names(compiled)  # a descriptor set names each field's JSON form, generated code does not
    assert descriptor_pb2.FileDescriptorProto.FromString(committed.DESCRIPTOR.serialized_pb) == compiled, (
        "regenerate streambench_serving_pb2.py and .pyi: the command is in the .proto's header"
    )
