"""The serving worker's core (harness/execution/serving_worker.py, issue 28): batch settings the adapter
refuses are named; a replica gives each stream its own state."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import Frame
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
