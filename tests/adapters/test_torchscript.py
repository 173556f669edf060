"""TorchScript files (issue 8, part 1): scripted and traced GRUs, both modes, reset, load-time errors.

The models are built and saved here (``torch.jit.script`` / ``torch.jit.trace`` + ``torch.jit.save``);
a stream fed frame by frame must give the outputs of the same weights run over the whole sequence.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.registry import create_adapter
from streambench.adapters.torchscript import TorchScriptAdapter, TorchScriptLoadError, TorchScriptOptions
from streambench.harness.execution.engine import Engine, EngineConfig

DIM, HIDDEN, CLASSES = 4, 8, ("a", "b", "c")


class StepGru(nn.Module):
    """State mode: ``forward(x [1, D], h [1, 1, H]) -> (logits [1, C], h')``."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.hidden = HIDDEN
        self.gru = nn.GRU(DIM, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, len(CLASSES))

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.gru(x.unsqueeze(1), h)
        return self.head(out[:, 0]), h

    @torch.jit.export
    def initial_state(self) -> torch.Tensor:
        return torch.zeros(1, 1, self.hidden)

    @torch.jit.export
    def sequence(self, xs: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(xs.unsqueeze(0))
        return self.head(out[0])  # type: ignore[no-any-return]


class StatefulGru(nn.Module):
    """Stateful mode: keeps ``h`` as an attribute; the exported ``reset()`` clears it."""

    def __init__(self) -> None:
        super().__init__()
        self.step = StepGru()
        self.hidden = HIDDEN
        self.h = torch.zeros(1, 1, HIDDEN)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits, h = self.step(x, self.h)
        self.h = h
        return logits

    @torch.jit.export
    def reset(self) -> None:
        self.h = torch.zeros(1, 1, self.hidden)


class TraceableStep(nn.Module):
    """StepGru's weights and step without exported methods (tracing records ``forward`` only)."""

    def __init__(self) -> None:
        super().__init__()
        source = StepGru()
        self.gru, self.head = source.gru, source.head

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.gru(x.unsqueeze(1), h)
        return self.head(out[:, 0]), h


class Plain(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :3]


class LogitsOnly(nn.Module):
    """Takes a state but returns no new one: a wrong fit for state mode."""

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        return x[:, :3] + h


def _save(module: torch.jit.ScriptModule, path: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch 2.13 deprecates TorchScript
        torch.jit.save(module, str(path))
    return str(path)


def _script(module: nn.Module, path: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return _save(torch.jit.script(module), path)


def _stream(num_frames: int = 40) -> tuple[Stream, np.ndarray]:
    xs = np.random.default_rng(3).standard_normal((num_frames, DIM)).astype(np.float32)
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


def _expected(xs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return torch.softmax(StepGru().sequence(torch.from_numpy(xs)), dim=1).numpy()


def _load(**options: object) -> TorchScriptAdapter:
    options.setdefault("classes", CLASSES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return TorchScriptAdapter(TorchScriptOptions.model_validate(options))


def test_scripted_state_model_streams_like_its_sequence_run(tmp_path: Path) -> None:
    path = _script(StepGru(), tmp_path / "step.pt")
    stream, xs = _stream()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        adapter = create_adapter(
            "torchscript", {"path": path}, data_bound={"classes": CLASSES, "input_dims": {"audio": DIM}}
        )
    assert adapter.info.name == "step.pt" and adapter.info.classes == CLASSES
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    first = engine.run_stream(stream)
    np.testing.assert_allclose(first.scores, _expected(xs), atol=1e-5)
    np.testing.assert_array_equal(engine.run_stream(stream).scores, first.scores)  # reset zeroes it


def test_traced_model_starts_from_state_shape(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        traced = torch.jit.trace(TraceableStep(), (torch.zeros(1, DIM), torch.zeros(1, 1, HIDDEN)))
    path = _save(traced, tmp_path / "traced.pt")
    stream, xs = _stream(15)
    with pytest.raises(TorchScriptLoadError, match="fails in mode 'state'"):
        _load(path=path, input_dims={"audio": DIM})  # no initial_state(), no state_shape: None is fed
    adapter = _load(path=path, state_shape=[1, 1, HIDDEN], input_dims={"audio": DIM})
    scores = np.array([adapter.predict(f).scores for f in stream.frames()])  # type: ignore[union-attr]
    np.testing.assert_allclose(scores, _expected(xs), atol=1e-5)


def test_stateful_script_is_reset_by_its_exported_method(tmp_path: Path) -> None:
    adapter = _load(path=_script(StatefulGru(), tmp_path / "stateful.pt"), mode="stateful")
    stream, xs = _stream(20)
    frames = list(stream.frames())
    once = np.array([adapter.predict(f).scores for f in frames])  # type: ignore[union-attr]
    np.testing.assert_allclose(once, _expected(xs), atol=1e-5)
    carried = np.array([adapter.predict(f).scores for f in frames])  # type: ignore[union-attr]
    assert not np.allclose(carried, once)
    adapter.reset_state()
    np.testing.assert_array_equal([adapter.predict(f).scores for f in frames], once)  # type: ignore[union-attr]


def test_load_time_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(TorchScriptLoadError, match=r"'/no/such\.pt' does not exist"):
        _load(path="/no/such.pt")
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a zip archive")
    with pytest.raises(TorchScriptLoadError, match="is not a TorchScript file"):
        _load(path=str(garbage))
    plain = _script(Plain(), tmp_path / "plain.pt")
    with pytest.raises(TorchScriptLoadError, match="mode 'stateful' needs a script with an exported reset"):
        _load(path=plain, mode="stateful")
    step = _script(StepGru(), tmp_path / "step.pt")
    with pytest.raises(TorchScriptLoadError, match="classes are unknown"):
        _load(path=step, classes=None)
    with pytest.raises(TorchScriptLoadError, match=r"shape \[1, 5\]"):
        _load(path=step, input_dims={"audio": 5})
    with pytest.raises(TorchScriptLoadError, match=r"expected 4 values \(one per class\)"):
        _load(path=step, classes=("a", "b", "c", "d"), input_dims={"audio": DIM})
    with pytest.raises(TorchScriptLoadError, match=r"expected \(logits, new_state\)"):
        _load(path=_script(LogitsOnly(), tmp_path / "lo.pt"), input_dims={"audio": DIM}, state_shape=[1])
