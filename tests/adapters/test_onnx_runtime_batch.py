"""Batch mode of the ONNX Runtime wrapper (adapters/onnx_runtime.py, adapters/onnx_batch.py; issue 28):
``predict_batch`` serves one frame of each of several streams in one ``session.run``, the GRU state batched
along axis 1 and kept per stream, and answers each stream as ``predict`` does one stream at a time; a
model whose declared shapes fix a batch axis (at any size) is refused at load, naming the input or output
and its shape, and so is one whose rows, served two streams at once on a load-time dry run, do not answer
each stream as it is answered alone (a scores output laid out ``[C, B]``, streams that mix).

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

from tests.adapters.test_onnx_runtime import CLASSES, DIM, HIDDEN, StepGru  # every row its own stream

X0, H0 = torch.zeros(1, DIM), torch.zeros(1, 1, HIDDEN)

BATCH_AXES = {"x": {0: "b"}, "h": {1: "b"}, "logits": {0: "b"}, "h_out": {1: "b"}}


class ClassesFirst(StepGru):
    """The scores laid out ``[C, B]`` (the reviewer's model, /tmp/rev/transp.py): row b of the output is
    class b's score of every stream, not stream b's scores; ``classes`` sizes its head."""

    def __init__(self, classes: int = len(CLASSES)) -> None:
        super().__init__()
        self.head = nn.Linear(HIDDEN, classes)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, h = super().forward(x, h)
        return logits.t(), h


class ClassesFirstUnknown(ClassesFirst):
    """``[C, B]`` through a reshape to ``(-1, B)``: ONNX Runtime cannot infer the leading axis, which the
    model declares symbolic, so the declared shapes fit a batch."""

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, h = super().forward(x, h)
        return logits.reshape(-1, x.shape[0]), h


class MixedGru(StepGru):
    """Each row's scores take in the mean state of the batch: right shapes, streams that are not apart."""

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, h = super().forward(x, h)
        return logits + self.head(h.mean(dim=1)), h


def _export(path: Path, module: nn.Module | None = None, **kwargs: Any) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated in torch 2.13
        torch.onnx.export(
            (module or StepGru()).eval(), (X0, H0), str(path), input_names=["x", "h"],
            output_names=["logits", "h_out"], dynamo=False, **kwargs,
        )  # fmt: skip
    return str(path)


def _declare(path: str, output: str, dims: list[int | str]) -> str:
    """Rewrite ``output``'s declared shape (the exporter infers it from the graph): a dim is a size or a
    symbol."""
    import onnx

    model = onnx.load(path)
    (declared,) = [o for o in model.graph.output if o.name == output]
    shape = declared.type.tensor_type.shape
    del shape.dim[:]
    for dim in dims:
        if isinstance(dim, int):
            shape.dim.add().dim_value = dim
        else:
            shape.dim.add().dim_param = dim
    onnx.save(model, path)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("onnx_batch")
    return {
        "dynamic": _export(folder / "dynamic.onnx", dynamic_axes=BATCH_AXES),
        "fixed": _export(folder / "fixed.onnx"),  # every axis fixed: x [1, 4], h [1, 1, 8]
        # the state batched, the frame input not: x stays [1, 4]
        "frame_fixed": _export(folder / "frame_fixed.onnx", dynamic_axes={"h": {1: "b"}, "h_out": {1: "b"}}),
        # logits [3, b]: its axis 0 is the classes, fixed at 3 >= max_batch_size 2 (the reviewer's model)
        "classes_first": _export(
            folder / "classes_first.onnx",
            ClassesFirst(),
            dynamic_axes={"x": {0: "b"}, "h": {1: "b"}, "logits": {1: "b"}, "h_out": {1: "b"}},
        ),
        # logits declared [c, b], two classes, every axis dynamic: the declared shapes fit, only values tell
        "classes_first_2": _export(
            folder / "classes_first_2.onnx",
            ClassesFirstUnknown(2),
            dynamic_axes={"x": {0: "b"}, "h": {1: "b"}, "logits": {0: "c", 1: "b"}, "h_out": {1: "b"}},
        ),
        "mixed": _export(folder / "mixed.onnx", MixedGru(), dynamic_axes=BATCH_AXES),
        # the scores declared [4, 3], the other batch axes dynamic: once taken for a batch padded to 4
        "scores_fixed": _declare(
            _export(folder / "scores_fixed.onnx", dynamic_axes=BATCH_AXES), "logits", [4, len(CLASSES)]
        ),
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
    # no padding: a fixed axis is refused even where it holds max_batch_size streams, batches of one too
    with pytest.raises(OnnxLoadError, match=r"frame input 'x' is declared \[1, 4\], its batch axis 0 fixed"):
        _load(models["fixed"], max_batch_size=1, state_batch_axis=1)
    with pytest.raises(OnnxLoadError, match=r"output 'logits' is declared \[4, 3\], its batch axis 0 fixed"):
        _load(models["scores_fixed"], max_batch_size=2, state_batch_axis=1)


def test_a_scores_output_laid_out_classes_first_is_refused_at_load(models: dict[str, str]) -> None:
    """The reviewer's model (logits ``[3, b]``): axis 0 is the classes, fixed at 3; it used to load as a
    batch padded to 3 rows and answer stream 0 with class 0's score of every stream."""
    with pytest.raises(
        OnnxLoadError, match=r"output 'logits' is declared \[3, b\], its batch axis 0 fixed at 3; export"
    ):
        _load(models["classes_first"], max_batch_size=2, state_batch_axis=1)


def test_rows_that_are_not_the_streams_are_refused_by_the_dry_run(models: dict[str, str]) -> None:
    """Declared shapes that fit, values that do not: two streams of different frames served in one batch
    must get what each gets alone. Scores laid out ``[C, B]`` with C = 2 = the dry run's streams, and a
    model whose rows take in the batch's mean state, are both refused, naming the mismatch and the fix."""
    with pytest.raises(OnnxLoadError, match=r"differ from .* alone .*state_batch_axis.*output 'logits'"):
        _load(models["classes_first_2"], classes=("a", "b"), max_batch_size=2, state_batch_axis=1)
    with pytest.raises(OnnxLoadError, match=r"differ from .* alone"):
        _load(models["mixed"], max_batch_size=4, state_batch_axis=1)
    # one stream at a time (no batch mode) the same models load: only the batch mixes them
    _load(models["classes_first_2"], classes=("a", "b"))
    _load(models["mixed"])


def test_the_scores_must_hold_one_value_per_class_beside_the_batch_axis(models: dict[str, str]) -> None:
    with pytest.raises(OnnxLoadError, match=r"output 'logits' is declared \[b, 3\].* 2 classes"):
        _load(models["dynamic"], classes=("a", "b"), max_batch_size=2, state_batch_axis=1)


def test_a_correct_model_loads_with_its_single_stream_state_reset(models: dict[str, str]) -> None:
    """The load-time dry run serves streams through ``predict`` too; the state it left is reset."""
    adapter = _load(models["dynamic"], max_batch_size=2, state_batch_axis=1)
    (frames,) = _streams(1, 3)
    served = [adapter.predict(f) for f in frames]  # no reset_state() before: the load left none
    np.testing.assert_allclose(np.array(_scores(served)), _alone(adapter, frames), atol=1e-6)
