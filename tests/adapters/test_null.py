"""Tests of the null adapter (adapters/null.py; DESIGN.md "The engine": harness overhead floor)."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import Adapter, Frame, Prediction
from streambench.adapters.null import NullAdapter, NullOptions
from streambench.adapters.registry import create_adapter

FRAME = Frame(index=0, t=0.04, inputs={"audio": np.zeros(64, np.float32), "visual": None})


def test_default_two_uniform_classes() -> None:
    adapter = NullAdapter()
    assert isinstance(adapter, Adapter)
    assert adapter.info.classes == ("background", "event") and adapter.info.name == "null"
    out = adapter.predict(FRAME)
    assert isinstance(out, Prediction) and out.refers_to is None
    assert out.scores.shape == (2,) and out.scores.dtype == np.float32
    assert np.array_equal(out.scores, np.array([0.5, 0.5], dtype=np.float32))


def test_same_object_every_call_and_read_only() -> None:
    adapter = NullAdapter(NullOptions(classes=tuple(f"c{i}" for i in range(29))))
    first = adapter.predict(FRAME)
    adapter.reset_state()
    second = adapter.predict(Frame(index=1, t=0.08, inputs={}))
    assert first is second
    assert isinstance(first, Prediction) and first.scores.shape == (29,)
    assert np.allclose(first.scores, 1.0 / 29)
    with pytest.raises(ValueError):
        first.scores[0] = 1.0


def test_classes_are_data_bound() -> None:
    names = ("background", "a", "b", "c")
    adapter = create_adapter("null", data_bound={"classes": names, "input_dims": {"audio": 3}})
    assert adapter.info.classes == names
    out = adapter.predict(FRAME)
    assert isinstance(out, Prediction) and np.allclose(out.scores, 0.25)
