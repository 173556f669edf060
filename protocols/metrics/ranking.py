"""Ranking metrics: Hit@k, Precision@k, Recall@k, F1@k, MRR, MAP and NDCG (linear or exponential gain).

Definitions: seed 003 (``seeds/003_7b2efcab91cdd443.txt``), "Hit Rate", "Precision", "Recall",
"F1-Score", "MRR", "MAP", "NDCG". Where the seed leaves a choice open, the convention is trec_eval's
(so the per-query numbers equal ``pytrec_eval``'s ``success_k``, ``P_k``, ``recall_k``, ``map_cut_k`` /
``map``, ``ndcg_cut_k``, ``recip_rank`` exactly, ties and near-ties included):

- A run is ``{query: {doc: score}}`` and judgements (qrels) are ``{query: {doc: relevance}}`` with
  string ids and integer relevance. A document is **relevant** if its relevance is ``≥ 1``; documents
  not judged count as not relevant.
- Ranking (``score_precision="float32"``, the default): trec_eval stores run scores as C ``float``, so
  the scores are first rounded to float32 (round to nearest, as C's ``(float)`` cast; beyond the float32
  range they become ``±inf``), then sorted by descending rounded score; **ties are broken by document
  id, descending** (string order, which is ``strcmp``'s byte order of UTF-8), as trec_eval does; the
  order of the dict does not matter. Scores that differ in float64 but are equal in float32 (e.g.
  ``1.000000000001`` and ``1.0``, or the 6-decimal ``64.123457`` and ``64.123456`` of a run file) are
  tied. ``score_precision="float64"`` ranks the float64 values instead: a departure from trec_eval,
  for runs whose scores carry more than float32's 24 bits (the results then differ from trec_eval's
  on such near-ties).
- Queries: every query of the qrels with at least one judgement (of any relevance). As trec_eval, a
  judged query without any relevant document is evaluated and scores 0 on every metric, and counts in
  the mean. A judged query missing from the run (or with an empty ranking) scores 0 and counts in the
  mean too: trec_eval's ``-c`` option (``pytrec_eval`` and plain ``trec_eval`` leave such a query out
  of their per-query results and their mean). Queries of the run without judgements are ignored, as in
  trec_eval; a query of the qrels with an empty ``{}`` of judgements counts as not judged
  (``pytrec_eval`` skips it too; a qrels file cannot express it).
- Precision@k divides by ``k`` even if fewer documents were retrieved; Recall@k and AP divide by all
  relevant documents of the query (judged, retrieved or not); F1@k is computed per query from P@k
  and R@k (0 when both are 0) and then averaged; MRR is ``1/rank`` of the first relevant document
  (0 if none within ``k``).
- NDCG@k: ``DCG = Σ_{i ≤ k} gain(rel_i) / log2(i + 1)``; gain ``"linear"`` = ``rel`` (trec_eval's
  ``ndcg_cut``), ``"exponential"`` = ``2**rel − 1`` (the seed's formula); non-positive relevance has
  gain 0. The ideal DCG ranks all judged documents of the query by relevance, retrieved or not; a
  query without relevant documents (ideal DCG 0) scores 0.

Every metric returns the mean over queries, or ``{query: value}`` with ``per_query=True``. The mean
over zero queries (qrels without any judgement) raises ``ValueError`` (``per_query=True`` then returns
``{}``).

Inputs: scores are converted with numpy's float conversion (NaN rejected; ``±inf`` allowed) and
relevance values must be integral numbers. Implementation: the dicts are read once into flat arrays
(one C-level pass over the run and the qrels), then packed into padded ``[queries, docs]`` blocks of
about ``2**16`` entries, queries grouped by power-of-two list length (padding at most doubles the
block), and sorted row-wise; only the ranks of the relevant documents are kept, and every metric is
a ``bincount`` over them. :func:`ranking_metrics` packs once for all metrics. Sums run in trec_eval's
order (rank by rank; NDCG with the C library's ``log2``), so the values are bitwise trec_eval's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from protocols.metrics.checks import FloatArray, IntArray, check_int

RankingRun = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]
Gain = Literal["linear", "exponential"]
ScorePrecision = Literal["float32", "float64"]
"""``"float32"``: rank on the scores rounded to float32, as trec_eval (default); ``"float64"``: as given."""
PerQuery = dict[str, float]
_CHUNK = 1 << 16  # entries per padded block: the temporaries stay in cache
_Block = tuple[IntArray, IntArray, IntArray, IntArray]
_NO_QUERY = "qrels has no judged query: the mean over queries is undefined"


@dataclass(frozen=True, slots=True)
class _Ranked:
    """Ranks of the retrieved relevant documents, per evaluated query (index into ``qids``)."""

    qids: list[str]
    num_rel: IntArray  # [Q] relevant judged documents
    q: IntArray  # [J] query of each retrieved relevant document
    rank: IntArray  # [J] its 1-based rank (sorted by rank within a query)
    rel: FloatArray  # [J] its relevance (an integer)
    nth: IntArray  # [J] how many relevant documents are ranked at or above it
    levels: FloatArray  # [V] distinct positive relevance values (integers), descending
    level_counts: IntArray  # [Q, V] judged documents of each level


def _mappings(x: object, name: str, what: str) -> list[tuple[str, Mapping[str, object]]]:
    if not isinstance(x, Mapping):
        raise ValueError(f"{name} must be a mapping {{query: {{doc: {what}}}}}, got {type(x).__name__}")
    items = list(x.items())
    for q, docs in items:
        if not isinstance(q, str) or not isinstance(docs, Mapping):
            raise ValueError(f"{name} must map string query ids to {{doc: {what}}} mappings (query {q!r})")
    return items


def _numbers(values: Iterable[object], count: int, name: str) -> FloatArray:
    try:
        return np.fromiter(values, np.float64, count=count)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be real numbers ({exc})") from None


def _pack(run: RankingRun, qrels: Qrels, score_precision: ScorePrecision) -> _Ranked:
    judged = _mappings(qrels, "qrels", "relevance")
    _mappings(run, "run", "score")
    lens = np.fromiter((len(d) for _, d in judged), np.int64, count=len(judged))
    rel_values = chain.from_iterable(d.values() for _, d in judged)
    rels = _numbers(rel_values, int(lens.sum()), "qrels relevance values")  # integers held as float64
    if not np.all(np.isfinite(rels) & (np.floor(rels) == rels)):
        raise ValueError("qrels relevance values must be integers")
    jq = np.repeat(np.arange(len(judged)), lens)
    keep = np.flatnonzero(lens > 0)  # every judged query, with or without a relevant document
    qids = [judged[i][0] for i in keep]
    n_q = len(qids)
    where = np.full(len(judged), -1)
    where[keep] = np.arange(n_q)
    pos = rels >= 1
    levels, lev = np.unique(-rels[pos], return_inverse=True)
    counts = np.bincount(where[jq[pos]] * levels.size + lev, minlength=n_q * levels.size)
    level_counts = counts.reshape(n_q, levels.size)

    empty: Mapping[str, float] = {}
    maps = [run.get(q, empty) for q in qids]
    n_docs = np.fromiter(map(len, maps), np.int64, count=n_q)
    total = int(n_docs.sum())
    neg_scores = _numbers(chain.from_iterable(m.values() for m in maps), total, "run scores")
    if np.isnan(neg_scores).any():
        raise ValueError("run scores contain NaN")
    np.negative(neg_scores, out=neg_scores)  # ascending sort = descending score
    if score_precision == "float32":  # trec_eval's C float (negation commutes with the rounding)
        with np.errstate(over="ignore"):  # beyond the float32 range: ±inf, as the C cast
            neg_scores = neg_scores.astype(np.float32).astype(np.float64)
    qrel_maps = [judged[i][1] for i in keep]
    rel_of_docs = (map(j.get, m, repeat(0)) for j, m in zip(qrel_maps, maps, strict=True))
    doc_rel = np.fromiter(chain.from_iterable(rel_of_docs), np.float64, count=total)
    offsets = np.concatenate(([0], np.cumsum(n_docs)))
    parts: list[_Block] = []
    bucket = np.ceil(np.log2(np.maximum(n_docs, 1))).astype(np.int64)
    for b in np.unique(bucket[n_docs > 0]):  # padded blocks: one power-of-two length, ~_CHUNK entries
        rows_b = np.flatnonzero((bucket == b) & (n_docs > 0))
        width = int(n_docs[rows_b].max())
        step = max(1, _CHUNK // width)
        for c in range(0, rows_b.size, step):
            parts.append(_rank_block(rows_b[c : c + step], width, neg_scores, doc_rel, n_docs, offsets, maps))
    q, rank, entry, nth = (
        np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.int64) for i in range(4)
    )
    return _Ranked(qids, level_counts.sum(axis=1), q, rank, doc_rel[entry], nth, -levels, level_counts)


def _rank_block(
    rows: IntArray,
    width: int,
    neg_scores: FloatArray,
    doc_rel: FloatArray,
    n_docs: IntArray,
    offsets: IntArray,
    maps: list[Mapping[str, float]],
) -> _Block:
    """Rank the run of each query of ``rows`` (padded to ``width``); return (query, rank, entry, nth)
    of the relevant documents, ``entry`` indexing the flat run arrays."""
    col = np.arange(width)
    valid = col[None, :] < n_docs[rows][:, None]
    entry = np.where(valid, offsets[rows][:, None] + col[None, :], 0)
    key = np.where(valid, neg_scores[entry], np.nan)  # NaN pads sort last
    order = np.argsort(key, axis=1)
    ks = np.take_along_axis(key, order, axis=1)
    tied = np.flatnonzero(np.any(ks[:, 1:] == ks[:, :-1], axis=1))
    if tied.size:  # re-sort rows with tied scores by descending document id
        id_list = list(chain.from_iterable(maps[i].keys() for i in rows[tied]))
        if not all(isinstance(d, str) for d in id_list):
            raise ValueError("run document ids must be strings")
        ids = np.array(id_list)
        dkey = np.zeros((tied.size, width), dtype=np.int64)
        dkey[valid[tied]] = -np.unique(ids, return_inverse=True)[1].ravel()
        order[tied] = np.lexsort((dkey, key[tied]), axis=1)
    ranked = np.take_along_axis(entry, order, axis=1)  # pads (sorted last) fall outside ``valid``
    r, j = np.nonzero(valid & (doc_rel[ranked] >= 1))
    nth = np.arange(r.size) - np.searchsorted(r, r, side="left") + 1
    return rows[r], j + 1, ranked[r, j], nth


def _sum(p: _Ranked, sel: np.ndarray, weights: FloatArray | None = None) -> FloatArray:
    w = None if weights is None else weights[sel]
    return np.bincount(p.q[sel], weights=w, minlength=len(p.qids)).astype(np.float64)


def _ratio(num: FloatArray, den: npt.NDArray[np.float64] | IntArray) -> FloatArray:
    """``num / den``, 0 where ``den`` is 0 (a query without relevant documents: trec_eval's 0)."""
    return np.divide(num, den, out=np.zeros(num.shape), where=den > 0)


def _gain(rel: FloatArray, gain: Gain) -> FloatArray:
    r = np.maximum(rel, 0.0)
    return r if gain == "linear" else np.exp2(r) - 1.0


def _values(p: _Ranked, metric: str, k: int | None, gain: Gain = "linear") -> FloatArray:
    """Per-query values ``[Q]`` of one metric (``k=None``: no cut-off)."""
    if not p.qids:
        return np.zeros(0)
    cut = p.rank <= k if k is not None else np.ones(p.rank.size, dtype=np.bool_)
    hits = _sum(p, cut)
    if metric == "hit":
        return (hits > 0).astype(np.float64)
    if metric in ("precision", "recall", "f1"):
        prec, rec = hits / float(k or 1), _ratio(hits, p.num_rel)
        if metric != "f1":
            return prec if metric == "precision" else rec
        denom = prec + rec
        return np.divide(2 * prec * rec, denom, out=np.zeros_like(denom), where=denom > 0)
    if metric == "mrr":
        return _sum(p, cut & (p.nth == 1), 1.0 / p.rank)
    if metric == "map":
        return _ratio(_sum(p, cut, p.nth / p.rank), p.num_rel)
    # ndcg, summed as trec_eval's ndcg_cut: gain / log2(rank + 1), rank by rank, then DCG / ideal DCG
    n_q = len(p.qids)
    per_query = p.level_counts.sum(axis=1)  # relevant judged documents
    depth = int(per_query.max()) if k is None else min(int(k), int(per_query.max()))
    log2 = _log2_ranks(max(depth, int(p.rank[cut].max(initial=0))))
    at = np.flatnonzero(cut)
    dcg = np.bincount(p.q[at], weights=_gain(p.rel[at], gain) / log2[p.rank[at] - 1], minlength=n_q)
    # the ideal ranking: each query's levels (descending) repeated by their counts, its top ``depth``
    ideal_gain = np.repeat(np.tile(_gain(p.levels, gain), n_q), p.level_counts.ravel())
    q_of = np.repeat(np.arange(n_q), per_query)
    pos = np.arange(q_of.size) - np.repeat(np.cumsum(per_query) - per_query, per_query)  # 0-based
    top = pos < depth
    ideal = np.bincount(q_of[top], weights=ideal_gain[top] / log2[pos[top]], minlength=n_q)
    return _ratio(np.asarray(dcg, dtype=np.float64), ideal)


def _log2_ranks(n: int) -> FloatArray:
    """``log2(rank + 1)`` for ranks ``1 .. n``, from the C library's ``log2`` (``math.log2``) as in
    trec_eval: numpy's vectorised ``log2`` differs from it in the last bit for some arguments (1621,
    3242, ...), which would break the bitwise equality with trec_eval."""
    return np.fromiter(map(math.log2, range(2, n + 2)), np.float64, count=n)


def _report(p: _Ranked, values: FloatArray, per_query: bool) -> float | PerQuery:
    if per_query:
        return dict(zip(p.qids, values.tolist(), strict=True))
    if not p.qids:
        raise ValueError(_NO_QUERY)
    return float(values.mean())


def _check_options(gain: object, score_precision: object) -> None:
    if gain not in ("linear", "exponential"):
        raise ValueError(f"gain must be 'linear' or 'exponential', got {gain!r}")
    if score_precision not in ("float32", "float64"):
        raise ValueError(f"score_precision must be 'float32' or 'float64', got {score_precision!r}")


def _metric(
    run: RankingRun,
    qrels: Qrels,
    metric: str,
    k: int | None,
    per_query: bool,
    score_precision: ScorePrecision,
    gain: Gain = "linear",
) -> float | PerQuery:
    kk = None if k is None else check_int(k, "k", minimum=1)
    _check_options(gain, score_precision)
    p = _pack(run, qrels, score_precision)
    return _report(p, _values(p, metric, kk, gain), per_query)


# Every metric takes ``score_precision`` (keyword): ``"float32"`` (default) ranks as trec_eval, on the
# scores rounded to float32; ``"float64"`` is the documented departure (module docstring, "Ranking").


@overload
def hit_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    *,
    per_query: Literal[False] = ...,
    score_precision: ScorePrecision = ...,
) -> float: ...
@overload
def hit_at_k(
    run: RankingRun, qrels: Qrels, k: int, *, per_query: Literal[True], score_precision: ScorePrecision = ...
) -> PerQuery: ...
def hit_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    *,
    per_query: bool = False,
    score_precision: ScorePrecision = "float32",
) -> float | PerQuery:
    """Hit@k (seed 003, "Hit Rate"): 1 if a relevant document is in the top ``k`` (trec_eval
    ``success_k``)."""
    return _metric(run, qrels, "hit", k, per_query, score_precision)


