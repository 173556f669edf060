"""The serving worker's core (harness/execution/serving_worker.py, issue 28): batch settings the adapter
refuses are named; a replica gives each stream its own state."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.null import NullAdapter
from streambench.adapters.reference import CausalReferenceAdapter
from streambench.adapters.registry import create_adapter
from streambench.adapters.torch_module import TorchModuleLoadError
from streambench.harness.execution.serving_worker import ServingCore, _decode_batch
from tests.adapters.test_reference_batch import BOUND, STREAMS, _alone
from tests.adapters.test_torch_module_batch import _gru


def test_batch_settings_the_adapter_refuses_name_the_field() -> None:
    with pytest.raises(ValueError, match="max_batch = 8: adapter 'reference-lookahead' has no batch mode"):
        ServingCore(lambda: create_adapter("reference-lookahead", {}, data_bound=BOUND), "batched", 8)
    with pytest.raises(ValueError, match="max_batch = 5000: adapter 'reference-causal' takes at most 4096"):
        ServingCore(lambda: create_adapter("reference", {}, data_bound=BOUND), "batched", 5000)
    with pytest.raises(ValueError, match="max_batch = 2: adapter 'null' has no batch mode"):
        ServingCore(lambda: create_adapter("null", {}, data_bound=BOUND), "batched", 2)
    with pytest.raises(TorchModuleLoadError, match="max_batch_size needs mode 'state'"):
        _gru(4, mode="stateful")
    with pytest.raises(ValueError, match="exceeds max_batch_size = 1"):
        frames = [Frame(0, 0.04, {"audio": np.zeros(4, np.float32)})] * 2
        _gru(1).predict_batch([(1, frames[0]), (2, frames[1])])


def test_a_replica_gives_each_stream_its_own_state() -> None:
    """Replicas: two streams interleaved frame by frame on one worker score as each alone."""
    core = ServingCore(lambda: create_adapter("reference", {}, data_bound=BOUND), "replicas", 1)
    core.prepare(3)
    from streambench.harness.execution.sealed_feed import encode_frame
    from streambench.harness.execution.serving_worker import FIRST, LAST, decode_reply, encode_batch

    frames = [list(s.frames())[:20] for s in STREAMS[:2]]
    got: list[list[np.ndarray]] = [[], []]
    for i in range(20):
        for k in range(2):
            flags = (FIRST if i == 0 else 0) | (LAST if i == 19 else 0)
            message = encode_batch([(50 + k, flags, encode_frame(frames[k][i]))])
            assert len(_decode_batch(message)) == 1
            got[k].append(decode_reply(core.serve(message), len(BOUND["classes"]))[2][0])
    single = CausalReferenceAdapter(CausalReferenceAdapter.Options(**BOUND))
    for k in range(2):
        assert np.allclose(np.stack(got[k]), _alone(single, frames[k]), atol=1e-6)


@pytest.mark.parametrize("fault", ["keyboard", "base", "genexit", "sysexit"])
@pytest.mark.parametrize("serving", ["replicas", "batched"])
def test_a_models_base_exception_in_a_batch_is_its_failure_at_that_frame(fault: str, serving: str) -> None:
    """A ``KeyboardInterrupt``, ``GeneratorExit``, ``SystemExit`` or other ``BaseException`` out of the
    model's ``predict()`` / ``predict_batch()`` is answered as the batch's error, naming the frame's place
    in it and the type, as an ``Exception`` is: the worker ignores SIGINT, so none of them is a Ctrl-C."""
    from streambench.harness.execution.sealed_feed import encode_frame
    from streambench.harness.execution.serving_worker import FIRST, encode_batch

    options = {"fault": fault, "stream_index": 0, "at_frame": 0, "max_batch_size": 4}
    core = ServingCore(lambda: create_adapter("faulty", options, data_bound=BOUND), serving, 4)
    core.prepare(1)
    frame = next(iter(STREAMS[0].frames()))
    reply = core.serve(encode_batch([(7, FIRST, encode_frame(frame))]))
    assert reply[:1] == b"E"
    error = json.loads(reply[1:])
    expected = {"keyboard": "KeyboardInterrupt", "base": "PlantedBaseException", "genexit": "GeneratorExit"}
    assert error["type"] == expected.get(fault, "SystemExit")
    assert error["item"] == (0 if serving == "replicas" else -1)
    assert "planted fault at frame 0" in error["message"] or fault == "sysexit"


class _Refers(NullAdapter):
    """The null model, each prediction labelling the frame ``ref`` names."""

    ref: object = None

    def predict(self, frame: Frame) -> Prediction:
        return Prediction(scores=np.zeros(self.info.num_classes, np.float32), refers_to=self.ref)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ref", "problem"),
    [
        ("3", "refers_to='3' is not a frame index (int)"),
        (1.5, "refers_to=1.5 is not a frame index (int)"),
        (True, "refers_to=True is not a frame index (int)"),
        (-1, "refers_to=-1 is outside [0, 2**63 - 1]"),
        (2**80, f"refers_to={2**80} is outside [0, 2**63 - 1]"),
    ],
)
def test_a_refers_to_that_is_no_frame_index_is_the_batch_error_as_in_a_run(ref: object, problem: str) -> None:
    """The serving worker checks ``refers_to`` as the online engine does (harness/execution/outputs.py):
    an int that an int64 holds, not negative; a string or a float is not converted."""
    from streambench.harness.execution.sealed_feed import encode_frame
    from streambench.harness.execution.serving_worker import FIRST, decode_reply, encode_batch

    def build() -> _Refers:
        adapter = _Refers(NullAdapter.Options(classes=BOUND["classes"]))
        adapter.ref = ref
        return adapter

    core = ServingCore(build, "replicas", 1)
    core.prepare(1)
    frame = next(iter(STREAMS[0].frames()))
    reply = core.serve(encode_batch([(7, FIRST, encode_frame(frame))]))
    assert reply[:1] == b"E", decode_reply(reply, len(BOUND["classes"]))
    error = json.loads(reply[1:])
    assert (error["type"], error["message"], error["item"]) == ("ServingError", problem, 0)
