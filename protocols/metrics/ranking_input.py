"""Reading a ranking run and its judgements for :mod:`streambench.protocols.metrics.ranking`: the input rule,
the trec_eval ranking (float32 scores, ties by descending document id) and the packing into flat arrays.

Internal to the ranking metrics, whose docstring states the conventions ("Inputs", "Ranking"). The
input rule is checked on every entry of both mappings before anything is ranked: ids are ``str``; a
score a Python or numpy ``int`` or ``float`` (not NaN); a relevance a Python or numpy ``int`` within
int64; ``bool``, strings and float relevance refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import chain, repeat
from typing import Literal

import numpy as np

from streambench.protocols.metrics.checks import FloatArray, IntArray, scalar_types_outside

RankingRun = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]
ScorePrecision = Literal["float32", "float64"]
"""``"float32"``: rank on the scores rounded to float32, as trec_eval (default); ``"float64"``: as given."""
_CHUNK = 1 << 16  # entries per padded block: the temporaries stay in cache
_Block = tuple[IntArray, IntArray, IntArray, IntArray]
_REAL = (int, float, np.integer, np.floating)
_INTEGER = (int, np.integer)
_SCORE = "real numbers (Python or numpy int or float; not bool or str)"
_RELEVANCE = "integers (Python or numpy int; not bool, float or str)"


@dataclass(frozen=True, slots=True)
class Ranked:
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


def _check_ids(items: list[tuple[str, Mapping[str, object]]], name: str) -> None:
    """Every document id is a ``str``: ``str.join`` refuses anything else (one C-level pass per query)."""
    for q, docs in items:
        try:
            "".join(docs)
        except TypeError:
            bad = next(d for d in docs if not isinstance(d, str))
            raise ValueError(
                f"{name} document ids must be strings: query {q!r} has {bad!r} ({type(bad).__name__})"
            ) from None


def _check_values(
    items: list[tuple[str, Mapping[str, object]]], allowed: tuple[type, ...], name: str, what: str
) -> None:
    """Every value is of an ``allowed`` type and not a ``bool`` (one pass over the types only)."""
    bad = scalar_types_outside(chain.from_iterable(d.values() for _, d in items), allowed)
    if bad:
        q, doc, value = next((q, d, v) for q, docs in items for d, v in docs.items() if type(v) in bad)
        raise ValueError(
            f"{name} must be {what}: query {q!r}, document {doc!r} has {value!r} ({type(value).__name__})"
        )


def _floats(values: Iterable[object], count: int, name: str) -> FloatArray:
    try:
        return np.fromiter(values, np.float64, count=count)
    except OverflowError:  # a Python int beyond the float range
        raise ValueError(f"{name} must lie within the float64 range") from None


def _read_qrels(judged: list[tuple[str, Mapping[str, object]]], count: int) -> FloatArray:
    """The relevance values of every judgement, in order (integers held as float64)."""
    _check_ids(judged, "qrels")
    _check_values(judged, _INTEGER, "qrels relevance values", _RELEVANCE)
    try:
        ints = np.fromiter(chain.from_iterable(d.values() for _, d in judged), np.int64, count=count)
    except OverflowError:
        raise ValueError("qrels relevance values must lie within the int64 range (C long)") from None
    return ints.astype(np.float64)


def _check_run(items: list[tuple[str, Mapping[str, object]]], evaluated: set[str]) -> None:
    """The rule on the whole run; NaN only on the queries not evaluated (the others are read later)."""
    _check_ids(items, "run")
    _check_values(items, _REAL, "run scores", _SCORE)
    others = [d for q, d in items if q not in evaluated]
    scores = _floats(chain.from_iterable(d.values() for d in others), sum(map(len, others)), "run scores")
    if np.isnan(scores).any():
        raise ValueError("run scores contain NaN")


def pack(run: RankingRun, qrels: Qrels, score_precision: ScorePrecision) -> Ranked:
    """Check both inputs (module docstring), rank the run of every judged query, keep the relevant."""
    judged = _mappings(qrels, "qrels", "relevance")
    run_items = _mappings(run, "run", "score")
    lens = np.fromiter((len(d) for _, d in judged), np.int64, count=len(judged))
    rels = _read_qrels(judged, int(lens.sum()))
    jq = np.repeat(np.arange(len(judged)), lens)
    keep = np.flatnonzero(lens > 0)  # every judged query, with or without a relevant document
    qids = [judged[i][0] for i in keep]
    _check_run(run_items, set(qids))
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
    neg_scores = _floats(chain.from_iterable(m.values() for m in maps), total, "run scores")
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
    return Ranked(qids, level_counts.sum(axis=1), q, rank, doc_rel[entry], nth, -levels, level_counts)


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
    if tied.size:  # re-sort rows with tied scores by descending document id (ids: checked strings)
        ids = np.array(list(chain.from_iterable(maps[i].keys() for i in rows[tied])))
        dkey = np.zeros((tied.size, width), dtype=np.int64)
        dkey[valid[tied]] = -np.unique(ids, return_inverse=True)[1].ravel()
        order[tied] = np.lexsort((dkey, key[tied]), axis=1)
    ranked = np.take_along_axis(entry, order, axis=1)  # pads (sorted last) fall outside ``valid``
    r, j = np.nonzero(valid & (doc_rel[ranked] >= 1))
    nth = np.arange(r.size) - np.searchsorted(r, r, side="left") + 1
    return rows[r], j + 1, ranked[r, j], nth