@overload
def precision_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    *,
    per_query: Literal[False] = ...,
    score_precision: ScorePrecision = ...,
) -> float: ...
@overload
def precision_at_k(
    run: RankingRun, qrels: Qrels, k: int, *, per_query: Literal[True], score_precision: ScorePrecision = ...
) -> PerQuery: ...
def precision_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    *,
    per_query: bool = False,
    score_precision: ScorePrecision = "float32",
) -> float | PerQuery:
    """Precision@k (seed 003): relevant documents in the top ``k``, divided by ``k`` (trec_eval ``P_k``)."""
    return _metric(run, qrels, "precision", k, per_query, score_precision)


@overload
def recall_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    *,
    per_query: Literal[False] = ...,
    score_precision: ScorePrecision = ...,
) -> float: ...
@overload
def recall_at_k(
    run: RankingRun, qrels: Qrels, k: int, *, per_query: Literal[True], score_precision: ScorePrecision = ...
) -> PerQuery: ...
def recall_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    *,
    per_query: bool = False,
    score_precision: ScorePrecision = "float32",
) -> float | PerQuery:
    """Recall@k (seed 003): relevant documents in the top ``k`` / all relevant (trec_eval ``recall_k``;
    0 for a query without relevant documents)."""
    return _metric(run, qrels, "recall", k, per_query, score_precision)


