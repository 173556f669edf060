"""Reading TREC run and qrels files (harness/io/trec.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pytrec_eval

from streambench.harness.io.trec import TrecFileError, read_qrels, read_run
from streambench.protocols.metrics.ranking import map_at_k, ndcg_at_k

RUN_TEXT = """q1 Q0 d1 1 2.5 sys
q1 Q0 d2 2 1.25 sys

q1 Q0 d3 3 -0.5 sys
q2\tQ0\td1\t1\t7\tsys
"""
QRELS_TEXT = """q1 0 d1 1
q1 0 d3 0
q1 0 d9 2
q2 0 d1 -1
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def test_read_run_and_qrels(tmp_path: Path) -> None:
    run = read_run(write(tmp_path, "run.txt", RUN_TEXT))
    qrels = read_qrels(write(tmp_path, "qrels.txt", QRELS_TEXT))
    assert run == {"q1": {"d1": 2.5, "d2": 1.25, "d3": -0.5}, "q2": {"d1": 7.0}}
    assert qrels == {"q1": {"d1": 1, "d3": 0, "d9": 2}, "q2": {"d1": -1}}
    assert all(isinstance(v, float) for docs in run.values() for v in docs.values())
    assert all(isinstance(v, int) for docs in qrels.values() for v in docs.values())
    # q2 has no relevant document: evaluated, and scores 0 (trec_eval); q1: d1 relevant at rank 1, d9 never
    # retrieved, AP 0.5
    assert map_at_k(run, qrels) == 0.25


def test_same_as_pytrec_eval_parsers_and_scores(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    run_lines, qrel_lines = [], []
    for q in range(20):
        for rank, d in enumerate(rng.choice(100, 30, replace=False), start=1):
            run_lines.append(f"q{q} Q0 doc{d} {rank} {rng.normal():.6f} tag")
        for d in rng.choice(100, 25, replace=False):
            qrel_lines.append(f"q{q} 0 doc{d} {rng.integers(0, 3)}")
        qrel_lines.append(f"q{q} 0 doc100 1")  # one relevant document per query at least
    run_path = write(tmp_path, "run", "\n".join(run_lines) + "\n")
    qrels_path = write(tmp_path, "qrels", "\n".join(qrel_lines) + "\n")
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    with open(run_path) as f:
        assert run == pytrec_eval.parse_run(f)
    with open(qrels_path) as f:
        assert qrels == pytrec_eval.parse_qrel(f)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    ours = ndcg_at_k(run, qrels, 10, per_query=True)
    np.testing.assert_allclose([ours[q] for q in ref], [ref[q]["ndcg_cut_10"] for q in ref], atol=1e-12)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q1 Q0 d1 1 0.5 sys\nq1 Q0 d2 2 0.4\n", 2, "expected 6 fields"),
        ("q1 Q0 d1 one 0.5 sys\n", 1, "rank must be an integer"),
        ("q1 Q0 d1 1 high sys\n", 1, "score must be a number"),
        ("\nq1 Q0 d1 1 nan sys\n", 2, "score is NaN"),
        ("q1 Q0 d1 1 0.5 s\nq2 Q0 d1 1 0.5 s\nq1 Q0 d1 2 0.4 s\n", 3, "'d1' of query 'q1' already on line 1"),
        (b"q1 Q0 d1 1 0.5 sys\nq1 Q0 d\xff 2 0.4 sys\n", 2, "not UTF-8 text"),
    ],
)
def test_malformed_run_names_file_and_line(
    tmp_path: Path, text: str | bytes, line: int, message: str
) -> None:
    path = write(tmp_path, "bad.run", text)
    with pytest.raises(TrecFileError, match=message) as info:
        read_run(path)
    assert info.value.line == line and info.value.path == path
    assert str(info.value).startswith(f"{path}, line {line}: ")
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 fields"),
        ("q1 0 d1 1.5\n", 1, "relevance must be an integer"),
        ("q1 0 d1 1\nq1 0 d1 0\n", 2, "already on line 1"),
        ("q1 Q0 d1 1 0.5 sys\n", 1, "expected 4 fields"),  # a run given as qrels
    ],
)
def test_malformed_qrels_names_file_and_line(tmp_path: Path, text: str, line: int, message: str) -> None:
    path = write(tmp_path, "bad.qrels", text)
    with pytest.raises(TrecFileError, match=message) as info:
        read_qrels(path)
    assert info.value.line == line
    assert str(path) in str(info.value)


def test_missing_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(TrecFileError, match="cannot be read") as info:
        read_run(tmp_path / "nope.run")
    assert info.value.line is None and "nope.run" in str(info.value)
    assert read_qrels(write(tmp_path, "empty", "\n  \n")) == {}
