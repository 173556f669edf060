"""Ranking metrics (seed 003: Hit@k, Precision@k, Recall@k, F1@k, MRR, MAP, NDCG) against trec_eval."""

from __future__ import annotations

import io
import math
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

import streambench.protocols.metrics.ranking as ranking_module
from streambench.protocols.metrics.ranking import (
    ScorePrecision,
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


def exact_ndcg(ranked_rels: list[int], judged_rels: list[int], k: int) -> float:
    """NDCG@k with the gain ``2**rel − 1`` in rational arithmetic (the float discounts ``log2(i + 1)``
    taken as exact fractions), rounded once. Gains are in units of ``2**top`` (the ratio does not
    change); a term below ``2**-1100`` of the top gain is left out (it moves NDCG by less than that)."""
    top = max(judged_rels)

    def power(e: int) -> Fraction:
        return Fraction(0) if e < -1100 else Fraction(2) ** e

    def dcg(rels: list[int]) -> Fraction:
        terms = (
            (power(r - top) - power(-top)) / Fraction(math.log2(i + 2))
            for i, r in enumerate(rels[:k])
            if r > 0
        )
        return sum(terms, Fraction(0))

    return float(dcg(ranked_rels) / dcg(sorted(judged_rels, reverse=True)))


@pytest.mark.parametrize("top", [1023, 1024, 1025, 5000, 10**6, 2**52])
def test_ndcg_exponential_gain_beyond_the_float_range(top: int) -> None:
    # 2**1024 overflows float64: the gain is computed in units of the query's top gain (issue 25)
    run = {"q": {"a": 4.0, "b": 3.0, "c": 2.0, "d": 1.0}, "p": {"x": 2.0, "y": 1.0}}
    qrels = {"q": {"a": 3, "b": top, "c": top - 1, "d": 0, "e": top}, "p": {"x": 1, "y": 2}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning, no NaN
        got = ndcg_at_k(run, qrels, 3, "exponential", per_query=True)
    assert got["q"] == pytest.approx(exact_ndcg([3, top, top - 1], [3, top, top - 1, 0, top], 3), rel=1e-15)
    assert got["p"] == exact_ndcg([1, 2], [1, 2], 3)  # the other query is not affected
    assert 0.0 < got["q"] < 1.0
    # a query whose retrieved documents are all far below its top: their gain is below 2**-1000 of it
    far = ndcg_at_k({"q": {"a": 1.0}}, {"q": {"a": 1, "b": top}}, 2, "exponential")
    assert far == pytest.approx(exact_ndcg([1], [1, top], 2), rel=1e-15, abs=2.0**-1000)


def test_ndcg_exponential_gain_is_bitwise_the_plain_formula() -> None:
    # the scaling by a power of two is exact: the seed's formula, summed rank by rank in float64
    rng = np.random.default_rng(5)
    run, qrels = random_inputs(rng, n_queries=40, ties=True)
    for q in qrels:
        qrels[q] = {d: int(rng.integers(-1, 60)) for d in qrels[q]}
    got = ndcg_at_k(run, qrels, 10, "exponential", per_query=True)
    for q, judged in qrels.items():
        with np.errstate(over="ignore"):
            ranked = sorted(run.get(q, {}), key=lambda d: (np.float32(run[q][d]), d), reverse=True)

        def dcg(rels: list[int]) -> float:
            total = 0.0
            for i, r in enumerate(rels[:10]):
                if r >= 1:
                    total += (2.0**r - 1.0) / math.log2(i + 2)
            return total

        ideal = dcg(sorted(judged.values(), reverse=True))
        want = dcg([judged.get(d, 0) for d in ranked]) / ideal if ideal > 0 else 0.0
        assert got[q] == want, q


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


@pytest.mark.parametrize(
    ("scores", "relevant"),
    [
        ({"a": 1.0, "b": 1.0}, "a"),
        ({"b": 1.0, "a": 1.0}, "b"),
        ({"a": 1.0, "B": 1.0}, "a"),
        ({"d10": 1.0, "d9": 1.0}, "d10"),
        ({"d10": 1.0, "d9": 1.0}, "d9"),
        ({"é": 0.5, "z": 0.5, "Z": 0.5}, "é"),  # UTF-8 byte order = code point order: é > z > Z
        ({"x1": 2.0, "x2": 2.0, "x3": 2.0, "y": 3.0}, "x1"),
        ({"a": 0.0, "b": -0.0}, "a"),  # 0.0 == -0.0: a tie
        ({"a": 1e40, "b": 1e39}, "a"),  # both +inf as float32: a tie
        ({"a": 1e-46, "b": 0.0}, "a"),  # 1e-46 is 0 as float32: a tie
    ],
)
def test_tie_order_equals_pytrec_eval(scores: dict[str, float], relevant: str) -> None:
    run, qrels = {"q": scores}, {"q": {relevant: 1}}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"]
    assert mrr(run, qrels) == ref
    # the expected order, written out: descending float32 score, then descending document id
    with np.errstate(over="ignore"):  # 1e40 -> inf, as the C cast
        order = sorted(scores, key=lambda d: (np.float32(scores[d]), d), reverse=True)
    assert ref == 1 / (order.index(relevant) + 1)


def test_near_ties_rank_on_float32_as_trec_eval() -> None:
    # the cases: equal as float32, so tied, and the tie goes to the larger document id
    run, qrels = {"q": {"a": 1.000000000001, "b": 1.0}}, {"q": {"b": 1}}
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"] == 1.0
    assert mrr(run, qrels) == 1.0
    assert mrr(run, qrels, score_precision="float64") == 0.5  # the documented departure: a before b
    # a TREC run file with 6-decimal scores: 64.123457 and 64.123456 are one float32
    run_text = "q Q0 a 1 64.123457 sys\nq Q0 b 2 64.123456 sys\n"
    parsed = pytrec_eval.parse_run(io.StringIO(run_text))
    assert np.float32(parsed["q"]["a"]) == np.float32(parsed["q"]["b"])
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"P.1"}).evaluate(parsed)["q"]["P_1"]
    assert ref == 1.0 and precision_at_k(parsed, qrels, 1) == 1.0
    assert precision_at_k(parsed, qrels, 1, score_precision="float64") == 0.0
    # one float32 step apart: not tied, the higher score first under both precisions
    above = float(np.nextafter(np.float32(1.0), np.float32(2.0)))
    for precision in ("float32", "float64"):
        assert mrr({"q": {"a": above, "b": 1.0}}, qrels, score_precision=precision) == 0.5
    with pytest.raises(ValueError, match="score_precision must be"):
        untyped.mrr(run, qrels, score_precision="float16")
    with pytest.raises(ValueError, match="score_precision must be"):
        untyped.ranking_metrics(run, qrels, 3, score_precision="double")