@overload
def f1_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    *,
    per_query: Literal[False] = ...,
    score_precision: ScorePrecision = ...,
) -> float: ...
@overload
def f1_at_k(
    run: RankingRun, qrels: Qrels, k: int, *, per_query: Literal[True], score_precision: ScorePrecision = ...
) -> PerQuery: ...
def f1_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    *,
    per_query: bool = False,
    score_precision: ScorePrecision = "float32",
) -> float | PerQuery:
    """F1@k (seed 003, "F1-Score"): ``2PR/(P+R)`` of each query's P@k and R@k (0 if both are 0), then
    the mean over queries (not the F1 of the mean P and R)."""
    return _metric(run, qrels, "f1", k, per_query, score_precision)


@overload
def mrr(
    run: RankingRun,
    qrels: Qrels,
    k: int | None = ...,
    *,
    per_query: Literal[False] = ...,
    score_precision: ScorePrecision = ...,
) -> float: ...
@overload
def mrr(
    run: RankingRun,
    qrels: Qrels,
    k: int | None = ...,
    *,
    per_query: Literal[True],
    score_precision: ScorePrecision = ...,
) -> PerQuery: ...
def mrr(
    run: RankingRun,
    qrels: Qrels,
    k: int | None = None,
    *,
    per_query: bool = False,
    score_precision: ScorePrecision = "float32",
) -> float | PerQuery:
    """MRR (seed 003): ``1/rank`` of the first relevant document, 0 if there is none within ``k``
    (``k=None``: the whole ranking, trec_eval ``recip_rank``)."""
    return _metric(run, qrels, "mrr", k, per_query, score_precision)


