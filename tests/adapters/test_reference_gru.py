"""The reference GRU (adapters/reference_gru.py): an ``nn.GRU`` whose weights make it the leaky integrator of
matched-filter evidence its docstring states, checked against that formula in numpy, and its batch mode
against one stream at a time."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.codebook import class_signature
from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.reference_gru import ReferenceGruAdapter, ReferenceGruOptions
from streambench.adapters.registry import create_adapter
from streambench.adapters.torch_module import TorchModuleLoadError

CLASSES = ("background", "dog", "car")
DIMS = {"audio": 6, "visual": 4}


def _frame(index: int, rng: np.random.Generator, missing: str | None = None) -> Frame:
    inputs = {m: rng.standard_normal(d).astype(np.float32) for m, d in DIMS.items()}
    if missing is not None:
        inputs[missing] = None  # type: ignore[assignment]
    return Frame(index=index, t=index * 0.04, inputs=inputs)


def _expected_scores(frames: list[Frame], opts: ReferenceGruOptions) -> list[np.ndarray]:
    """s_t = a s_(t-1) + (1 - a) tanh(gain * mean over modalities of signature . x), the background's row
    weighted; scores = softmax(s_t / (gain * temperature)). A missing payload is zeros."""
    rows = []
    for c in range(len(CLASSES)):
        row = np.concatenate([class_signature(c, d, m) for m, d in DIMS.items()]) / len(DIMS)
        rows.append(row * (opts.background_weight if c == 0 else 1.0))
    weights = np.stack(rows).astype(np.float64)
    state = np.zeros(len(CLASSES))
    out = []
    for frame in frames:
        x = np.concatenate(
            [np.zeros(d) if frame.inputs[m] is None else frame.inputs[m] for m, d in DIMS.items()]
        )
        state = opts.smoothing * state + (1 - opts.smoothing) * np.tanh(opts.gain * weights @ x)
        logits = state / (opts.gain * opts.temperature)
        e = np.exp(logits - logits.max())
        out.append(e / e.sum())
    return out


def _scores(output: object) -> np.ndarray:
    assert isinstance(output, Prediction)
    return np.asarray(output.scores)


def test_it_is_the_leaky_integrator_of_matched_filter_evidence() -> None:
    opts = ReferenceGruOptions(classes=CLASSES, input_dims=DIMS, smoothing=0.7, gain=0.4)
    adapter = ReferenceGruAdapter(opts)
    rng = np.random.default_rng(3)
    frames = [_frame(i, rng, missing="visual" if i == 2 else None) for i in range(6)]
    for frame, expected in zip(frames, _expected_scores(frames, opts), strict=True):
        np.testing.assert_allclose(_scores(adapter.predict(frame)), expected, rtol=1e-4, atol=1e-6)
    adapter.reset_state()  # a new stream starts from zero evidence
    np.testing.assert_allclose(
        _scores(adapter.predict(frames[0])), _expected_scores(frames[:1], opts)[0], rtol=1e-4, atol=1e-6
    )


def test_a_batch_of_streams_equals_each_stream_alone() -> None:
    opts = ReferenceGruOptions(classes=CLASSES, input_dims=DIMS)
    rng = np.random.default_rng(5)
    streams = {key: [_frame(i, rng) for i in range(5)] for key in (11, 12, 13)}
    alone = {}
    for key, frames in streams.items():
        single = ReferenceGruAdapter(opts)
        alone[key] = [_scores(single.predict(f)) for f in frames]
    batched = ReferenceGruAdapter(opts)
    for i in range(5):
        keys = [k for k in streams if not (k == 13 and i < 2)]  # stream 13 joins at its frame 2
        outputs = batched.predict_batch([(k, streams[k][i - (2 if k == 13 else 0)]) for k in keys])
        for key, output in zip(keys, outputs, strict=True):
            index = i - (2 if key == 13 else 0)
            np.testing.assert_allclose(_scores(output), alone[key][index], rtol=1e-4, atol=1e-6)


def test_registered_with_the_synthetic_data_sets_defaults() -> None:
    adapter = create_adapter("reference-gru", {})
    assert len(adapter.info.classes) == 29 and adapter.info.modalities == ("audio", "visual")
    assert getattr(adapter, "max_batch_size", 0) == 64


def test_a_stateful_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode is 'state'"):
        ReferenceGruAdapter(ReferenceGruOptions(mode="stateful"))


@pytest.mark.parametrize("modalities", [("audio", "radar"), ("radar",)])
def test_an_unknown_modality_is_refused_by_name_with_the_datas_payloads(modalities: tuple[str, ...]) -> None:
    """Not dropped before the error (which then listed the data's payloads without the dropped ones), nor
    left to torch (``input_size must be greater than zero`` when none is known)."""
    opts = ReferenceGruOptions(classes=CLASSES, input_dims=DIMS, modalities=modalities)
    refused = r"reference-gru: modalities \['radar'\] are not in the data \(its payloads: audio 6, visual 4\)"
    with pytest.raises(TorchModuleLoadError, match=refused):
        ReferenceGruAdapter(opts)
    # the known ones are fed, in the order given
    only = ReferenceGruOptions(classes=CLASSES, input_dims=DIMS, modalities=("visual",))
    assert ReferenceGruAdapter(only).info.modalities == ("visual",)
