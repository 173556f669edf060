"""``--adapter triton`` against a stand-in for Triton Inference Server (tritonclient's own KServe v2 gRPC
stubs, the sequence batcher's correlation ids and start / end flags; no Triton binary runs here) around
the reference model, on 127.0.0.1 in this process."""

from __future__ import annotations

import pytest

from streambench.adapters.registry import AdapterLoadError, create_adapter
from streambench.harness.execution.engine import AdapterCallError
from tests.adapters.served.servers import (
    BOUND,
    STREAMS,
    TritonStandIn,
    answers_as_in_process,
    batched_equals_alone,
    served_engine,
    triton_server,
)

DIMS = dict(BOUND["input_dims"])  # type: ignore[call-overload]


def test_the_served_reference_model_answers_as_the_in_process_one_one_sequence_per_stream() -> None:
    stand_in = TritonStandIn(DIMS)
    with triton_server(stand_in) as url:
        served = served_engine("triton", url, model_name="reference")
        assert served.adapter.info.name == "triton:reference"
        answers_as_in_process(served)
        # a sequence per stream, each started by its first frame and ended when the next stream began
        assert len(set(stand_in.starts)) == len(STREAMS) and stand_in.ends == stand_in.starts[:-1]
        served.adapter.close()  # type: ignore[attr-defined]
        assert stand_in.ends == stand_in.starts and not stand_in.sequences


def test_without_the_response_parameter_there_is_no_model_only_figure() -> None:
    with triton_server(TritonStandIn(DIMS, model_ns=False)) as url:
        record = served_engine("triton", url, model_name="reference").run_stream(STREAMS[0])
    assert record.server_ns is not None and (record.server_ns == -1).all()


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("silent", "no reply to frame 7 in time (reply_timeout_s): the server is slow or silent"),
        ("error", "Triton failed on frame 7 (or a request in flight with it): CUDA out of memory (planted)"),
    ],
)
def test_each_fault_is_the_streams_failure_at_its_frame(fault: str, says: str) -> None:
    with triton_server(TritonStandIn(DIMS, fault=fault, at=7)) as url:
        engine = served_engine("triton", url, model_name="reference", reply_timeout_s=1.0)
        with pytest.raises(AdapterCallError) as caught:
            engine.run_stream(STREAMS[0])
        assert (caught.value.stream_id, caught.value.frame) == (STREAMS[0].stream_id, 7)
        assert says in str(caught.value)


def test_a_model_triton_does_not_serve_fails_at_load() -> None:
    with (
        triton_server(TritonStandIn(DIMS, model_name="other")) as url,
        pytest.raises(AdapterLoadError, match="no model 'reference'"),
    ):
        create_adapter("triton", {"url": url, "model_name": "reference"}, data_bound=BOUND)


def test_batch_mode_serves_each_stream_as_its_own_sequence_on_one_stream() -> None:
    stand_in = TritonStandIn(DIMS)
    with triton_server(stand_in) as url:
        adapter = create_adapter("triton", {"url": url, "model_name": "reference"}, data_bound=BOUND)
        assert batched_equals_alone(adapter) == len(STREAMS)
        assert len(stand_in.sequences) == len(STREAMS)
