"""Batched serving is causal across streams (issue 28): ``predict_batch`` of the reference model and the
torch-module wrapper equals ``predict`` stream by stream; one stream served alone equals the same stream
served among others; a planted cross-stream peeker finds nothing of another stream's future in the load
generator's batches, and finds what a prefetching worker would hold; bad batch settings are refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from streambench.adapters.contract import Frame
from streambench.adapters.offenders.cross_stream import (
    CrossStreamLeak,
    CrossStreamPeekerAdapter,
    CrossStreamPeekerOptions,
)
from streambench.adapters.reference import CausalReferenceAdapter
from streambench.adapters.registry import create_adapter
from streambench.adapters.torch_module import TorchModuleAdapter, TorchModuleLoadError, TorchModuleOptions
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution.capacity_search import SourceStreams
from streambench.harness.execution.load_generator import run_point
from streambench.harness.execution.serving_worker import ServingCore, ServingError, _decode_batch
from tests.harness.test_capacity_loop import SimClock, SimLane, _core, _setup, _stream

STREAMS = make_streams(SyntheticConfig(seed=5, num_streams=5, duration_s=2))
BOUND = {"classes": STREAMS[0].classes, "input_dims": {"audio": 64, "visual": 128}}


def _without(frame: Frame, modality: str) -> Frame:
    return Frame(frame.index, frame.t, {**frame.inputs, modality: None})


def _alone(adapter: CausalReferenceAdapter, frames: list[Frame]) -> np.ndarray:
    adapter.reset_state()
    return np.stack([adapter.predict(f).scores for f in frames])  # type: ignore[union-attr]


def test_reference_batch_equals_one_stream_at_a_time() -> None:
    """Every stream's scores from mixed batches (streams joining and leaving, modalities missing, frames
    with none) equal its scores fed alone through predict(), to float32 rounding."""
    frames = [list(s.frames()) for s in STREAMS]
    frames[1] = [_without(f, "audio") if f.index % 3 == 0 else f for f in frames[1]]
    frames[2] = [_without(_without(f, "audio"), "visual") if f.index < 4 else f for f in frames[2]]
    single = CausalReferenceAdapter(CausalReferenceAdapter.Options(**BOUND))
    batched = CausalReferenceAdapter(CausalReferenceAdapter.Options(**BOUND))
    got: dict[int, list[np.ndarray]] = {k: [] for k in range(len(frames))}
    rng = np.random.default_rng(0)
    position = [0] * len(frames)
    while any(p < len(f) for p, f in zip(position, frames, strict=True)):
        ready = [k for k in range(len(frames)) if position[k] < len(frames[k]) and rng.random() < 0.6]
        if not ready:
            continue
        outputs = batched.predict_batch([(1000 + k, frames[k][position[k]]) for k in ready])
        for k, out in zip(ready, outputs, strict=True):
            got[k].append(out.scores)  # type: ignore[union-attr]
            position[k] += 1
    for k, stream_frames in enumerate(frames):
        assert np.allclose(np.stack(got[k]), _alone(single, stream_frames), atol=2e-6), k
    assert np.allclose(got[2][0], 1 / len(BOUND["classes"]))  # nothing seen yet: uniform, as predict()
    batched.reset_state()  # forgets every stream: the same key starts afresh
    again = batched.predict_batch([(1000, frames[0][0])])[0]
    assert np.allclose(again.scores, got[0][0], atol=2e-6)  # type: ignore[union-attr]


def test_one_stream_alone_equals_it_among_others_through_the_load_generator() -> None:
    """End to end on the simulated clock, batched (up to 4 streams a batch, 2 ms wait): the first session
    of stream 0 scores the same served alone (N = 1) and among 5 streams."""
    sources = SourceStreams.of(STREAMS[:1])
    scores = {}
    for n in (1, 5):
        clock = SimClock()
        core = ServingCore(lambda: create_adapter("reference", {}, data_bound=BOUND), "batched", 4)
        lane = SimLane(clock, core, 1_000_000, per_frame_ns=200_000)
        setup = _setup(sources, n, 1_500_000_000, 1, max_batch=4, max_wait_ns=2_000_000)
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


def test_the_peeker_refuses_two_frames_of_a_stream_in_a_batch() -> None:
    peeker = CrossStreamPeekerAdapter(CrossStreamPeekerOptions(scan_every=10**9))  # this test holds frames
    frames = [Frame(i, 0.04 * (i + 1), {"audio": np.zeros(2, np.float32)}) for i in range(3)]
    peeker.predict_batch([(1, frames[0])])
    with pytest.raises(CrossStreamLeak, match="two frames of one stream"):
        peeker.predict_batch([(1, frames[1]), (1, frames[2])])
    with pytest.raises(CrossStreamLeak, match="frame 0 after frame 0"):
        peeker.predict_batch([(1, frames[0])])


class StepGru(nn.Module):
    """State mode: ``forward(x [B, D], h [1, B, H]) -> (logits [B, C], h')``."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(4, 8, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor, h: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.gru(x.unsqueeze(1), h)
        return self.head(out[:, 0]), h


class ResettableGru(StepGru):
    def reset(self) -> None:
        return None


def _gru(max_batch_size: int, mode: str = "state") -> TorchModuleAdapter:
    options = TorchModuleOptions(
        factory="x:y",
        classes=("a", "b", "c"),
        input_dims={"audio": 4},
        max_batch_size=max_batch_size,
        state_batch_axis=1,
        mode=mode,  # type: ignore[arg-type]
    )
    return TorchModuleAdapter(options, module=ResettableGru())


def test_torch_module_batch_equals_predict_with_the_state_batched_along_its_axis() -> None:
    rng = np.random.default_rng(1)
    streams = [[Frame(i, 0.04 * (i + 1), {"audio": rng.normal(size=4).astype(np.float32)}) for i in range(6)]]
    streams += [
        [Frame(i, 0.04 * (i + 1), {"audio": rng.normal(size=4).astype(np.float32)}) for i in range(4)]
    ]
    single, batched = _gru(0), _gru(8)
    expected = []
    for frames in streams:
        single.reset_state()
        expected.append(np.stack([single.predict(f).scores for f in frames]))  # type: ignore[union-attr]
    got: list[list[np.ndarray]] = [[], []]
    for i in range(6):  # stream 1 joins at its first frame with a fresh (None) state, ends after 4
        items = [(7, streams[0][i])] + ([(9, streams[1][i - 2])] if 2 <= i < 6 else [])
        for (key, _), out in zip(items, batched.predict_batch(items), strict=True):
            got[0 if key == 7 else 1].append(out.scores)  # type: ignore[union-attr]
    for k in range(2):
        assert np.allclose(np.stack(got[k]), expected[k], atol=1e-6)


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
