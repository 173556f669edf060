"""Ranking metrics: Hit@k, Precision@k, Recall@k, F1@k, MRR, MAP and NDCG (linear or exponential gain).

Definitions: seed 003 (``seeds/003_7b2efcab91cdd443.txt``), "Hit Rate", "Precision", "Recall",
"F1-Score", "MRR", "MAP", "NDCG". Where the seed leaves a choice open, the convention is trec_eval's
(so the per-query numbers equal ``pytrec_eval``'s ``success_k``, ``P_k``, ``recall_k``, ``map_cut_k`` /
``map``, ``ndcg_cut_k``, ``recip_rank`` exactly, ties and near-ties included):

- A run is ``{query: {doc: score}}`` and judgements (qrels) are ``{query: {doc: relevance}}`` (types:
  "Inputs" below). A document is **relevant** if its relevance is ``≥ 1``; documents not judged count
  as not relevant.
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
  query without relevant documents (ideal DCG 0) scores 0. Exponential gains are computed for any
  relevance, not refused: in units of the query's top gain ``2**top`` (exact, a power of two), so
  ``2**1024`` and beyond do not overflow, and below that the values are bitwise the plain formula's;
  a document more than ~1000 levels below the query's top adds less than ``2**-1000`` of it and is
  counted with subnormal precision or as 0.

Every metric returns the mean over queries, or ``{query: value}`` with ``per_query=True``. The mean
over zero queries (qrels without any judgement) raises ``ValueError`` (``per_query=True`` then returns
``{}``).

Inputs, one rule, checked on every entry of both mappings before anything is ranked (whatever the
scores, tied or not, and whichever queries are evaluated); a refusal is a ``ValueError`` naming the
query, the document and the value:

- query and document ids are ``str``, in the run and in the qrels;
- a score is a Python ``int`` or ``float`` or a numpy integer or floating scalar, not NaN (``±inf`` is
  allowed); a relevance is a Python ``int`` or a numpy integer scalar within int64 (trec_eval's C
  ``long``; gains are float64, as trec_eval's doubles, so beyond ``2**53`` neighbours may be equal);
- ``bool`` (Python's or numpy's, as in every streambench metric), strings (``'0.5'``, ``'1'``),
  ``None``, other types and float relevance (even ``1.0``) are refused. pytrec_eval also refuses
  strings and float relevance; it takes ``bool`` as 0 / 1 and refuses numpy scalars.

Differences from other libraries: the values are trec_eval's. ranx leaves tied documents in the order
its unstable sort gives (neither the dict's nor the ids'): ``{"q": {"a": 0.5, "b": 0.5, "c": 0.5}}``
against ``{"q": {"a": 1, "b": 0, "c": 0}}`` gives NDCG@3 0.5 here and in trec_eval (c, b, a) and 1.0
in ranx 0.3 (a first); 100 queries of 20 equally scored documents: mean NDCG@10 0.4048 here, 0.4294 in
ranx. Break ties in the scores where their order matters.

Implementation (reading and ranking: :mod:`streambench.protocols.metrics.ranking_input`): the dicts are
checked and read into flat arrays in a few C-level passes (the types, then the values), then packed into
padded ``[queries, docs]`` blocks of about ``2**16`` entries, queries grouped by power-of-two list length
(padding at most doubles the block), and sorted row-wise; only the ranks of the relevant documents
are kept, and every metric is a ``bincount`` over them. :func:`ranking_metrics` packs once for all
metrics. Sums run in trec_eval's order (rank by rank; NDCG with the C library's ``log2``), so the
values are bitwise trec_eval's.
"""

from __future__ import annotations

import math
from typing import Literal, overload

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import FloatArray, IntArray, check_int
from streambench.protocols.metrics.ranking_input import Qrels, Ranked, RankingRun, ScorePrecision, pack

Gain = Literal["linear", "exponential"]
PerQuery = dict[str, float]
_NO_QUERY = "qrels has no judged query: the mean over queries is undefined"


def _sum(p: Ranked, sel: np.ndarray, weights: FloatArray | None = None) -> FloatArray:
    w = None if weights is None else weights[sel]
    return np.bincount(p.q[sel], weights=w, minlength=len(p.qids)).astype(np.float64)


def _ratio(num: FloatArray, den: npt.NDArray[np.float64] | IntArray) -> FloatArray:
    """``num / den``, 0 where ``den`` is 0 (a query without relevant documents: trec_eval's 0)."""
    return np.divide(num, den, out=np.zeros(num.shape), where=den > 0)


def _gains(p: Ranked, at: IntArray, gain: Gain) -> tuple[FloatArray, FloatArray]:
    """The gains of the retrieved relevant documents ``at`` and of each query's levels ``[Q, V]``.

    Exponential gains are in units of the query's top gain: ``2**(rel − top) − 2**−top`` is
    ``(2**rel − 1) / 2**top``, ``top`` the query's highest relevance, so nothing overflows (``2**1024``
    would) and DCG / IDCG is unchanged. Dividing by a power of two is exact: the values are bitwise
    those of the plain formula wherever it does not overflow (for relevance up to about 1000)."""
    if gain == "linear":
        return p.rel[at], np.broadcast_to(p.levels, p.level_counts.shape)
    has = p.level_counts > 0
    top = p.levels[np.argmax(has, axis=1)] if p.levels.size else np.zeros(len(p.qids))
    top = np.where(has.any(axis=1), top, 0.0)  # a query without relevant documents has no gain
    t = top[p.q[at]]
    above = np.minimum(p.levels - top[:, None], 0.0)  # > 0 only for levels the query has none of
    with np.errstate(under="ignore"):  # gains below 2**-1074 of the top one: 0
        return np.exp2(p.rel[at] - t) - np.exp2(-t), np.exp2(above) - np.exp2(-top)[:, None]


def _values(p: Ranked, metric: str, k: int | None, gain: Gain = "linear") -> FloatArray:
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
    doc_gain, level_gain = _gains(p, at, gain)
    dcg = np.bincount(p.q[at], weights=doc_gain / log2[p.rank[at] - 1], minlength=n_q)
    # the ideal ranking: each query's levels (descending) repeated by their counts, its top ``depth``
    ideal_gain = np.repeat(level_gain.ravel(), p.level_counts.ravel())
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


def _report(p: Ranked, values: FloatArray, per_query: bool) -> float | PerQuery:
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
    p = pack(run, qrels, score_precision)
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
    (the seed's formula), computed for any relevance (no overflow at ``2**1024``: in units of the query's
    top gain). The ideal ranking comes from all judgements of the query (IDCG 0: NDCG 0). Tied scores
    are ordered as trec_eval orders them, not as ranx does (module docstring, "Differences from other
    libraries")."""
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
    p = pack(run, qrels, score_precision)
    if not p.qids:
        raise ValueError(_NO_QUERY)
    names = ("hit", "precision", "recall", "f1", "mrr", "map", "ndcg")
    return {f"{m}@{kk}": float(_values(p, m, kk, gain).mean()) for m in names}