def test_queries_evaluated() -> None:
    run = {"q1": {"a": 1.0}, "q3": {"a": 1.0}, "q4": {}, "q5": {"a": 1.0}, "q6": {"a": 1.0}}
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"a": 0}, "q4": {"b": 2}, "q5": {}, "q7": {"a": -1}}
    # every judged query counts: q2 (judged, not in the run) and q4 (empty ranking) score 0; q3 and q7
    # (judged, no relevant document) score 0 as in trec_eval; q5 (no judgement) and q6 (not in the
    # qrels) are not evaluated
    expected = {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 0.0, "q7": 0.0}
    assert precision_at_k(run, qrels, 1, per_query=True) == expected
    assert precision_at_k(run, qrels, 1) == pytest.approx(1 / 5)
    assert ndcg_at_k(run, qrels, 5, per_query=True) == expected
    assert recall_at_k(run, qrels, 5, per_query=True) == expected
    assert map_at_k(run, qrels, per_query=True) == expected
    assert mrr(run, qrels, per_query=True) == expected
    assert ranking_metrics(run, qrels, 3) == {
        "hit@3": 1 / 5,
        "precision@3": 1 / 15,
        "recall@3": 1 / 5,
        "f1@3": 0.1,
        "mrr@3": 1 / 5,
        "map@3": 1 / 5,
        "ndcg@3": 1 / 5,
    }


