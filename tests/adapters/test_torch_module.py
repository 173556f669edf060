"""The nn.Module wrapper (issue 8, part 1): both modes, reset, output kinds and load-time errors.

The models are built here: a GRU whose one-frame step and whole-sequence run share the weights, so a
stream fed frame by frame must give the sequence run's outputs.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import torch
from torch import nn

from streambench.adapters.contract import Frame, Prediction, Stream
from streambench.adapters.registry import AdapterLoadError, create_adapter
from streambench.adapters.torch_module import TorchModuleAdapter, TorchModuleLoadError, TorchModuleOptions
from streambench.harness.execution.engine import Engine, EngineConfig

DIM, HIDDEN, CLASSES = 4, 8, ("a", "b", "c")


class StepGru(nn.Module):
    """State mode: ``forward(x [1, D], h [1, 1, H]) -> (logits [1, C], h')``."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(DIM, HIDDEN, batch_first=True)
        self.head = nn.Linear(HIDDEN, len(CLASSES))

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, h = self.gru(x.unsqueeze(1), h)
        return self.head(out[:, 0]), h

    def initial_state(self) -> torch.Tensor:
        return torch.zeros(1, 1, HIDDEN)

    def sequence(self, xs: torch.Tensor) -> torch.Tensor:
        """Logits ``[T, C]`` of a whole sequence ``[T, D]`` in one GRU call."""
        out, _ = self.gru(xs.unsqueeze(0))
        return self.head(out[0])  # type: ignore[no-any-return]


class StatefulGru(StepGru):
    """Stateful mode: keeps ``h`` itself; ``reset()`` clears it."""

    def __init__(self) -> None:
        super().__init__()
        self.h = self.initial_state()

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        logits, self.h = super().forward(x, self.h)
        return logits

    def reset(self) -> None:
        self.h = self.initial_state()


class NoReset(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, :3]


class LogitsOnly(nn.Module):
    """Takes a state but returns no new one: a wrong fit for state mode."""

    def forward(self, x: torch.Tensor, h: torch.Tensor | None = None) -> torch.Tensor:
        return x[:, :3]


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> str:
    module = types.ModuleType("tiny_torch_models")
    module.StepGru = StepGru  # type: ignore[attr-defined]
    module.StatefulGru = StatefulGru  # type: ignore[attr-defined]
    module.NoReset = NoReset  # type: ignore[attr-defined]
    module.LogitsOnly = LogitsOnly  # type: ignore[attr-defined]
    module.not_a_module = lambda: 3  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiny_torch_models", module)
    return "tiny_torch_models"


def _stream(num_frames: int = 40, seed: int = 1) -> tuple[Stream, np.ndarray]:
    xs = np.random.default_rng(seed).standard_normal((num_frames, DIM)).astype(np.float32)
    times = (np.arange(num_frames) + 1) / 10
    labels = np.zeros((num_frames, len(CLASSES)), dtype=bool)
    stream = Stream(
        stream_id=f"x{seed}",
        classes=CLASSES,
        labels=labels,
        frame_times=times,
        frame_source=lambda: (Frame(i, float(times[i]), {"audio": xs[i]}) for i in range(num_frames)),
        modalities=("audio",),
    )
    return stream, xs


def _expected(xs: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return torch.softmax(StepGru().sequence(torch.from_numpy(xs)), dim=1).numpy()


@pytest.mark.parametrize("mode, factory", [("state", "StepGru"), ("stateful", "StatefulGru")])
def test_streaming_equals_the_sequence_run(models: str, mode: str, factory: str) -> None:
    stream, xs = _stream()
    adapter = create_adapter(
        "torch-module",
        {"factory": f"{models}:{factory}", "mode": mode},
        data_bound={"classes": CLASSES, "input_dims": {"audio": DIM}},
    )
    assert adapter.info.classes == CLASSES and adapter.info.device == "cpu"
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    first = engine.run_stream(stream)
    np.testing.assert_allclose(first.scores, _expected(xs), atol=1e-5)
    # reset_state() zeroes the state: the same stream again gives the same outputs, bit for bit
    np.testing.assert_array_equal(engine.run_stream(stream).scores, first.scores)


def test_state_is_carried_and_reset(models: str) -> None:
    stream, _ = _stream(10)
    adapter = TorchModuleAdapter(TorchModuleOptions(factory=f"{models}:StepGru", classes=CLASSES))
    frames = list(stream.frames())
    once = [adapter.predict(f).scores for f in frames]  # type: ignore[union-attr]
    carried = [adapter.predict(f).scores for f in frames]  # type: ignore[union-attr]
    assert not np.allclose(once, carried)  # the state of the first pass reached the second
    adapter.reset_state()
    np.testing.assert_array_equal([adapter.predict(f).scores for f in frames], once)  # type: ignore[union-attr]


def test_state_shape_starts_a_module_without_initial_state(models: str) -> None:
    stream, xs = _stream(12)
    module = StepGru()
    module.initial_state = None  # type: ignore[assignment,method-assign]
    opts = TorchModuleOptions(factory=f"{models}:StepGru", classes=CLASSES, state_shape=[1, 1, HIDDEN])
    adapter = TorchModuleAdapter(opts, module=module)
    scores = np.array([adapter.predict(f).scores for f in stream.frames()])  # type: ignore[union-attr]
    np.testing.assert_allclose(scores, _expected(xs), atol=1e-5)


def test_output_kinds(models: str) -> None:
    stream, xs = _stream(5)
    with torch.no_grad():
        logits = StepGru().sequence(torch.from_numpy(xs)).numpy()
    for kind, expected in (("logits_sigmoid", 1 / (1 + np.exp(-logits))), ("probabilities", logits)):
        opts = TorchModuleOptions(factory=f"{models}:StepGru", classes=CLASSES, output=kind)  # type: ignore[arg-type]
        adapter = TorchModuleAdapter(opts)
        got = np.array([adapter.predict(f).scores for f in stream.frames()])  # type: ignore[union-attr]
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_two_modalities_are_concatenated_and_a_missing_one_is_zeros(models: str) -> None:
    opts = TorchModuleOptions(
        factory=f"{models}:StepGru", classes=CLASSES, modalities=("audio", "visual"),
        input_dims={"audio": 1, "visual": 3},
    )  # fmt: skip
    adapter = TorchModuleAdapter(opts)
    x = np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32)
    split = adapter.predict(Frame(0, 0.1, {"audio": x[:1], "visual": x[1:]})).scores  # type: ignore[union-attr]
    adapter.reset_state()
    missing = adapter.predict(Frame(0, 0.1, {"audio": x[:1], "visual": None})).scores  # type: ignore[union-attr]
    np.testing.assert_allclose(split, _expected(x[None])[0], atol=1e-6)
    np.testing.assert_allclose(missing, _expected(np.array([[0.5, 0, 0, 0]], np.float32))[0], atol=1e-6)


def test_load_time_errors_name_the_problem(models: str) -> None:
    def load(**options: object) -> TorchModuleAdapter:
        options.setdefault("classes", CLASSES)
        return TorchModuleAdapter(TorchModuleOptions.model_validate(options))

    with pytest.raises(TorchModuleLoadError, match="cannot import 'no_such_pkg'"):
        load(factory="no_such_pkg:Model")
    with pytest.raises(TorchModuleLoadError, match="has no attribute 'Missing'"):
        load(factory=f"{models}:Missing")
    with pytest.raises(TorchModuleLoadError, match=r"expected 'package\.module:callable'"):
        load(factory="StepGru")
    with pytest.raises(TorchModuleLoadError, match=r"returned int, not a torch\.nn\.Module"):
        load(factory=f"{models}:not_a_module")
    with pytest.raises(TorchModuleLoadError, match="mode 'stateful' needs a module with a reset method"):
        load(factory=f"{models}:NoReset", mode="stateful")
    with pytest.raises(TorchModuleLoadError, match="classes are unknown"):
        load(factory=f"{models}:StepGru", classes=None)
    # the dry run on a zero frame: wrong input size, wrong class count, wrong mode
    with pytest.raises(TorchModuleLoadError, match=r"shape \[1, 6\].*fails in mode 'state'"):
        load(factory=f"{models}:StepGru", input_dims={"audio": 6})
    with pytest.raises(TorchModuleLoadError, match="expected 2 \\(one per class\\)"):
        load(factory=f"{models}:StepGru", classes=("a", "b"), input_dims={"audio": DIM})
    with pytest.raises(TorchModuleLoadError, match="expected \\(logits, new_state\\)"):
        load(factory=f"{models}:LogitsOnly", input_dims={"audio": DIM})
    with pytest.raises(TorchModuleLoadError, match=r"modalities \['visual'\] are not in the data \(its"):
        load(factory=f"{models}:StepGru", modalities=("audio", "visual"), input_dims={"audio": DIM})


def test_a_missing_payload_without_its_size_is_an_error(models: str) -> None:
    adapter = TorchModuleAdapter(TorchModuleOptions(factory=f"{models}:StepGru", classes=CLASSES))
    with pytest.raises(ValueError, match="modality 'audio' is missing and its size is unknown"):
        adapter.predict(Frame(0, 0.1, {"audio": None}))


class PeekingSequenceGru(StepGru):
    """An honest streaming step, and a sequence method that also runs the GRU backwards (a bidirectional
    model passed off as causal)."""

    def sequence(self, xs: torch.Tensor) -> torch.Tensor:
        forward = super().sequence(xs)
        backward = super().sequence(torch.flip(xs, dims=[0]))
        return forward + 0.5 * torch.flip(backward, dims=[0])


@pytest.mark.parametrize(("factory", "failed"), [("StepGru", set()), ("PeekingSequenceGru", "all")])
def test_a_modules_sequence_method_is_forwarded_and_checked(
    models: str, monkeypatch: pytest.MonkeyPatch, factory: str, failed: object
) -> None:
    """Issue 15 item 4: the wrapper forwards the module's sequence method (option sequence_method),
    declares the capability, and the causality protocol's sequence checks run on it: the honest GRU
    passes all three, a backward pass hidden in the sequence method fails all three."""
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.runs.causality.sequence import SEQUENCE_CHECKS, sequence_checks, sequence_plan
    from streambench.protocols.causality import CausalityConfig

    monkeypatch.setattr(sys.modules[models], "PeekingSequenceGru", PeekingSequenceGru, raising=False)
    adapter = create_adapter(
        "torch-module",
        {"factory": f"{models}:{factory}", "sequence_method": "sequence"},
        data_bound={"classes": CLASSES, "input_dims": {"audio": DIM}},
    )
    assert "sequence" in adapter.info.capabilities
    plan = sequence_plan(adapter)
    assert plan.run == SEQUENCE_CHECKS and not plan.skipped
    stream, _ = _stream()
    checks = sequence_checks(RunConfig(), adapter, stream, CausalityConfig(), plan)
    assert {c.name for c in checks} == set(SEQUENCE_CHECKS)
    bad = {c.name for c in checks if not c.passed}
    assert bad == (set(SEQUENCE_CHECKS) if failed == "all" else set()), [c.detail for c in checks]


def test_without_a_sequence_method_there_is_no_sequence_mode_and_a_wrong_name_is_refused(models: str) -> None:
    from streambench.harness.runs.causality.sequence import sequence_plan

    bound = {"classes": CLASSES, "input_dims": {"audio": DIM}}
    plain = create_adapter("torch-module", {"factory": f"{models}:StepGru"}, data_bound=bound)
    assert "sequence" not in plain.info.capabilities
    assert (
        not sequence_plan(plain).run
        and "declares no sequence mode" in sequence_plan(plain).skipped["gradient_flow"]
    )
    with pytest.raises(AdapterLoadError, match="sequence_method 'nope': the module has no such method"):
        create_adapter(
            "torch-module", {"factory": f"{models}:StepGru", "sequence_method": "nope"}, data_bound=bound
        )


def test_every_modality_of_the_data_is_fed_unless_told_otherwise(models: str) -> None:
    """Issue 17: the wrapper fed audio alone by default, so a model of audio + visual failed at load with
    "got 4 expected 1"-style errors that did not name the fix. The data's modalities are now the default,
    in the data's order; given modalities still pick and order them."""
    bound = {"classes": CLASSES, "input_dims": {"audio": 1, "visual": DIM - 1}}
    adapter = create_adapter("torch-module", {"factory": f"{models}:StepGru"}, data_bound=bound)
    assert adapter.info.modalities == ("audio", "visual")
    frame = Frame(0, 0.1, {"audio": np.ones(1, np.float32), "visual": np.arange(3, dtype=np.float32)})
    expected = create_adapter("torch-module", {"factory": f"{models}:StepGru"}, data_bound=bound)
    assert isinstance(expected, TorchModuleAdapter)
    vector = torch.tensor([[1.0, 0.0, 1.0, 2.0]])
    with torch.no_grad():
        logits, _ = expected.module(vector, expected._state)
    out = adapter.predict(frame)
    assert isinstance(out, Prediction)
    np.testing.assert_allclose(out.scores, torch.softmax(logits[0], dim=0).numpy(), atol=1e-6)
    audio_only = {"factory": f"{models}:StepGru", "modalities": "audio"}
    with pytest.raises(AdapterLoadError, match=r"\[1, 1\] \(modalities audio\) fails.*audio 1, visual 3"):
        create_adapter("torch-module", audio_only, data_bound=bound)


class SizedHead(nn.Module):
    """A linear head sized by what its factory is told: ``[1, D] -> [1, C]`` in state mode."""

    def __init__(self, dims: int, num_classes: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dims, num_classes)

    def forward(self, x: torch.Tensor, state: None) -> tuple[torch.Tensor, None]:
        return self.fc(x), state


def test_a_factory_that_names_classes_and_input_dims_gets_the_datas(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37 item 3: the data-bound classes and input_dims reach the factory as they reach adapters, so
    a model adapts to the data without factory_kwargs; factory_kwargs still win, and a factory that does
    not name them is called as before."""
    told: list[tuple[tuple[str, ...], dict[str, int], int]] = []

    def build(classes: tuple[str, ...], input_dims: dict[str, int], scale: int = 1) -> SizedHead:
        told.append((classes, input_dims, scale))
        return SizedHead(sum(input_dims.values()), len(classes))

    module = types.ModuleType("sized_torch_models")
    module.build = build  # type: ignore[attr-defined]
    module.fixed = lambda: SizedHead(5, 2)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sized_torch_models", module)
    bound = {"classes": ("bg", "yes", "no"), "input_dims": {"audio": 40, "visual": 3}}
    adapter = create_adapter("torch-module", {"factory": "sized_torch_models:build"}, data_bound=bound)
    assert told == [(("bg", "yes", "no"), {"audio": 40, "visual": 3}, 1)]
    out = adapter.predict(
        Frame(0, 0.01, {"audio": np.zeros(40, np.float32), "visual": np.ones(3, np.float32)})
    )
    assert isinstance(out, Prediction) and out.scores.shape == (3,)
    options = {"factory": "sized_torch_models:build", "factory_kwargs": {"scale": 2, "classes": ["a", "b"]}}
    create_adapter("torch-module", {**options, "classes": ["a", "b"]}, data_bound=bound)
    assert told[-1] == (["a", "b"], {"audio": 40, "visual": 3}, 2)
    plain = create_adapter(
        "torch-module",
        {"factory": "sized_torch_models:fixed"},
        data_bound=bound | {"classes": ("bg", "yes"), "input_dims": {"audio": 5}},
    )
    assert plain.info.classes == ("bg", "yes")
    with pytest.raises(
        AdapterLoadError, match="takes 'input_dims', which the data fills, but no data is known"
    ):
        create_adapter("torch-module", {"factory": "sized_torch_models:build", "classes": ["a"]})
