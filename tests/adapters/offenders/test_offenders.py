"""Tests of the planted offenders (adapters/offenders/): each commits its one offence, on purpose,
and is otherwise an honest, deterministic model.

The checks that catch them are tested in tests/protocols/test_causality.py."""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from streambench.adapters.contract import Adapter, Frame
from streambench.adapters.offenders import (
    CachingAdapter,
    CachingOptions,
    LeakyResetAdapter,
    LeakyResetOptions,
    OffByOneMaskAdapter,
    OffByOneMaskOptions,
    OffenderOptions,
    PeekingAdapter,
    frame_feature,
    frame_vector,
    sequence_gradient_support,
)
from streambench.adapters.registry import create_adapter


def frames(values: list[float], dim: int = 4) -> list[Frame]:
    return [
        Frame(index=i, t=0.1 * (i + 1), inputs={"a": np.full(dim, v, dtype=np.float32), "b": None})
        for i, v in enumerate(values)
    ]


def sigmoid(x: float) -> float:
    return float(1.0 / (1.0 + np.exp(-x)))


@pytest.fixture(autouse=True)
def _no_leak() -> Iterator[None]:
    yield
    PeekingAdapter.unleak()


def test_frame_feature_and_vector() -> None:
    inputs = {"b": np.array([[1.0, 2.0]]), "a": np.array([3.0]), "c": None}
    assert frame_feature(inputs) == pytest.approx(2.0)
    assert frame_feature({"a": None}) == 0.0
    np.testing.assert_array_equal(frame_vector(inputs), np.array([3.0, 1.0, 2.0], dtype=np.float32))


@pytest.mark.parametrize("cls", [PeekingAdapter, OffByOneMaskAdapter, LeakyResetAdapter, CachingAdapter])
def test_offenders_speak_the_contract(cls: type) -> None:
    adapter = cls()
    assert isinstance(adapter, Adapter)
    assert adapter.info.classes == ("background", "event")
    adapter.reset_state()
    out = adapter.predict(frames([0.5])[0])
    assert out.scores.dtype == np.float32 and out.scores.shape == (2,)
    assert out.scores.sum() == pytest.approx(1.0, abs=1e-6)
    assert out.refers_to is None


@pytest.mark.parametrize(
    "name", ["PeekingAdapter", "OffByOneMaskAdapter", "LeakyResetAdapter", "CachingAdapter"]
)
def test_classes_are_data_bound(name: str) -> None:
    adapter = create_adapter(
        f"streambench.adapters.offenders:{name}", data_bound={"classes": ("bg", "x", "y", "z")}
    )
    assert adapter.info.classes == ("bg", "x", "y", "z")
    adapter.reset_state()
    out = adapter.predict(frames([1.0])[0])
    assert out.scores.shape == (4,) and out.scores.sum() == pytest.approx(1.0, abs=1e-6)
    if name in ("PeekingAdapter", "CachingAdapter"):  # stateless: sigmoid(feature) split over events
        np.testing.assert_allclose(out.scores[1:], sigmoid(1.0) / 3, rtol=1e-6)


def test_options_are_validated() -> None:
    with pytest.raises(ValidationError):
        OffenderOptions(classes=("only",))
    with pytest.raises(ValidationError):
        OffByOneMaskOptions(mask_offset=-1)


def test_peeking_reads_the_next_frame_through_the_back_door() -> None:
    stream = frames([0.0, 1.0, 3.0])
    honest = PeekingAdapter()
    assert [float(honest.predict(f).scores[1]) for f in stream] == pytest.approx(
        [sigmoid(0.0), sigmoid(1.0), sigmoid(3.0)]
    )
    PeekingAdapter.leak(stream)
    peeking = PeekingAdapter(OffenderOptions(gain=2.0))
    got = [float(peeking.predict(f).scores[1]) for f in stream]
    assert got == pytest.approx([sigmoid(2 * 0.5), sigmoid(2 * 2.0), sigmoid(2 * 3.0)])


def test_leaky_reset_keeps_its_frame_counter() -> None:
    stream = frames([1.0, 1.0])
    adapter = LeakyResetAdapter(LeakyResetOptions(ramp_frames=4))
    first = [float(adapter.predict(f).scores[1]) for f in stream]
    assert first == pytest.approx([sigmoid(0.25), sigmoid(0.5)])
    adapter.reset_state()
    second = [float(adapter.predict(f).scores[1]) for f in stream]
    assert second == pytest.approx([sigmoid(0.75), sigmoid(1.0)])  # the counter leaked across the reset


