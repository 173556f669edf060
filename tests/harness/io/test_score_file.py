"""Score files in seed 002's format ("File Format for Saved Scores": ``- - real 0.85``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from streambench.harness.io.score_file import ScoreFileError, read_score_file, write_score_file

SEED_EXAMPLE = "- - real 0.85\n- - fake 0.23\n- - real 0.92\n- - fake 0.15\n"


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_reads_the_seed_example(tmp_path: Path) -> None:
    labels, scores = read_score_file(_write(tmp_path / "scores.txt", SEED_EXAMPLE))
    assert labels.dtype == np.int8 and scores.dtype == np.float64
    np.testing.assert_array_equal(labels, [1, 0, 1, 0])
    np.testing.assert_array_equal(scores, [0.85, 0.23, 0.92, 0.15])


def test_writes_the_seed_layout(tmp_path: Path) -> None:
    path = tmp_path / "scores.txt"
    write_score_file(path, np.array([1, 0, 1, 0]), np.array([0.85, 0.23, 0.92, 0.15]))
    assert path.read_bytes() == SEED_EXAMPLE.encode()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_round_trip_is_exact(tmp_path: Path, dtype: type) -> None:
    rng = np.random.default_rng(0)
    n = 1000
    labels = rng.integers(0, 2, n)
    scores = (rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, n)).astype(dtype)
    info = np.finfo(dtype)
    scores[:7] = [0.0, -0.0, info.smallest_subnormal, -info.max, info.max, 0.1, 5]
    path = tmp_path / "scores.txt"
    write_score_file(path, labels.astype(bool), scores)
    got_labels, got_scores = read_score_file(path)
    np.testing.assert_array_equal(got_labels, labels)
    np.testing.assert_array_equal(got_scores, scores.astype(np.float64))
    assert np.signbit(got_scores[1])  # -0.0 survives


def test_whitespace_and_blank_lines(tmp_path: Path) -> None:
    text = "\n  - - real 0.85  \n\n-\t-\treal\t1e-3\r\n   \n-   -   fake   -2.5\n\n"
    labels, scores = read_score_file(_write(tmp_path / "s.txt", text))
    np.testing.assert_array_equal(labels, [1, 1, 0])
    np.testing.assert_array_equal(scores, [0.85, 1e-3, -2.5])


def test_placeholder_fields_are_not_interpreted(tmp_path: Path) -> None:
    labels, scores = read_score_file(_write(tmp_path / "s.txt", "spk1 utt7 fake 0.5\n"))
    assert labels.tolist() == [0] and scores.tolist() == [0.5]


def test_no_trailing_newline(tmp_path: Path) -> None:
    labels, _ = read_score_file(_write(tmp_path / "s.txt", "- - real 0.85\n- - fake 0.1"))
    assert labels.tolist() == [1, 0]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("- real 0.5", r"expected 4 fields '- - real\|fake SCORE', got 3"),
        ("- - real 0.5 extra", "expected 4 fields .*, got 5"),
        ("- - - real 0.5", "expected 4 fields .*, got 5"),
        ("# a comment", r"expected 4 fields .*, got 3 \(comments are not part of the format\)"),
        ("- - bonafide 0.5", "unknown label 'bonafide', expected 'real' or 'fake'"),
        ("- - Real 0.5", "unknown label 'Real'"),
        ("- - real abc", "score 'abc' is not a number"),
        ("- - real 0.5.1", "score '0.5.1' is not a number"),
        ("- - real 1_000", "score '1_000' is not a number"),
        ("- - fake nan", r"score is NaN \('nan'\)"),
        ("- - fake NaN", r"score is NaN \('NaN'\)"),
        ("- - real inf", r"score is infinite \('inf'\)"),
        ("- - real -Infinity", r"score is infinite \('-Infinity'\)"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    path = _write(tmp_path / "bad.txt", f"- - real 0.9\n\n- - fake 0.1\n{line}\n- - real 0.3\n")
    with pytest.raises(ScoreFileError, match=rf"bad\.txt, line 4: {problem}") as info:
        read_score_file(path)
    assert isinstance(info.value, ValueError)
    assert info.value.path == path and info.value.line == 4


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n"])
def test_file_without_samples(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path / "empty.txt", text)
    with pytest.raises(ScoreFileError, match=r"empty\.txt: no samples") as info:
        read_score_file(path)
    assert info.value.line is None


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"- - real 0.5\n- - fak\xe9 0.1\n")
    with pytest.raises(ScoreFileError, match=r"latin1\.txt, line 2: not UTF-8 text"):
        read_score_file(path)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ScoreFileError, match=r"nope\.txt: cannot be read \(No such file"):
        read_score_file(tmp_path / "nope.txt")


@pytest.mark.parametrize(
    ("labels", "scores", "message"),
    [
        ([], [], "labels is empty: there are no samples"),
        ([1, 2], [0.1, 0.2], r"labels must contain only 0 \(fake\) and 1 \(real\); found 2 at index 1"),
        ([1, 0], [0.1, np.nan], "scores contains NaN at index 1"),
        ([1, 0], [np.inf, 0.2], "scores contains Inf at index 0"),
        ([1, 0, 1], [0.1, 0.2], r"scores has 2 entries, expected one per label \(3\)"),
        ([[1, 0]], [[0.1, 0.2]], "must be 1-D arrays"),
        ([1, 0], ["a", "b"], "scores must be real numbers"),
    ],
)
def test_write_refuses_invalid_input(tmp_path: Path, labels: list, scores: list, message: str) -> None:
    path = tmp_path / "out.txt"
    with pytest.raises(ValueError, match=message):
        write_score_file(path, labels, scores)
    assert not path.exists()


def test_write_replaces_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "scores.txt"
    write_score_file(path, [1, 0], [0.9, 0.1])
    before = path.read_bytes()

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        write_score_file(path, [0, 0, 1], [0.3, 0.2, 0.1])
    assert path.read_bytes() == before  # the old file is untouched ...
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.txt"]  # ... and no temp file is left
    monkeypatch.undo()
    write_score_file(path, [0, 0, 1], [0.3, 0.2, 0.1])
    assert path.read_text() == "- - fake 0.3\n- - fake 0.2\n- - real 0.1\n"
