"""Batched serving is causal across streams (issue 28): ``predict_batch`` of the reference model
(adapters/reference.py) equals ``predict`` stream by stream."""

from __future__ import annotations

import numpy as np

from streambench.adapters.contract import Frame
from streambench.adapters.reference import CausalReferenceAdapter
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams

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