def test_caching_adapter_memoises_across_resets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Timed on a virtual clock that moves 1 µs per read, so a miss's busy-wait of 2 ms takes 2,000 reads
    and a hit none, whatever the machine's load (on the wall clock, ten hits within a tenth of the misses'
    time failed when the machine stalled the test for 2 ms)."""
    now = [0]

    def virtual() -> int:
        now[0] += 1000
        return now[0]

    monkeypatch.setattr(time, "perf_counter_ns", virtual)
    stream = frames([0.1 * i for i in range(10)])
    adapter = CachingAdapter(CachingOptions(miss_cost_ms=2.0))
    start = time.perf_counter_ns()
    cold = [adapter.predict(f).scores for f in stream]
    cold_ns = time.perf_counter_ns() - start
    adapter.reset_state()
    start = time.perf_counter_ns()
    warm = [adapter.predict(f).scores for f in stream]
    warm_ns = time.perf_counter_ns() - start
    assert (adapter.misses, adapter.hits) == (10, 10)
    assert cold_ns >= 10 * 2_000_000 and warm_ns < cold_ns / 10
    for a, b in zip(cold, warm, strict=True):
        np.testing.assert_array_equal(a, b)
    warm[0][:] = 0.0  # the cache hands out copies
    np.testing.assert_array_equal(adapter.predict(stream[0]).scores, cold[0])
    # a different payload of the same values but another dtype is another key
    other = Frame(index=0, t=0.1, inputs={"a": np.full(4, 0.0, dtype=np.float64), "b": None})
    adapter.predict(other)
    assert adapter.misses == 11


@pytest.mark.parametrize("offset", [0, 1])
def test_offbyone_streaming_is_causal_and_sequence_has_the_bug(offset: int) -> None:
    rng = np.random.default_rng(0)
    stream = [
        Frame(index=i, t=0.1 * (i + 1), inputs={"a": rng.standard_normal(6).astype(np.float32)})
        for i in range(8)
    ]
    adapter = OffByOneMaskAdapter(OffByOneMaskOptions(mask_offset=offset))
    adapter.reset_state()
    streamed = np.stack([adapter.predict(f).scores for f in stream])
    sequence = adapter.predict_sequence(stream)
    assert [p.refers_to for p in sequence] == list(range(8))
    seq = np.stack([p.scores for p in sequence])
    if offset == 0:
        np.testing.assert_allclose(seq, streamed, atol=1e-6)
    else:
        assert np.abs(seq[:-1] - streamed[:-1]).max(axis=1).min() > 0  # every t < T-1 sees t + 1
        np.testing.assert_allclose(seq[-1], streamed[-1], atol=1e-6)  # the last has no t + 1
    # streaming prefix does not depend on the future: rerun with a changed last frame
    adapter.reset_state()
    changed = [*stream[:-1], Frame(index=7, t=0.8, inputs={"a": np.zeros(6, dtype=np.float32)})]
    again = np.stack([adapter.predict(f).scores for f in changed])
    np.testing.assert_array_equal(again[:-1], streamed[:-1])


def test_sequence_gradient_support() -> None:
    def cumulative(x: torch.Tensor) -> torch.Tensor:  # y_t = [sum_{s<=t} x_s, x_t[0]]
        return torch.stack([x.sum(dim=1).cumsum(dim=0), x[:, 0]], dim=1)

    inputs = torch.ones(5, 3)
    support = sequence_gradient_support(cumulative, inputs, [0, 2, 4])
    np.testing.assert_array_equal(support, np.arange(5)[None, :] <= np.array([[0], [2], [4]]))
    adapter = OffByOneMaskAdapter()
    support = sequence_gradient_support(adapter.sequence_outputs, torch.randn(5, 3), [1])
    np.testing.assert_array_equal(support, [[True, True, True, False, False]])
    with pytest.raises(ValueError):
        sequence_gradient_support(cumulative, inputs, [5])
    with pytest.raises(ValueError):
        sequence_gradient_support(lambda x: x.sum(dim=1), inputs, [0])