@overload
def map_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int | None = ...,
    *,
    per_query: Literal[False] = ...,
    score_precision: ScorePrecision = ...,
) -> float: ...
@overload
def map_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int | None = ...,
    *,
    per_query: Literal[True],
    score_precision: ScorePrecision = ...,
) -> PerQuery: ...
def map_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int | None = None,
    *,
    per_query: bool = False,
    score_precision: ScorePrecision = "float32",
) -> float | PerQuery:
    """MAP (seed 003): ``AP = Σ_{n ≤ k} P@n · rel(n) / (all relevant documents)``, averaged over queries
    (trec_eval ``map_cut_k``; ``k=None``: the whole ranking, trec_eval ``map``; AP 0 for a query without
    relevant documents)."""
    return _metric(run, qrels, "map", k, per_query, score_precision)


@overload
def ndcg_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    gain: Gain = ...,
    *,
    per_query: Literal[False] = ...,
    score_precision: ScorePrecision = ...,
) -> float: ...
@overload
def ndcg_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    gain: Gain = ...,
    *,
    per_query: Literal[True],
    score_precision: ScorePrecision = ...,
) -> PerQuery: ...
def ndcg_at_k(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    gain: Gain = "linear",
    *,
    per_query: bool = False,
    score_precision: ScorePrecision = "float32",
) -> float | PerQuery:
    """NDCG@k (seed 003): ``DCG@k / IDCG@k`` with the ``log2(i + 1)`` discount. ``gain="linear"`` uses
    the relevance itself (trec_eval ``ndcg_cut_k``, the default); ``"exponential"`` uses ``2**rel − 1``
    (the seed's formula). The ideal ranking comes from all judgements of the query (IDCG 0: NDCG 0)."""
    return _metric(run, qrels, "ndcg", k, per_query, score_precision, gain)


def ranking_metrics(
    run: RankingRun,
    qrels: Qrels,
    k: int,
    gain: Gain = "linear",
    *,
    score_precision: ScorePrecision = "float32",
) -> dict[str, float]:
    """All of the above at cut-off ``k`` from one packing of the run: the means, keyed ``"hit@k"``,
    ``"precision@k"``, ``"recall@k"``, ``"f1@k"``, ``"mrr@k"``, ``"map@k"``, ``"ndcg@k"`` (ranking on
    float32 scores as trec_eval unless ``score_precision="float64"``, see the module docstring)."""
    kk = check_int(k, "k", minimum=1)
    _check_options(gain, score_precision)
    p = _pack(run, qrels, score_precision)
    if not p.qids:
        raise ValueError(_NO_QUERY)
    names = ("hit", "precision", "recall", "f1", "mrr", "map", "ndcg")
    return {f"{m}@{kk}": float(_values(p, m, kk, gain).mean()) for m in names}
