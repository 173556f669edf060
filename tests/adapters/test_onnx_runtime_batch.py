"""Batch mode of the ONNX Runtime wrapper (adapters/onnx_runtime.py, adapters/onnx_batch.py; issue 28):
``predict_batch`` serves one frame of each of several streams in one ``session.run``, the GRU state batched
along axis 1 and kept per stream, and answers each stream as ``predict`` does one stream at a time; a
model whose declared shapes fix the batch axis at 1 is refused at load, naming the input and its shape.

The models are a small torch GRU exported as tests/adapters/test_onnx_runtime.py exports them
(``torch.onnx.export(..., dynamo=False)``), here with the batch axes dynamic.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.onnx_runtime import OnnxAdapter, OnnxLoadError, OnnxOptions
from streambench.adapters.registry import create_adapter

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

DIM, HIDDEN, CLASSES = 4, 8, ("a", "b", "c")
X0, H0 = torch.zeros(1, DIM), torch.zeros(1, 1, HIDDEN)
BATCH_AXES = {"x": {0: "b"}, "h": {1: "b"}, "logits": {0: "b"}, "h_out": {1: "b"}}


class BatchGru(nn.Module):
    """``forward(x [B, D], h [1, B, H]) -> (logits [B, C], h')``: every row its own stream."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(DIM, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, len(CLASSES))

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.gru(x.unsqueeze(1), h)
        return self.head(out[:, 0]), h


def _export(path: Path, **kwargs: Any) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated in torch 2.13
        torch.onnx.export(
            BatchGru().eval(), (X0, H0), str(path), input_names=["x", "h"], output_names=["logits", "h_out"],
            dynamo=False, **kwargs,
        )  # fmt: skip
    return str(path)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("onnx_batch")
    return {
        "dynamic": _export(folder / "dynamic.onnx", dynamic_axes=BATCH_AXES),
        "fixed": _export(folder / "fixed.onnx"),  # every axis fixed: x [1, 4], h [1, 1, 8]
        # the state batched, the frame input not: x stays [1, 4]
        "frame_fixed": _export(folder / "frame_fixed.onnx", dynamic_axes={"h": {1: "b"}, "h_out": {1: "b"}}),
    }


def _load(path: str, **options: Any) -> OnnxAdapter:
    options = {"classes": CLASSES, "state": {"h": "h_out"}, "state_shapes": {"h": [1, 1, HIDDEN]}, **options}
    return OnnxAdapter(OnnxOptions(path=path, **options))


def _streams(count: int, frames: int) -> list[list[Frame]]:
    rng = np.random.default_rng(11)
    xs = rng.standard_normal((count, frames, DIM)).astype(np.float32)
    return [[Frame(i, (i + 1) / 25, {"audio": xs[s, i]}) for i in range(frames)] for s in range(count)]


def _alone(adapter: OnnxAdapter, frames: list[Frame]) -> np.ndarray:
    """The stream served one frame at a time by ``predict`` after a reset: the reference."""
    adapter.reset_state()
    out = []
    for frame in frames:
        prediction = adapter.predict(frame)
        assert isinstance(prediction, Prediction)
        out.append(prediction.scores)
    return np.array(out)


def _scores(outputs: list[Any]) -> list[np.ndarray]:
    assert all(isinstance(o, Prediction) for o in outputs)
    return [o.scores for o in outputs]


def test_a_batch_answers_each_stream_as_predict_does_alone_as_streams_join_and_leave(
    models: dict[str, str],
) -> None:
    """Five streams of 12 frames in batches of up to 4: stream 0 runs throughout, streams 1-2 join at frame
    3, stream 3 leaves after frame 6 and stream 4 takes its place at a frame of its own 0; each stream's
    scores equal ``predict``'s one stream at a time (float tolerance), so no state leaked between them."""
    adapter = _load(models["dynamic"], max_batch_size=4, state_batch_axis=1)
    assert adapter.max_batch_size == 4
    streams = _streams(5, 12)
    alone = [_alone(adapter, frames) for frames in streams]
    adapter.reset_state()
    served: dict[int, list[np.ndarray]] = {s: [] for s in range(5)}
    position = dict.fromkeys(range(5), 0)
    for step in range(12):
        live = [0, 3] if step < 3 else [0, 1, 2, 3] if step <= 6 else [0, 1, 2, 4]
        live = [s for s in live if position[s] < 12]
        order = live[step % len(live) :] + live[: step % len(live)]  # streams in changing batch positions
        items = [(100 + s, streams[s][position[s]]) for s in order]
        for s, scores in zip(order, _scores(adapter.predict_batch(items)), strict=True):
            served[s].append(scores)
            position[s] += 1
    for s in range(5):
        count = len(served[s])
        assert count == {0: 12, 1: 9, 2: 9, 3: 7, 4: 5}[s]
        np.testing.assert_allclose(np.array(served[s]), alone[s][:count], atol=1e-5)
    # the states differ per stream: a stream fed another's state would not match (the test can fail)
    assert not np.allclose(alone[1][:5], alone[4][:5], atol=1e-3)


def test_reset_forgets_every_stream_and_the_batch_bounds_are_kept(models: dict[str, str]) -> None:
    adapter = _load(models["dynamic"], max_batch_size=2, state_batch_axis=1)
    (frames,) = _streams(1, 3)
    first = _scores(adapter.predict_batch([(7, frames[0])]))[0]
    carried = _scores(adapter.predict_batch([(7, frames[0])]))[0]  # the same key: its state carried
    assert not np.allclose(first, carried)
    adapter.reset_state()
    np.testing.assert_allclose(_scores(adapter.predict_batch([(7, frames[0])]))[0], first, atol=1e-6)
    with pytest.raises(ValueError, match="exceeds max_batch_size = 2"):
        adapter.predict_batch([(1, frames[0]), (2, frames[0]), (3, frames[0])])
    with pytest.raises(ValueError, match="at most one frame per stream"):
        adapter.predict_batch([(1, frames[0]), (1, frames[1])])
    assert adapter.predict_batch([]) == []


def test_batch_mode_through_the_registry_and_off_by_default(models: dict[str, str]) -> None:
    options = {"path": models["dynamic"], "state": {"h": "h_out"}, "state_shapes": {"h": [1, 1, HIDDEN]}}
    batched = create_adapter("onnx", {**options, "max_batch_size": 3, "state_batch_axis": 1},
                             data_bound={"classes": CLASSES})  # fmt: skip
    assert batched.max_batch_size == 3  # type: ignore[attr-defined]
    plain = create_adapter("onnx", options, data_bound={"classes": CLASSES})
    assert getattr(plain, "max_batch_size", 0) == 0
    (frames,) = _streams(1, 1)
    with pytest.raises(NotImplementedError, match="batch mode is off"):
        plain.predict_batch([(1, frames[0])])  # type: ignore[attr-defined]


def test_a_fixed_batch_axis_is_refused_at_load_naming_the_input_and_its_shape(models: dict[str, str]) -> None:
    with pytest.raises(
        OnnxLoadError, match=r"frame input 'x' is declared \[1, 4\], its batch axis 0 fixed at 1"
    ):
        _load(models["fixed"], max_batch_size=4, state_batch_axis=1)
    with pytest.raises(OnnxLoadError, match=r"frame input 'x' is declared \[1, 4\]"):
        _load(models["frame_fixed"], max_batch_size=2, state_batch_axis=1)
    # the state's batch axis is 1: along axis 0 the declared [1, b, 8] is fixed, so that is refused too
    with pytest.raises(
        OnnxLoadError, match=r"state input 'h' is declared \[1, b, 8\], its batch axis 0 fixed"
    ):
        _load(models["dynamic"], max_batch_size=2, state_batch_axis=0)
    # batches of one fit a fixed batch axis of 1, and the same model serves them one at a time
    single = _load(models["fixed"], max_batch_size=1, state_batch_axis=1)
    (frames,) = _streams(1, 4)
    served = [_scores(single.predict_batch([(5, f)]))[0] for f in frames]
    np.testing.assert_allclose(np.array(served), _alone(single, frames), atol=1e-6)
