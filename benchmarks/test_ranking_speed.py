"""Ranking metrics on 100 000 queries against pytrec_eval (trec_eval) on the same inputs.

Opt-in (not collected by ``pytest`` alone): ``python -m pytest benchmarks -k ranking -s``. Each query
ranks 100 documents with random scores; every document is judged with a random relevance (0: 80 %,
1: 15 %, 2: 5 %; at least one relevant document per query). Both sides compute P@10, Recall@10,
MAP@10 (``map_cut_10``), NDCG@10 (``ndcg_cut_10``) and Hit@10 (``success_10``) from the same dicts,
starting from the dicts and ending with the mean of each metric (pytrec_eval: building the evaluator
from the qrels, evaluating the run, averaging its per-query results; ours: ``ranking_metrics``, which
also returns F1@10 and MRR@10). The best of a few repeats is reported; the means must agree.
Nothing is asserted about speed.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import numpy as np
import pytest
import pytrec_eval

from streambench.protocols.metrics.ranking import ranking_metrics

pytestmark = pytest.mark.benchmark

QUERIES = 100_000
DOCS = 100
K = 10
REPEATS = 3
PAIRS = {
    "P_10": "precision@10",
    "recall_10": "recall@10",
    "map_cut_10": "map@10",
    "ndcg_cut_10": "ndcg@10",
    "success_10": "hit@10",
}


def make_inputs() -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    rng = np.random.default_rng(0)
    docs = [f"doc{i}" for i in range(DOCS)]
    scores = rng.random((QUERIES, DOCS)).tolist()
    rels = rng.choice(3, size=(QUERIES, DOCS), p=[0.8, 0.15, 0.05])
    rels[np.arange(QUERIES), rng.integers(DOCS, size=QUERIES)] = 1
    rel_lists = rels.tolist()
    run = {f"q{i}": dict(zip(docs, scores[i], strict=True)) for i in range(QUERIES)}
    qrels = {f"q{i}": dict(zip(docs, rel_lists[i], strict=True)) for i in range(QUERIES)}
    return run, qrels


def with_pytrec_eval(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    measures = {f"P.{K}", f"recall.{K}", f"map_cut.{K}", f"ndcg_cut.{K}", f"success.{K}"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    per_query = evaluator.evaluate(run)
    return {m: float(np.mean([v[m] for v in per_query.values()])) for m in PAIRS}


def best_time(fn: Callable[[], dict[str, float]]) -> tuple[float, dict[str, float]]:
    best, out = float("inf"), {}
    for _ in range(REPEATS):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def test_ranking_metrics_against_pytrec_eval() -> None:
    run, qrels = make_inputs()
    t_ref, ref = best_time(lambda: with_pytrec_eval(run, qrels))
    t_ours, ours = best_time(lambda: ranking_metrics(run, qrels, K))
    for trec_name, our_name in PAIRS.items():
        assert ours[our_name] == pytest.approx(ref[trec_name], abs=1e-12)
    print(
        f"\nranking metrics, {QUERIES} queries x {DOCS} documents (best of {REPEATS}):"
        f"\n  pytrec_eval      {t_ref:8.3f} s"
        f"\n  ranking_metrics  {t_ours:8.3f} s"
        f"\n  ratio pytrec_eval / ours = {t_ref / t_ours:.2f}"
    )
