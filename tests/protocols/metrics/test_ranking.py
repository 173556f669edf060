"""Ranking metrics (seed 003: Hit@k, Precision@k, Recall@k, F1@k, MRR, MAP, NDCG) against trec_eval."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import protocols.metrics.ranking as ranking_module
from protocols.metrics.ranking import (
    f1_at_k,
    hit_at_k,
    map_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    ranking_metrics,
    recall_at_k,
)

untyped: Any = ranking_module  # for calls with wrong argument types

# q1 ranks d1 (0), d2 (1), d3 (unjudged), d4 (1); d5 (1) is relevant but not retrieved: 3 relevant
RUN = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.6}}
QRELS = {"q1": {"d1": 0, "d2": 1, "d4": 1, "d5": 1}}


# --------------------------------------------------------------------------------------------------
# seed 003 formulas, by hand


def test_hand_computed_single_query() -> None:
    assert hit_at_k(RUN, QRELS, 1) == 0.0
    assert hit_at_k(RUN, QRELS, 2) == 1.0
    assert precision_at_k(RUN, QRELS, 2) == 0.5  # 1 hit / k
    assert recall_at_k(RUN, QRELS, 2) == pytest.approx(1 / 3)  # 1 hit / 3 relevant
    assert f1_at_k(RUN, QRELS, 2) == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert mrr(RUN, QRELS) == 0.5
    assert mrr(RUN, QRELS, k=1) == 0.0
    assert map_at_k(RUN, QRELS) == pytest.approx((1 / 2 + 2 / 4) / 3)  # Σ P@n rel(n) / all relevant
    assert map_at_k(RUN, QRELS, 2) == pytest.approx((1 / 2) / 3)


def test_k_larger_than_the_list() -> None:
    run, qrels = {"q": {"a": 2.0, "b": 1.0}}, {"q": {"a": 1, "b": 1}}
    assert precision_at_k(run, qrels, 10) == 0.2  # divided by k, not by the 2 retrieved
    assert recall_at_k(run, qrels, 10) == 1.0
    assert hit_at_k(run, qrels, 10) == 1.0
    assert map_at_k(run, qrels, 10) == 1.0
    assert ndcg_at_k(run, qrels, 10) == 1.0
    assert f1_at_k(run, qrels, 10) == pytest.approx(2 * 0.2 / 1.2)


def test_ndcg_linear_and_exponential_gain() -> None:
    run = {"q": {"b": 4.0, "c": 3.0, "a": 2.0, "d": 1.0}}
    qrels = {"q": {"a": 3, "b": 2, "c": 0, "d": 1}}
    # top 3: b (2), c (0), a (3); ideal: a (3), b (2), d (1)
    lin = (2 + 3 / math.log2(4)) / (3 + 2 / math.log2(3) + 1 / math.log2(4))
    exp = (3 + 7 / math.log2(4)) / (7 + 3 / math.log2(3) + 1 / math.log2(4))
    assert ndcg_at_k(run, qrels, 3) == pytest.approx(lin, abs=1e-15)
    assert ndcg_at_k(run, qrels, 3, gain="exponential") == pytest.approx(exp, abs=1e-15)
    # the ideal ranking uses all judgements, retrieved or not: drop d from the run, IDCG unchanged
    run2 = {"q": {"b": 4.0, "c": 3.0, "a": 2.0}}
    assert ndcg_at_k(run2, qrels, 3, gain="exponential") == pytest.approx(exp, abs=1e-15)
    # negative relevance: judged, not relevant, no gain
    negative = ndcg_at_k({"q": {"x": 1.0, "y": 0.5}}, {"q": {"x": -1, "y": 1}}, 2)
    assert negative == pytest.approx(1 / math.log2(3))


def test_one_relevant_item_per_query_makes_k1_metrics_equal() -> None:
    # seed 003 "指标间关系": with one positive per user, Hit@1 = Precision@1 = Recall@1 = MRR@1, and
    # Precision@k = Hit@k / k falls as k grows
    rng = np.random.default_rng(3)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i in range(200):
        docs = [f"d{j}" for j in range(20)]
        relevant = docs[int(rng.integers(20))]
        scores = rng.random(20) + 0.5 * np.array([d == relevant for d in docs])
        run[f"q{i}"] = dict(zip(docs, scores.tolist(), strict=True))
        qrels[f"q{i}"] = {relevant: 1}
    at1 = [
        hit_at_k(run, qrels, 1),
        precision_at_k(run, qrels, 1),
        recall_at_k(run, qrels, 1),
        mrr(run, qrels, 1),
    ]
    assert at1 == [at1[0]] * 4 and 0 < at1[0] < 1
    assert at1[0] == pytest.approx(np.mean([max(run[q], key=run[q].__getitem__) in qrels[q] for q in run]))
    for k in (5, 10):
        assert precision_at_k(run, qrels, k) == pytest.approx(hit_at_k(run, qrels, k) / k)
    assert precision_at_k(run, qrels, 10) < precision_at_k(run, qrels, 5) < precision_at_k(run, qrels, 1)


# --------------------------------------------------------------------------------------------------
# conventions: ties, queries


def test_ties_are_broken_by_descending_document_id() -> None:
    qrels = {"q": {"a": 1}}
    for run in ({"q": {"a": 1.0, "b": 1.0}}, {"q": {"b": 1.0, "a": 1.0}}):
        assert mrr(run, qrels) == 0.5  # "b" > "a": b is ranked first
    assert mrr({"q": {"a": 1.0, "B": 1.0}}, qrels) == 1.0  # string order: "a" > "B"
    assert mrr({"q": {"d10": 1.0, "d9": 1.0}}, {"q": {"d10": 1}}) == 0.5  # "d9" > "d10"


def test_queries_evaluated() -> None:
    run = {"q1": {"a": 1.0}, "q3": {"a": 1.0}, "q4": {}}
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"a": 0}, "q4": {"b": 2}}
    # q2 (judged, not in the run) and q4 (empty ranking) score 0; q3 (no relevant document) is not
    # evaluated; a query of the run that is not judged would be ignored
    assert precision_at_k(run, qrels, 1, per_query=True) == {"q1": 1.0, "q2": 0.0, "q4": 0.0}
    assert precision_at_k(run, qrels, 1) == pytest.approx(1 / 3)
    assert ndcg_at_k(run, qrels, 5, per_query=True) == {"q1": 1.0, "q2": 0.0, "q4": 0.0}


def test_empty_inputs() -> None:
    with pytest.raises(ValueError, match="qrels has no query with a relevant document"):
        map_at_k({"q": {"a": 1.0}}, {})
    with pytest.raises(ValueError, match="qrels has no query with a relevant document"):
        ranking_metrics({}, {"q": {"a": 0}}, 5)
    assert recall_at_k({"q": {"a": 1.0}}, {}, 3, per_query=True) == {}
    assert ndcg_at_k({}, {"q": {"a": 1}}, 3) == 0.0


def test_ranking_metrics_equals_the_single_metrics() -> None:
    run, qrels = random_inputs(np.random.default_rng(8), n_queries=30, ties=True)
    got = ranking_metrics(run, qrels, 5, gain="exponential")
    assert got == {
        "hit@5": hit_at_k(run, qrels, 5),
        "precision@5": precision_at_k(run, qrels, 5),
        "recall@5": recall_at_k(run, qrels, 5),
        "f1@5": f1_at_k(run, qrels, 5),
        "mrr@5": mrr(run, qrels, 5),
        "map@5": map_at_k(run, qrels, 5),
        "ndcg@5": ndcg_at_k(run, qrels, 5, "exponential"),
    }


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: precision_at_k(RUN, QRELS, 0), "k must be >= 1"),
        (lambda: untyped.precision_at_k(RUN, QRELS, True), "k must be an integer"),
        (lambda: untyped.mrr(RUN, QRELS, 2.5), "k must be an integer"),
        (lambda: untyped.ndcg_at_k(RUN, QRELS, 3, "log"), "gain must be"),
        (lambda: untyped.hit_at_k(RUN, {"q1": {"d2": 0.5}}, 3), "qrels relevance values must be integers"),
        (lambda: untyped.hit_at_k(RUN, {"q1": {"d2": "x"}}, 3), "relevance values must be real numbers"),
        (lambda: hit_at_k({"q1": {"d2": float("nan")}}, QRELS, 3), "run scores contain NaN"),
        (lambda: untyped.hit_at_k({"q1": {"d2": "high"}}, QRELS, 3), "run scores must be real numbers"),
        (lambda: untyped.hit_at_k([("q1", {})], QRELS, 3), "run must be a mapping"),
        (lambda: untyped.hit_at_k(RUN, {"q1": [1]}, 3), "qrels must map string query ids"),
        (lambda: untyped.hit_at_k({1: {"d2": 1.0}}, QRELS, 3), "run must map string query ids"),
    ],
)
def test_validation(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


# --------------------------------------------------------------------------------------------------
# against pytrec_eval (trec_eval)


def random_inputs(
    rng: np.random.Generator, n_queries: int, ties: bool, max_docs: int = 30
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    pool = 2 * max_docs
    for i in range(n_queries):
        n = int(rng.integers(1, max_docs + 1))
        docs = rng.choice(pool, size=n, replace=False)
        scores = rng.integers(0, 4, n).astype(float) if ties else rng.random(n)
        run[f"q{i}"] = {f"d{d}": float(s) for d, s in zip(docs, scores, strict=True)}
        judged = rng.choice(pool, size=max(2, pool // 3), replace=False)
        qrels[f"q{i}"] = {f"d{d}": int(rng.choice([0, 0, 1, 2, 3])) for d in judged}
        qrels[f"q{i}"][f"d{judged[0]}"] = int(rng.integers(1, 4))  # at least one relevant document
    return run, qrels


@pytest.mark.parametrize(("ties", "max_docs"), [(False, 30), (True, 30), (True, 600)])
def test_equals_pytrec_eval(ties: bool, max_docs: int) -> None:
    rng = np.random.default_rng(100 + ties + max_docs)
    run, qrels = random_inputs(rng, n_queries=60, ties=ties, max_docs=max_docs)
    del run["q0"]  # judged, missing from the run: trec_eval skips it, here it scores 0
    run["unjudged"] = {"d1": 1.0}
    ks = (1, 3, 10, 100)
    cut = ",".join(map(str, ks))
    measures = {f"P.{cut}", f"recall.{cut}", f"map_cut.{cut}", f"ndcg_cut.{cut}", f"success.{cut}"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures | {"recip_rank", "map"}).evaluate(run)
    assert set(ref) == set(run) - {"unjudged"}

    def check(ours: dict[str, float], measure: str) -> None:
        assert set(ours) == set(qrels)
        assert ours.pop("q0") == 0.0
        np.testing.assert_allclose([ours[q] for q in ref], [ref[q][measure] for q in ref], rtol=0, atol=1e-12)

    for k in ks:
        check(precision_at_k(run, qrels, k, per_query=True), f"P_{k}")
        check(recall_at_k(run, qrels, k, per_query=True), f"recall_{k}")
        check(map_at_k(run, qrels, k, per_query=True), f"map_cut_{k}")
        check(ndcg_at_k(run, qrels, k, per_query=True), f"ndcg_cut_{k}")
        check(hit_at_k(run, qrels, k, per_query=True), f"success_{k}")
    check(mrr(run, qrels, per_query=True), "recip_rank")
    check(map_at_k(run, qrels, per_query=True), "map")
    # the mean counts the query missing from the run as 0
    p10 = [ref[q]["P_10"] for q in ref] + [0.0]
    assert precision_at_k(run, qrels, 10) == pytest.approx(np.mean(p10), abs=1e-12)


# --------------------------------------------------------------------------------------------------
# properties


runs = st.dictionaries(
    st.sampled_from([f"q{i}" for i in range(4)]),
    st.dictionaries(
        st.sampled_from([f"d{i}" for i in range(12)]), st.integers(0, 3).map(float) | st.floats(-5, 5)
    ),
)
qrels_st = st.dictionaries(
    st.sampled_from([f"q{i}" for i in range(4)]),
    st.dictionaries(st.sampled_from([f"d{i}" for i in range(12)]), st.integers(-1, 3)),
)


@settings(max_examples=150, deadline=None)
@given(run=runs, qrels=qrels_st, k=st.integers(1, 15))
def test_metrics_in_unit_interval(
    run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], k: int
) -> None:
    values = [
        *hit_at_k(run, qrels, k, per_query=True).values(),
        *precision_at_k(run, qrels, k, per_query=True).values(),
        *recall_at_k(run, qrels, k, per_query=True).values(),
        *f1_at_k(run, qrels, k, per_query=True).values(),
        *mrr(run, qrels, k, per_query=True).values(),
        *map_at_k(run, qrels, k, per_query=True).values(),
        *ndcg_at_k(run, qrels, k, per_query=True).values(),
        *ndcg_at_k(run, qrels, k, "exponential", per_query=True).values(),
    ]
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in values)
