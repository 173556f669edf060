"""ONNX Runtime models (issue 8, part 1): a recurrent ONNX model streamed with its state carried.

The models are exported here with ``torch.onnx.export(..., dynamo=False)`` (the TorchScript-based
exporter, which needs only the ``onnx`` package; the default dynamo exporter of torch 2.13 needs
``onnxscript``). A stream fed frame by frame through ONNX Runtime must give the outputs of the same
weights run over the whole sequence in torch.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.onnx_runtime import OnnxAdapter, OnnxLoadError, OnnxOptions
from streambench.adapters.registry import AdapterLoadError, create_adapter
from streambench.harness.execution.engine import Engine, EngineConfig

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

DIM, HIDDEN, CLASSES = 4, 8, ("a", "b", "c")


class StepGru(nn.Module):
    """``forward(x [1, D], h [1, 1, H]) -> (logits [1, C], h')``; ``sequence`` runs ``[T, D]`` at once."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(DIM, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, len(CLASSES))

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.gru(x.unsqueeze(1), h)
        return self.head(out[:, 0]), h

    def sequence(self, xs: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(xs.unsqueeze(0))
        return self.head(out[0])  # type: ignore[no-any-return]


class GainGru(StepGru):
    """A third input, a scalar ``gain`` that multiplies the logits (a constant, like Silero's ``sr``)."""

    def forward(  # type: ignore[override]
        self, x: torch.Tensor, h: torch.Tensor, gain: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logits, h = super().forward(x, h)
        return logits * gain, h


class FlatStateGru(StepGru):
    """Returns its state flattened to ``[1, H]``: it cannot be fed back to the ``[1, 1, H]`` input."""

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, h = super().forward(x, h)
        return logits, h.reshape(1, -1)


class WideStateGru(StepGru):
    """Returns its state twice, ``[1, 2, H]``: the same rank as the input, another shape."""

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits, h = super().forward(x, h)
        return logits, torch.cat([h, h], dim=1)


def _export(module: nn.Module, path: Path, inputs: tuple[torch.Tensor, ...], **kwargs: Any) -> str:
    names = ["x", "h", "gain"][: len(inputs)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated in torch 2.13
        torch.onnx.export(
            module.eval(), inputs, str(path), input_names=names, output_names=["logits", "h_out"],
            dynamo=False, **kwargs,
        )  # fmt: skip
    return str(path)


X0, H0 = torch.zeros(1, DIM), torch.zeros(1, 1, HIDDEN)


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("onnx")
    _export(StepGru(), folder / "gru.onnx", (X0, H0))
    _export(GainGru(), folder / "gain.onnx", (X0, H0, torch.tensor(1.0)))
    batch = {"h": {1: "batch"}, "h_out": {1: "batch"}}
    _export(StepGru(), folder / "dynamic.onnx", (X0, H0), dynamic_axes=batch)
    _export(FlatStateGru(), folder / "flat.onnx", (X0, H0))
    # a symbolic batch: the state output is declared [1, ?, 8], like Silero's stateN [?, ?, ?]
    _export(WideStateGru(), folder / "wide.onnx", (X0, H0), dynamic_axes={"x": {0: "b"}, "h": {1: "b"}})
    return folder


def _stream(num_frames: int = 40) -> tuple[Stream, np.ndarray]:
    xs = np.random.default_rng(5).standard_normal((num_frames, DIM)).astype(np.float32)
    times = (np.arange(num_frames) + 1) / 10
    stream = Stream(
        stream_id="x",
        classes=CLASSES,
        labels=np.zeros((num_frames, len(CLASSES)), dtype=bool),
        frame_times=times,
        frame_source=lambda: (Frame(i, float(times[i]), {"audio": xs[i]}) for i in range(num_frames)),
        modalities=("audio",),
    )
    return stream, xs


def _logits(xs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return StepGru().sequence(torch.from_numpy(xs)).numpy()


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _load(path: Path, **options: Any) -> OnnxAdapter:
    options.setdefault("classes", CLASSES)
    return OnnxAdapter(OnnxOptions(path=str(path), **options))


def test_streams_like_the_sequence_run_and_reset_zeroes_the_state(onnx_dir: Path) -> None:
    adapter = create_adapter(
        "onnx", {"path": str(onnx_dir / "gru.onnx"), "state": {"h": "h_out"}}, data_bound={"classes": CLASSES}
    )
    assert adapter.info.name == "gru.onnx" and adapter.info.device == "cpu"
    assert isinstance(adapter, OnnxAdapter) and (adapter.input_name, adapter.output_name) == ("x", "logits")
    stream, xs = _stream()
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    first = engine.run_stream(stream)
    np.testing.assert_allclose(first.scores, _softmax(_logits(xs)), atol=1e-5)
    np.testing.assert_array_equal(engine.run_stream(stream).scores, first.scores)
    carried = np.array([adapter.predict(f).scores for f in stream.frames()])  # type: ignore[union-attr]
    assert not np.allclose(carried, first.scores)  # without a reset the last stream's state is carried


def test_constants_and_symbolic_state_shapes(onnx_dir: Path) -> None:
    stream, xs = _stream(12)
    gain = _load(
        onnx_dir / "gain.onnx", state={"h": "h_out"}, constants={"gain": 2.0}, output="probabilities"
    )
    scores = np.array([gain.predict(f).scores for f in stream.frames()])  # type: ignore[union-attr]
    np.testing.assert_allclose(scores, 2 * _logits(xs), atol=1e-5)
    with pytest.raises(OnnxLoadError, match=r"state input 'h' has symbolic dimensions \[1, batch, 8\]"):
        _load(onnx_dir / "dynamic.onnx", state={"h": "h_out"})
    dynamic = _load(onnx_dir / "dynamic.onnx", state={"h": "h_out"}, state_shapes={"h": [1, 1, HIDDEN]})
    scores = np.array([dynamic.predict(f).scores for f in stream.frames()])  # type: ignore[union-attr]
    np.testing.assert_allclose(scores, _softmax(_logits(xs)), atol=1e-5)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"state": {"hx": "h_out"}}, r"state input 'hx' is not an input of the model \(inputs: \['x', 'h'\]"),
        ({"state": {"h": "hy"}}, r"state output 'hy' \(for state input 'h'\) is not an output"),
        (
            {"state": {"h": "logits"}, "output_name": "h_out"},
            r"'h' -> 'logits'.*\[1, 3\] differs from the state's shape \[1, 1, 8\]",
        ),
        ({}, r"model inputs \['x', 'h'\] have no declared role"),
        ({"input_name": "x"}, r"model inputs \['h'\] get no value"),
        ({"state": {"h": "h_out"}, "input_name": "frame"}, r"input_name 'frame' is not an input"),
        ({"state": {"h": "h_out"}, "output_name": "scores"}, r"output_name 'scores' is not an output"),
        ({"state": {"h": "h_out"}, "output_name": "h_out"}, r"output_name 'h_out' is also declared a state"),
        ({"state": {"h": "h_out"}, "constants": {"sr": 16000}}, r"constant 'sr' is not an input"),
        ({"state": {"h": "h_out"}, "state_shapes": {"h": [1, 2, 8]}}, r"state_shapes\['h'\] = \[1, 2, 8\]"),
        ({"state": {"h": "h_out"}, "state_shapes": {"c": [1]}}, r"state_shapes names 'c'"),
        ({"state": {"h": "h_out"}, "classes": ("a", "b")}, r"'logits' has shape \[1, 3\], expected 2 values"),
        ({"state": {"h": "h_out"}, "device": "tpu"}, r"device 'tpu'"),
    ],
)
def test_load_time_errors_name_the_name(onnx_dir: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(OnnxLoadError, match=message):
        _load(onnx_dir / "gru.onnx", **options)


def test_load_time_errors_of_files_constants_and_fed_back_shapes(onnx_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(OnnxLoadError, match=r"ONNX file '/no/such\.onnx' does not exist"):
        _load(Path("/no/such.onnx"))
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a protobuf")
    with pytest.raises(OnnxLoadError, match="ONNX Runtime cannot open"):
        _load(garbage)
    with pytest.raises(OnnxLoadError, match=r"constant 'gain' has shape \[2\], the model declares \[\]"):
        _load(onnx_dir / "gain.onnx", state={"h": "h_out"}, constants={"gain": [1.0, 2.0]})
    with pytest.raises(OnnxLoadError, match=r"model inputs \['gain'\] get no value"):
        _load(onnx_dir / "gain.onnx", state={"h": "h_out"}, input_name="x")
    with pytest.raises(OnnxLoadError, match=r"declared shape \[1, 8\] differs from the state"):
        _load(onnx_dir / "flat.onnx", state={"h": "h_out"})
    # declared [1, ?, 8], so only the dry run on a zero frame can see that [1, 2, 8] is not [1, 1, 8]
    with pytest.raises(OnnxLoadError, match=r"'h_out' came back with shape \[1, 2, 8\].*'h' has \[1, 1, 8\]"):
        _load(onnx_dir / "wide.onnx", state={"h": "h_out"}, state_shapes={"h": [1, 1, HIDDEN]})


def _two_modality_stream(audio: int, visual: int, num_frames: int = 12) -> tuple[Stream, np.ndarray]:
    rng = np.random.default_rng(9)
    a = rng.standard_normal((num_frames, audio)).astype(np.float32)
    v = rng.standard_normal((num_frames, visual)).astype(np.float32)
    times = (np.arange(num_frames) + 1) / 10
    stream = Stream(
        stream_id="av",
        classes=CLASSES,
        labels=np.zeros((num_frames, len(CLASSES)), dtype=bool),
        frame_times=times,
        frame_source=lambda: (
            Frame(i, float(times[i]), {"audio": a[i], "visual": v[i]}) for i in range(num_frames)
        ),
        modalities=("audio", "visual"),
    )
    return stream, np.concatenate([a, v], axis=1)


def test_the_data_modalities_are_fed_by_default_and_a_wrong_frame_size_fails_at_load(onnx_dir: Path) -> None:
    """Issue 17: a model of audio + visual ([1, 4] here: 1 + 3) loaded on audio-visual data fed audio alone
    by default and passed its dry run on a zero frame of the model's size, then failed at warm-up frame 0.
    Now every modality of the data is fed unless told otherwise, and a frame size that does not fit the
    model's fixed input is refused at load, naming the sizes and the option."""
    bound = {"classes": CLASSES, "input_dims": {"audio": 1, "visual": DIM - 1}}
    options = {"path": str(onnx_dir / "gru.onnx"), "state": {"h": "h_out"}}
    adapter = create_adapter("onnx", options, data_bound=bound)
    assert adapter.info.modalities == ("audio", "visual")
    stream, xs = _two_modality_stream(1, DIM - 1)
    scores = Engine(adapter, EngineConfig(warmup_frames=0)).run_stream(stream).scores
    np.testing.assert_allclose(scores, _softmax(_logits(xs)), atol=1e-5)
    with pytest.raises(AdapterLoadError) as refused:
        create_adapter("onnx", {**options, "modalities": "audio"}, data_bound=bound)
    message = str(refused.value)
    assert "frame input 'x' takes [1, 4] = 4 values, but a frame of modalities audio has 1" in message
    assert "audio 1, visual 3" in str(refused.value) and "modalities=a,b" in str(refused.value)
    with pytest.raises(AdapterLoadError, match=r"modalities \['depth'\] are not in the data"):
        create_adapter("onnx", {**options, "modalities": "audio,depth"}, data_bound=bound)