def test_judged_query_without_relevant_document_counts_as_zero() -> None:
    # the case: two queries, one without a relevant document; trec_eval's mean is 0.5
    run = {"q1": {"a": 1.0}, "q2": {"a": 1.0, "b": 0.5}}
    qrels = {"q1": {"a": 1}, "q2": {"a": 0, "b": 0}}
    assert map_at_k(run, qrels) == 0.5
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P.1", "ndcg_cut.5"}).evaluate(run)
    assert ref == {
        "q1": {"map": 1.0, "P_1": 1.0, "ndcg_cut_5": 1.0},
        "q2": {"map": 0.0, "P_1": 0.0, "ndcg_cut_5": 0.0},
    }
    assert map_at_k(run, qrels) == np.mean([ref[q]["map"] for q in ref])
    assert precision_at_k(run, qrels, 1) == np.mean([ref[q]["P_1"] for q in ref])
    assert ndcg_at_k(run, qrels, 5) == np.mean([ref[q]["ndcg_cut_5"] for q in ref])


def test_which_queries_pytrec_eval_evaluates() -> None:
    # pytrec_eval (trec_eval without -c) reports the judged queries of the run, also those with only
    # non-relevant judgements and those with an empty ranking; not the queries missing from the run,
    # not the run's unjudged queries, not a query whose judgements are an empty dict. Here the
    # queries missing from the run score 0 and count in the mean (trec_eval -c); the rest is the same.
    run = {"rel": {"a": 1.0}, "zero": {"a": 1.0}, "neg": {"a": 1.0}, "empty_run": {}, "unjudged": {"a": 1.0}}
    run["no_judgements"] = {"a": 1.0}
    qrels = {"rel": {"a": 1}, "zero": {"a": 0}, "neg": {"a": -1}, "empty_run": {"a": 1}, "missing": {"a": 2}}
    qrels["no_judgements"] = {}
    measures = {"map", "P.1", "recall.1", "ndcg_cut.1", "success.1", "recip_rank", "map_cut.1"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    assert set(ref) == {"rel", "zero", "neg", "empty_run"}
    ours = {
        "map": map_at_k(run, qrels, per_query=True),
        "map_cut_1": map_at_k(run, qrels, 1, per_query=True),
        "P_1": precision_at_k(run, qrels, 1, per_query=True),
        "recall_1": recall_at_k(run, qrels, 1, per_query=True),
        "ndcg_cut_1": ndcg_at_k(run, qrels, 1, per_query=True),
        "success_1": hit_at_k(run, qrels, 1, per_query=True),
        "recip_rank": mrr(run, qrels, per_query=True),
    }
    for measure, values in ours.items():
        assert values == {**{q: ref[q][measure] for q in ref}, "missing": 0.0}, measure
    # the mean: trec_eval -c, i.e. pytrec_eval's per-query values plus 0 for "missing", over 5 queries
    assert map_at_k(run, qrels) == sum(ref[q]["map"] for q in ref) / 5 == 0.2


def test_empty_inputs() -> None:
    with pytest.raises(ValueError, match="qrels has no judged query"):
        map_at_k({"q": {"a": 1.0}}, {})
    with pytest.raises(ValueError, match="qrels has no judged query"):
        ranking_metrics({"q": {"a": 1.0}}, {"q": {}}, 5)
    assert recall_at_k({"q": {"a": 1.0}}, {}, 3, per_query=True) == {}
    assert ndcg_at_k({}, {"q": {"a": 1}}, 3) == 0.0
    # judged, nothing relevant anywhere: every metric is 0 (no division by zero)
    assert set(ranking_metrics({}, {"q": {"a": 0}}, 5).values()) == {0.0}
    nothing_relevant = ranking_metrics({"q": {"a": 1.0}}, {"q": {"a": 0, "b": -2}}, 5, "exponential")
    assert set(nothing_relevant.values()) == {0.0}


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
        (lambda: untyped.hit_at_k(RUN, {"q1": {"d2": "x"}}, 3), "relevance values must be integers"),
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


# one input rule (issue 25): ids are str; a score is a Python or numpy int or float (not NaN); a
# relevance a Python or numpy int within int64; bool, str and float relevance refused; checked on every
# entry, whether scores tie or not and whether the query is evaluated or not


@pytest.mark.parametrize(
    ("run", "qrels", "message"),
    [
        ({"q": {"a": "0.5"}}, {"q": {"a": 1}}, r"run scores must be real numbers.*'0\.5' \(str\)"),
        ({"q": {"a": 0.5}}, {"q": {"a": "1"}}, r"relevance values must be integers.*'1' \(str\)"),
        ({"q": {"a": 0.5}}, {"q": {"a": 1.0}}, r"relevance values must be integers.*1\.0 \(float\)"),
        ({"q": {"a": 0.5}}, {"q": {"a": np.float64(1.0)}}, "relevance values must be integers"),
        ({"q": {"a": True}}, {"q": {"a": 1}}, r"run scores must be real numbers.*\(bool\)"),
        ({"q": {"a": np.bool_(True)}}, {"q": {"a": 1}}, "run scores must be real numbers"),
        ({"q": {"a": 0.5}}, {"q": {"a": True}}, r"relevance values must be integers.*\(bool\)"),
        ({"q": {"a": None}}, {"q": {"a": 1}}, r"run scores must be real numbers.*None"),
        ({"q": {1: 0.5}}, {"q": {"a": 1}}, r"run document ids must be strings: query 'q' has 1 \(int\)"),
        ({"q": {1: 0.5, 2: 0.5}}, {"q": {"a": 1}}, "run document ids must be strings"),  # tied
        ({"q": {1: 0.5, 2: 0.25}}, {"q": {"a": 1}}, "run document ids must be strings"),  # not tied
        ({"q": {"a": 0.5}}, {"q": {1: 1}}, "qrels document ids must be strings"),
        ({"u": {1: 0.5}, "q": {"a": 0.5}}, {"q": {"a": 1}}, "run document ids must be"),  # u: not judged
        ({"u": {"b": "x"}, "q": {"a": 0.5}}, {"q": {"a": 1}}, "run scores must be real numbers"),
        ({"u": {"b": math.nan}, "q": {"a": 0.5}}, {"q": {"a": 1}}, "run scores contain NaN"),
        ({"q": {"a": 0.5}}, {"q": {"a": 2**63}}, "relevance values must lie within the int64 range"),
        ({"q": {"a": 10**400}}, {"q": {"a": 1}}, "run scores must lie within the float64 range"),
    ],
)
def test_one_input_rule(run: Any, qrels: Any, message: str) -> None:
    for metric in (hit_at_k, ndcg_at_k):
        with pytest.raises(ValueError, match=message):
            metric(run, qrels, 3)
    with pytest.raises(ValueError, match=message):
        ranking_metrics(run, qrels, 3, "exponential")


def test_strings_are_refused_as_pytrec_eval_refuses_them() -> None:
    for run, qrels in (({"q": {"a": "0.5"}}, {"q": {"a": 1}}), ({"q": {"a": 0.5}}, {"q": {"a": "1"}})):
        with pytest.raises(TypeError):
            pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.3"}).evaluate(run)
        with pytest.raises(ValueError, match="must be"):
            ndcg_at_k(run, qrels, 3)


def test_numpy_scalars_and_python_numbers_are_read_alike() -> None:
    run, qrels = random_inputs(np.random.default_rng(3), n_queries=20, ties=True)
    kinds = (np.int64, np.float32)  # the scores are small integers: exact in both
    as_numpy = {
        np.str_(q): {np.str_(d): kinds[i % 2](s) for i, (d, s) in enumerate(docs.items())}
        for q, docs in run.items()
    }
    qrels_numpy = {q: {np.str_(d): np.int16(r) for d, r in docs.items()} for q, docs in qrels.items()}
    want = ranking_metrics(run, qrels, 5, "exponential")
    assert ranking_metrics(as_numpy, qrels_numpy, 5, "exponential") == want
    # integer scores (Python int) and infinite scores are real numbers
    assert mrr({"q": {"a": 2, "b": 1, "c": -math.inf}}, {"q": {"b": 1}}) == 0.5


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


def colliding_inputs(
    rng: np.random.Generator, n_queries: int
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """Queries whose scores collide in float32: a few float32 values (and their float32 neighbours),
    each document's score one of them moved by less than half a float32 step, so that the scores are
    distinct in float64 but equal in float32. Some queries have no relevant judgement (relevance 0 or
    -1 only), some judged ones are missing from the run, some of the run are not judged."""
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for i in range(n_queries):
        n = int(rng.integers(2, 41))
        docs = [f"d{d}" for d in rng.choice(120, size=n, replace=False)]
        base = (rng.normal(size=int(rng.integers(1, 5))) * 10.0 ** rng.integers(-3, 6)).astype(np.float32)
        base = np.concatenate([base, np.nextafter(base, np.float32(np.inf))])
        f32 = rng.choice(base, size=n)
        up = np.nextafter(f32, np.float32(np.inf)).astype(np.float64) - f32
        down = f32 - np.nextafter(f32, np.float32(-np.inf)).astype(np.float64)
        move = rng.uniform(-0.45, 0.45, size=n)
        scores = f32.astype(np.float64) + np.where(move > 0, move * up, move * down)
        assert np.array_equal(scores.astype(np.float32), f32)
        if i % 7 != 3:  # every 7th query (from q3) is judged but missing from the run
            run[f"q{i}"] = dict(zip(docs, scores.tolist(), strict=True))
        judged = rng.choice(120, size=int(rng.integers(1, 30)), replace=False)
        levels = [-1, 0, 0] if i % 5 == 1 else [-1, 0, 0, 0, 1, 2, 3]  # q1, q6, ...: nothing relevant
        qrels[f"q{i}"] = {f"d{d}": int(rng.choice(levels)) for d in judged}
        if i % 5 != 1:
            qrels[f"q{i}"][docs[int(rng.integers(n))]] = int(rng.integers(1, 4))  # a relevant one retrieved
    run["unjudged"] = {"d1": 1.0, "d2": 1.0}
    return run, qrels


KS = (1, 3, 5, 10, 100)


def pytrec_eval_differences(
    run: dict[str, dict[str, float]],
    qrels: dict[str, dict[str, int]],
    ks: tuple[int, ...] = KS,
    score_precision: ScorePrecision = "float32",
) -> set[tuple[str, str]]:
    """``(query, measure)`` where our value is not bitwise the value of pytrec_eval; also checks which
    queries are evaluated and the means (trec_eval -c: pytrec_eval's values, 0 for a judged query
    missing from the run, averaged over every judged query)."""
    cut = ",".join(map(str, ks))
    measures = {f"P.{cut}", f"recall.{cut}", f"map_cut.{cut}", f"ndcg_cut.{cut}", f"success.{cut}"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures | {"recip_rank", "map"}).evaluate(run)
    judged = [q for q, docs in qrels.items() if docs]
    assert set(ref) == set(judged) & set(run)
    opts: dict[str, Any] = {"score_precision": score_precision}
    ours: dict[str, tuple[dict[str, float], float]] = {}

    def add(measure: str, metric: Callable[..., Any], *args: Any) -> None:
        ours[measure] = (metric(run, qrels, *args, per_query=True, **opts), metric(run, qrels, *args, **opts))

    for k in ks:
        add(f"P_{k}", precision_at_k, k)
        add(f"recall_{k}", recall_at_k, k)
        add(f"map_cut_{k}", map_at_k, k)
        add(f"ndcg_cut_{k}", ndcg_at_k, k)
        add(f"success_{k}", hit_at_k, k)
        add(f"f1_{k}", f1_at_k, k)
        add(f"mrr_{k}", mrr, k)
    add("recip_rank", mrr)
    add("map", map_at_k)

    def expected(q: str, measure: str) -> float:
        if q not in ref:
            return 0.0  # judged, missing from the run
        name, _, k = measure.partition("_")
        if name == "f1":  # F1@k from trec_eval's P@k and recall@k
            p, r = ref[q][f"P_{k}"], ref[q][f"recall_{k}"]
            return 2 * p * r / (p + r) if p + r > 0 else 0.0
        if name == "mrr":  # MRR@k: recip_rank if the first relevant document is within k
            rr = ref[q]["recip_rank"]
            return rr if rr > 0 and round(1 / rr) <= int(k) else 0.0
        return float(ref[q][measure])

    differences = set()
    for measure, (per_query, mean) in ours.items():
        assert list(per_query) == judged
        want = [expected(q, measure) for q in judged]
        differences |= {(q, measure) for q, w in zip(judged, want, strict=True) if per_query[q] != w}
        if score_precision == "float32":
            assert mean == np.mean([per_query[q] for q in judged])
            assert mean == np.mean(want), measure
    return differences


@pytest.mark.parametrize(("ties", "max_docs"), [(False, 30), (True, 30), (True, 600), (False, 2500)])
def test_equals_pytrec_eval(ties: bool, max_docs: int) -> None:
    rng = np.random.default_rng(100 + ties + max_docs)
    run, qrels = random_inputs(rng, n_queries=60 if max_docs < 1000 else 8, ties=ties, max_docs=max_docs)
    del run["q0"]  # judged, missing from the run: trec_eval skips it, here it scores 0
    run["unjudged"] = {"d1": 1.0}
    ks = (*KS, 2000) if max_docs > 1000 else KS  # ranks past 1620: numpy's log2 != C's log2 there
    assert pytrec_eval_differences(run, qrels, ks) == set()


def test_deep_ranks_use_the_c_log2() -> None:
    # log2(1621) differs in the last bit between numpy 2.4 (x86-64) and the C library trec_eval uses:
    # the only relevant document at rank 1620 gives NDCG = 1 / log2(1621) exactly as trec_eval's
    run = {"q": {f"d{i:04d}": 2000.0 - i for i in range(1, 1621)}}
    qrels = {"q": {"d1620": 1, "d0001": 0}}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.2000"}).evaluate(run)["q"]["ndcg_cut_2000"]
    assert ref == 1 / math.log2(1621)
    assert ndcg_at_k(run, qrels, 2000) == ref


def test_equals_pytrec_eval_on_float32_collisions() -> None:
    rng = np.random.default_rng(32)
    run, qrels = colliding_inputs(rng, n_queries=400)
    evaluated = [q for q in qrels if q in run]
    assert len(evaluated) > 300 and sum(not any(v >= 1 for v in qrels[q].values()) for q in evaluated) > 60
    # the scores tie in float32 only: ranked on float64 they give other results (so the check can fail)
    as_float64 = pytrec_eval_differences(run, qrels, score_precision="float64")
    assert len({q for q, _ in as_float64}) > 50
    assert pytrec_eval_differences(run, qrels) == set()


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
