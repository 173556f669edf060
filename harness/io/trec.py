"""Reading TREC run and qrels files into the mappings of :mod:`streambench.protocols.metrics.ranking`.

The formats are trec_eval's:

- run: one line per retrieved document, ``qid Q0 docid rank score tag`` (whitespace-separated). The
  second column and the tag are not used; ``rank`` must be an integer but, as in trec_eval, the
  ranking comes from ``score`` (ties broken by document id, see :mod:`streambench.protocols.metrics.ranking`).
- qrels: one line per judgement, ``qid iteration docid relevance`` with an integer relevance
  (``≥ 1`` relevant; 0 or negative: judged not relevant). The iteration column is not used.

Files are UTF-8 (a leading byte-order mark is ignored); lines end in ``\n``, ``\r\n`` or ``\r``; blank
lines are skipped. Any malformed line, and a document listed twice for one query, raises
:class:`TrecFileError` naming the file and the line (DESIGN.md "Conventions": inputs are validated at
the edge).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import TypeVar

from streambench.harness.io.lines import LineFileError, fields_of_lines

__all__ = ["TrecFileError", "read_qrels", "read_run"]

T = TypeVar("T")


class TrecFileError(LineFileError):
    """A TREC run or qrels file could not be read; names the file and, when known, the line."""


def _fields(path: str | os.PathLike[str], expected: int, layout: str) -> Iterator[tuple[int, list[str]]]:
    return fields_of_lines(path, expected, f"({layout})", TrecFileError)


def _int(path: str | os.PathLike[str], line: int, value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise TrecFileError(path, line, f"{what} must be an integer, got {value!r}") from None


def _add(
    table: dict[str, dict[str, tuple[int, T]]],
    path: str | os.PathLike[str],
    line: int,
    qid: str,
    docid: str,
    value: T,
) -> None:
    docs = table.setdefault(qid, {})
    if docid in docs:
        first = docs[docid][0]
        raise TrecFileError(path, line, f"document {docid!r} of query {qid!r} already on line {first}")
    docs[docid] = (line, value)


def read_run(path: str | os.PathLike[str]) -> dict[str, dict[str, float]]:
    """A TREC run file as ``{qid: {docid: score}}`` (``qid Q0 docid rank score tag`` lines).

    ``rank`` must parse as an integer and ``score`` as a real number (not NaN); the file's rank column
    is checked but not used for ordering (trec_eval's convention).
    """
    table: dict[str, dict[str, tuple[int, float]]] = {}
    for n, (qid, _q0, docid, rank, score, _tag) in _fields(path, 6, "qid Q0 docid rank score tag"):
        _int(path, n, rank, "rank")
        try:
            value = float(score)
        except ValueError:
            raise TrecFileError(path, n, f"score must be a number, got {score!r}") from None
        if math.isnan(value):
            raise TrecFileError(path, n, "score is NaN")
        _add(table, path, n, qid, docid, value)
    return {q: {d: v for d, (_, v) in docs.items()} for q, docs in table.items()}


def read_qrels(path: str | os.PathLike[str]) -> dict[str, dict[str, int]]:
    """A TREC qrels file as ``{qid: {docid: relevance}}`` (``qid iteration docid relevance`` lines)."""
    table: dict[str, dict[str, tuple[int, int]]] = {}
    for n, (qid, _iteration, docid, rel) in _fields(path, 4, "qid iteration docid relevance"):
        _add(table, path, n, qid, docid, _int(path, n, rel, "relevance"))
    return {q: {d: v for d, (_, v) in docs.items()} for q, docs in table.items()}
