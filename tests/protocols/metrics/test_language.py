"""Perplexity (seed 003, "Perplexity (PPL)")."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import gmean

from streambench.protocols.metrics.language import perplexity


def test_seed_formula_inverse_geometric_mean_of_probabilities() -> None:
    # PPL(W) = P(w_1..w_N)^(-1/N): P = 1/2 · 1/4 · 1/8 = 1/64, N = 3 -> 64^(1/3) = 4
    probs = np.array([0.5, 0.25, 0.125])
    assert perplexity(np.log(probs)) == pytest.approx(4.0, rel=1e-15)
    # the same through the cross entropy H = -(1/N) Σ log P: PPL = e^H, or 2^H with log2
    h_nats = -np.mean(np.log(probs))
    assert perplexity(np.log(probs)) == pytest.approx(math.exp(h_nats), rel=1e-15)
    assert perplexity(np.log2(probs), base=2) == pytest.approx(4.0, rel=1e-15)
    assert perplexity(np.log10(probs), base=10) == pytest.approx(4.0, rel=1e-14)


def test_seed_value_ranges() -> None:
    # perfect prediction: PPL 1; uniform over V = 10 tokens ("10 equally likely choices"): PPL 10
    assert perplexity(np.zeros(7)) == 1.0
    assert perplexity(np.full(5, -math.log(10))) == pytest.approx(10.0, rel=1e-14)
    assert perplexity(np.full((2, 3), -math.log2(50_000)), base=2) == pytest.approx(50_000, rel=1e-13)


def test_against_scipy_gmean() -> None:
    rng = np.random.default_rng(0)
    probs = rng.uniform(1e-4, 1.0, size=(8, 50))
    assert perplexity(np.log(probs)) == pytest.approx(gmean(1.0 / probs.ravel()), rel=1e-12)
    macro = np.mean([gmean(1.0 / row) for row in probs])
    assert perplexity(np.log(probs), average="macro") == pytest.approx(macro, rel=1e-12)


def test_micro_weights_tokens_macro_weights_sequences() -> None:
    lp = np.array([[math.log(0.5), math.log(0.5), math.log(0.5)], [math.log(0.25), 0.0, 0.0]])
    mask = np.array([[1, 1, 1], [1, 0, 0]])
    # micro: NLL = (3 ln 2 + ln 4) / 4 = 5/4 ln 2 -> 2^(5/4); macro: (2 + 4) / 2 = 3
    assert perplexity(lp, mask) == pytest.approx(2**1.25, rel=1e-15)
    assert perplexity(lp, mask, average="macro") == pytest.approx(3.0, rel=1e-15)
    # one sequence [N]: macro = micro
    assert perplexity(lp[0], average="macro") == perplexity(lp[0]) == pytest.approx(2.0)


def test_mask_ignores_padding_whatever_it_holds() -> None:
    lp = np.array([[math.log(0.5), np.nan, 3.0], [math.log(0.5), math.log(0.5), -np.inf]])
    mask = np.array([[True, False, False], [True, True, False]])
    assert perplexity(lp, mask) == pytest.approx(2.0, rel=1e-15)
    assert perplexity(lp, mask, average="macro") == pytest.approx(2.0, rel=1e-15)


def test_zero_probability_token_gives_infinite_perplexity() -> None:
    assert perplexity(np.array([-1.0, -np.inf])) == math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert perplexity(np.array([-1000.0, -1000.0])) == math.inf  # e^1000 overflows: inf, no warning


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"logprobs": [-1.0, 0.5]}, "logprobs must be <= 0"),
        ({"logprobs": [-1.0, np.nan]}, "logprobs contains NaN"),
        ({"logprobs": [-1.0, -2.0], "mask": [False, False]}, "mask selects no token"),
        ({"logprobs": np.zeros(0)}, "mask selects no token"),
        (
            {"logprobs": [[-1.0, -2.0], [-1.0, -1.0]], "mask": [[1, 1], [0, 0]], "average": "macro"},
            "sequence 1",
        ),
        ({"logprobs": [-1.0, -2.0], "mask": [True]}, "mask has shape"),
        ({"logprobs": [-1.0, -2.0], "mask": [1, 2]}, "mask must contain only 0/1"),
        ({"logprobs": np.zeros((1, 1, 1))}, r"logprobs must be \[N\] or \[B, T\]"),
        ({"logprobs": ["a"]}, "logprobs must be real numbers"),
        ({"logprobs": [-1.0], "base": 3}, "base must be"),
        ({"logprobs": [-1.0], "base": True}, "base must be"),
        ({"logprobs": [-1.0], "average": "weighted"}, "average must be"),
    ],
)
def test_validation(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        perplexity(**kwargs)  # type: ignore[arg-type]


def test_empty_row_allowed_in_micro() -> None:
    lp = np.array([[-1.0, -1.0], [0.0, 0.0]])
    assert perplexity(lp, [[1, 1], [0, 0]]) == pytest.approx(math.e)


@settings(max_examples=200, deadline=None)
@given(
    vocab=st.integers(1, 10**6),
    shape=st.tuples(st.integers(1, 5), st.integers(1, 40)),
    base=st.sampled_from(["e", 2, 10]),
    average=st.sampled_from(["micro", "macro"]),
)
def test_uniform_model_over_v_has_perplexity_v(
    vocab: int, shape: tuple[int, int], base: str, average: str
) -> None:
    log = {"e": math.log, 2: math.log2, 10: math.log10}[base]
    lp = np.full(shape, -log(vocab))
    assert perplexity(lp, base=base, average=average) == pytest.approx(vocab, rel=1e-12)  # type: ignore[arg-type]
