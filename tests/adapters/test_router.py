"""The reference router and its wrappers (adapters/router.py): state update, outputs, aggregation,
hard label, registry names."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streambench.adapters.contract import AdapterInfo, Frame, Prediction
from streambench.adapters.registry import create_adapter
from streambench.adapters.router import (
    DOMAIN_MODALITY,
    AggregatedRouter,
    HardLabelRouter,
    ReferenceAggregatedRouter,
    ReferenceHardLabelRouter,
    RouterOptions,
    SoftRouterAdapter,
    domain_signature,
)


def frame(i: int, x: np.ndarray | None) -> Frame:
    return Frame(index=i, t=(i + 1) / 25, inputs={DOMAIN_MODALITY: x})


def softmax(v: np.ndarray) -> np.ndarray:
    z = np.exp(v - v.max())
    return z / z.sum()


def test_signatures_are_seeded_unit_vectors() -> None:
    a = domain_signature("A", 16)
    np.testing.assert_array_equal(a, domain_signature("A", 16))
    assert math.isclose(float(np.linalg.norm(a)), 1.0)
    assert abs(float(a @ domain_signature("B", 16))) < 0.9


def test_soft_router_state_is_a_leaky_sum_of_evidence() -> None:
    r = SoftRouterAdapter(RouterOptions(decay=0.5, gain=2.0, sharpness=3.0, input_dims={DOMAIN_MODALITY: 8}))
    filters = np.stack([domain_signature("A", 8), domain_signature("B", 8)])
    xs = [domain_signature("A", 8), domain_signature("B", 8) * 2.0]
    e1, e2 = filters @ xs[0], filters @ xs[1]
    p1 = r.predict(frame(0, xs[0]))
    np.testing.assert_allclose(r.state, 2.0 * e1)
    assert p1.weights is not None
    np.testing.assert_allclose(p1.weights, softmax(2.0 * e1))
    np.testing.assert_allclose(p1.scores, softmax(3.0 * e1), rtol=1e-6)
    assert p1.scores.dtype == np.float32 and p1.refers_to is None
    p2 = r.predict(frame(1, xs[1]))
    np.testing.assert_allclose(r.state, 0.5 * 2.0 * e1 + 2.0 * e2)
    assert p2.weights is not None
    np.testing.assert_allclose(p2.weights, softmax(r.state))
    r.predict(frame(2, None))  # a missing frame: no evidence, the state only decays
    np.testing.assert_allclose(r.state, 0.5 * (0.5 * 2.0 * e1 + 2.0 * e2))
    r.reset_state()
    np.testing.assert_array_equal(r.state, [0.0, 0.0])
    assert r.info.capabilities == frozenset({"weights"}) and r.info.classes == ("A", "B")


def test_router_without_weights_emits_its_routing_weights_as_scores() -> None:
    r = SoftRouterAdapter(RouterOptions(emit_weights=False))
    p = r.predict(frame(0, domain_signature("B", 32)))
    assert p.weights is None and "weights" not in r.info.capabilities
    np.testing.assert_allclose(p.scores, softmax(r.state), rtol=1e-6)


def test_soft_router_lags_after_a_long_segment() -> None:
    r = SoftRouterAdapter()
    a, b = domain_signature("A", 32), domain_signature("B", 32)
    w = [r.predict(frame(i, a)).weights for i in range(40)] + [
        r.predict(frame(40 + i, b)).weights for i in range(3)
    ]
    assert w[39] is not None and w[39][0] > 0.99
    assert w[42] is not None and w[42][0] > 0.9  # three frames of B do not move it


class Scripted:
    """An adapter that replays given (scores, weights) rows."""

    def __init__(self, rows: list[tuple[list[float], list[float] | None]], weights: bool = True) -> None:
        self.rows = rows
        self.i = 0
        caps = frozenset({"weights"}) if weights else frozenset()
        self._info = AdapterInfo(name="scripted", classes=("A", "B"), modalities=("x",), capabilities=caps)

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.i = 0

    def predict(self, frame: Frame) -> Prediction | None:
        scores, weights = self.rows[self.i]
        self.i += 1
        return Prediction(
            scores=np.asarray(scores, dtype=np.float32),
            weights=None if weights is None else np.asarray(weights),
        )


ROWS: list[tuple[list[float], list[float] | None]] = [
    ([0.9, 0.1], [1.0, 0.0]),
    ([0.8, 0.2], [0.0, 1.0]),
    ([0.3, 0.7], [0.5, 0.5]),
    ([0.1, 0.9], [0.2, 0.8]),
]


def run(adapter: object, n: int = 4) -> np.ndarray:
    outs = [adapter.predict(frame(i, np.zeros(2))) for i in range(n)]  # type: ignore[attr-defined]
    return np.stack([o.weights for o in outs])


def test_aggregation_modes() -> None:
    np.testing.assert_allclose(run(AggregatedRouter(Scripted(ROWS), "none")), [r[1] for r in ROWS])
    mean = run(AggregatedRouter(Scripted(ROWS), "mean", window=2))
    np.testing.assert_allclose(mean, [[1.0, 0.0], [0.5, 0.5], [0.25, 0.75], [0.35, 0.65]])
    tail = run(AggregatedRouter(Scripted(ROWS), "tail_exp", window=3, tail_decay=0.5))
    # frame 2: (1·[.5,.5] + .5·[0,1] + .25·[1,0]) / 1.75
    np.testing.assert_allclose(tail[2], [(0.5 + 0.25) / 1.75, (0.5 + 0.5) / 1.75])
    np.testing.assert_allclose(tail[1], [0.5 / 1.5, 1.0 / 1.5])


def test_aggregation_falls_back_to_scores_and_resets() -> None:
    agg = AggregatedRouter(Scripted(ROWS, weights=False), "mean", window=4)
    assert "weights" in agg.info.capabilities and agg.info.name == "scripted+mean"
    np.testing.assert_allclose(run(agg, 2)[1], [0.85, 0.15], rtol=1e-6)
    agg.reset_state()
    np.testing.assert_allclose(run(agg, 1)[0], [0.9, 0.1], rtol=1e-6)  # history cleared, inner reset


def test_hard_label_is_a_one_hot_argmax() -> None:
    hard = run(HardLabelRouter(Scripted(ROWS), "scores"))
    np.testing.assert_array_equal(hard, [[1, 0], [1, 0], [0, 1], [0, 1]])
    state = run(HardLabelRouter(Scripted(ROWS), "weights"))
    np.testing.assert_array_equal(state, [[1, 0], [0, 1], [1, 0], [0, 1]])  # tie -> lowest index
    with pytest.raises(ValueError, match="source must be"):
        HardLabelRouter(Scripted(ROWS), "labels")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="aggregation must be"):
        AggregatedRouter(Scripted(ROWS), "max")  # type: ignore[arg-type]


def test_registry_names_build_the_router_and_its_wrappers() -> None:
    bound = {"classes": ("A", "B"), "input_dims": {DOMAIN_MODALITY: 16}}
    soft = create_adapter("reference-router", {"decay": 0.9}, data_bound=bound)
    assert isinstance(soft, SoftRouterAdapter) and soft.options.decay == 0.9
    hard = create_adapter("reference-router-hard", {"source": "weights"}, data_bound=bound)
    assert isinstance(hard, ReferenceHardLabelRouter) and hard.info.name == "reference-router+hard-state"
    agg = create_adapter("reference-router-aggregated", {"aggregation": "tail_exp"}, data_bound=bound)
    assert isinstance(agg, ReferenceAggregatedRouter) and agg.mode == "tail_exp"
    out = hard.predict(frame(0, domain_signature("B", 16)))
    assert isinstance(out, Prediction) and out.weights is not None
    np.testing.assert_array_equal(out.weights, [0.0, 1.0])
