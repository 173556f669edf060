"""Bad input everywhere (issue 7): generated and corrupted input thrown at every line-file reader
(harness/io/lines.py and the readers built on it).

Each reader either returns what the file says or raises its documented error type — never another
exception — and the error names the file and the line at fault. Valid files built from generated
values must read back to those values.

Readers covered, one parametrised entry each (:data:`LINE_FORMATS`): score files (seed 002), TREC runs
and qrels, calibration files. Label files (Audacity labels) and annotation files (AVE / LLP) are
fuzzed in tests/harness/io/test_labels.py; each could be one more :class:`LineFormat` entry (its
reader, its error, a strategy for valid records and what the reader must return for them), and every
property below would run on it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streambench.harness.io.calibration_file import CalibrationFileError, read_calibration_file
from streambench.harness.io.lines import LineFileError
from streambench.harness.io.score_file import ScoreFileError, read_score_file, write_score_file
from streambench.harness.io.trec import TrecFileError, read_qrels, read_run
from tests.harness.fuzzing import FUZZ, scratch


def editor_lines(data: bytes) -> int:
    """How many lines an editor shows for ``data`` (breaks at \\n, \\r\\n and \\r)."""
    return len(re.split(rb"\r\n|\r|\n", data))


# ---------------------------------------------------------------------------------------------------
# line files

# a field: no whitespace (str.split() separates at any of it), no byte-order mark (stripped at the start
# of a file), no surrogates (not encodable)
TOKEN = st.text(
    st.characters(
        codec="utf-8", exclude_categories=("Cc", "Cs", "Zs", "Zl", "Zp"), exclude_characters="\ufeff"
    )
    | st.sampled_from("\x00\x01\x7f#"),
    min_size=1,
    max_size=6,
)


FINITE = st.floats(allow_nan=False, allow_infinity=False)


FLOAT_TEXT = st.one_of(
    FINITE.map(repr), st.integers(-(10**20), 10**20).map(str), FINITE.map(lambda x: f"{x:.6e}")
)


Record = tuple[str, ...]


QID = st.sampled_from(["1", "q2", "301"]) | TOKEN  # a few shared ids: several documents per query


@dataclass(frozen=True)
class LineFormat:
    """One line-oriented file format: its reader, documented error, and generated valid content."""

    name: str
    read: Callable[[Path], Any]
    error: type[LineFileError]
    records: st.SearchStrategy[list[Record]]  # the fields of each line, as text
    expected: Callable[[list[Record]], Any]  # what ``read`` must return for those lines
    normalise: Callable[[Any], Any] = lambda got: got  # ``read``'s return as comparable Python values
    numeric: tuple[int, ...] = ()  # fields that hold numbers
    finite_only: tuple[int, ...] = ()  # numeric fields where NaN / inf are documented errors
    empty_is_error: bool = True  # a file without records: error ("no samples") or an empty result


def _arrays(got: tuple[np.ndarray, np.ndarray]) -> tuple[list[Any], list[Any]]:
    return got[0].tolist(), got[1].tolist()


def _table(records: list[Record], qid: int, docid: int, value: int, cast: Callable[[str], Any]) -> Any:
    table: dict[str, dict[str, Any]] = {}
    for r in records:
        table.setdefault(r[qid], {})[r[docid]] = cast(r[value])
    return table


LINE_FORMATS = [
    LineFormat(
        "score",
        read_score_file,
        ScoreFileError,
        st.lists(
            st.tuples(TOKEN, TOKEN, st.sampled_from(["real", "fake"]), FLOAT_TEXT), min_size=1, max_size=12
        ),
        lambda rs: ([int(r[2] == "real") for r in rs], [float(r[3]) for r in rs]),
        _arrays,
        numeric=(3,),
        finite_only=(3,),
    ),
    LineFormat(
        "trec-run",
        read_run,
        TrecFileError,
        st.lists(
            st.tuples(QID, TOKEN, TOKEN, st.integers().map(str), st.floats(allow_nan=False).map(repr), TOKEN),
            max_size=12,
            unique_by=lambda r: (r[0], r[2]),
        ),
        lambda rs: _table(rs, 0, 2, 4, float),
        numeric=(3, 4),
        empty_is_error=False,
    ),
    LineFormat(
        "trec-qrels",
        read_qrels,
        TrecFileError,
        st.lists(
            st.tuples(QID, TOKEN, TOKEN, st.integers().map(str)),
            max_size=12,
            unique_by=lambda r: (r[0], r[2]),
        ),
        lambda rs: _table(rs, 0, 2, 3, int),
        numeric=(3,),
        empty_is_error=False,
    ),
    LineFormat(
        "calibration",
        read_calibration_file,
        CalibrationFileError,
        st.lists(
            st.tuples(st.floats(0.0, 1.0).map(repr), st.sampled_from(["0", "1"])), min_size=1, max_size=12
        ),
        lambda rs: ([float(r[0]) for r in rs], [r[1] == "1" for r in rs]),
        _arrays,
        numeric=(0,),
        finite_only=(0,),
    ),
    # label files (Audacity) and annotation files (AVE / LLP): one entry each once their readers exist
]


FORMAT_IDS = [f.name for f in LINE_FORMATS]


@dataclass
class Layout:
    """How the records are laid out: separators, line ending, blank lines, byte-order mark."""

    sep: str
    newline: str
    indent: str
    blank_before: list[bool]
    trailing_newline: bool
    bom: bool


LAYOUTS = st.builds(
    Layout,
    sep=st.sampled_from([" ", "\t", "  ", " \t ", "\x0c", "\u3000"]),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    indent=st.sampled_from(["", " ", "\t "]),
    blank_before=st.lists(st.booleans(), max_size=12),
    trailing_newline=st.booleans(),
    bom=st.booleans(),
)


@dataclass
class LineFile:
    lines: list[str]  # every line of the file, blank ones included
    record_line: list[int]  # 1-based line number of each record
    newline: str
    bom: bool
    trailing_newline: bool = True

    def encode(self) -> bytes:
        text = self.newline.join(self.lines) + (self.newline if self.trailing_newline else "")
        return (b"\xef\xbb\xbf" if self.bom else b"") + text.encode("utf-8")


def lay_out(records: Sequence[Record], layout: Layout) -> LineFile:
    lines: list[str] = []
    record_line = []
    for i, fields in enumerate(records):
        if i < len(layout.blank_before) and layout.blank_before[i]:
            lines.append(layout.indent)
        lines.append(layout.indent + layout.sep.join(fields) + layout.indent)
        record_line.append(len(lines))
    return LineFile(lines, record_line, layout.newline, layout.bom, layout.trailing_newline)


def check_read(
    fmt: LineFormat, path: Path, *, line: int | None = None, must_fail: bool = False
) -> LineFileError | None:
    """Read ``path``: it parses, or raises exactly ``fmt.error`` naming the file (and ``line``, if given)."""
    try:
        fmt.read(path)
    except Exception as exc:  # which type it is, is the point
        assert type(exc) is fmt.error, (
            f"{fmt.name}: {type(exc).__name__} instead of {fmt.error.__name__}: {exc}"
        )
        assert isinstance(exc, LineFileError)
        assert str(exc).startswith(str(path)), str(exc)
        if exc.line is not None:
            assert exc.line >= 1 and f"{path}, line {exc.line}: " in str(exc)
        if line is not None:
            assert exc.line == line, f"{exc} (expected line {line})"
        return exc
    assert not must_fail, f"{fmt.name}: {path.read_bytes()[:200]!r} was accepted"
    return None


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
@FUZZ
@given(data=st.data())
def test_valid_line_files_read_back_the_generated_values(fmt: LineFormat, data: st.DataObject) -> None:
    """(a) Any layout — CRLF or CR line endings, a BOM, blank lines, tabs, form feeds — reads the same."""
    records = data.draw(fmt.records, "records")
    layout = data.draw(LAYOUTS, "layout")
    with scratch() as d:
        path = d / "file.txt"
        path.write_bytes(lay_out(records, layout).encode())
        if not records and fmt.empty_is_error:
            check_read(fmt, path, must_fail=True)
        else:
            assert fmt.normalise(fmt.read(path)) == fmt.expected(records)


@FUZZ
@given(
    labels=st.lists(st.booleans(), min_size=1, max_size=30),
    data=st.data(),
    dtype=st.sampled_from([np.float64, np.float32]),
)
def test_score_file_writer_round_trips(labels: list[bool], data: st.DataObject, dtype: type) -> None:
    width = 64 if dtype is np.float64 else 32
    scores = data.draw(
        st.lists(
            st.floats(allow_nan=False, allow_infinity=False, width=width),
            min_size=len(labels),
            max_size=len(labels),
        )
    )
    with scratch() as d:
        path = d / "scores.txt"
        write_score_file(path, np.array(labels), np.array(scores, dtype=dtype))
        got_labels, got_scores = read_score_file(path)
        assert got_labels.tolist() == [int(x) for x in labels]
        np.testing.assert_array_equal(got_scores, np.array(scores, dtype=dtype).astype(np.float64))
        assert np.signbit(got_scores).tolist() == np.signbit(np.array(scores, dtype=dtype)).tolist()
        assert os.listdir(d) == ["scores.txt"]


def _valid_file(fmt: LineFormat, data: st.DataObject, min_records: int = 1) -> LineFile:
    records = data.draw(fmt.records.filter(lambda rs: len(rs) >= min_records), "records")
    return lay_out(records, data.draw(LAYOUTS, "layout"))


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
@FUZZ
@given(blob=st.binary(max_size=300))
def test_random_bytes(fmt: LineFormat, blob: bytes) -> None:
    with scratch() as d:
        path = d / "random.txt"
        path.write_bytes(blob)
        check_read(fmt, path)


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
@FUZZ
@given(data=st.data())
def test_truncated_file_fails_only_at_its_last_line(fmt: LineFormat, data: st.DataObject) -> None:
    raw = _valid_file(fmt, data).encode()
    cut = data.draw(st.integers(0, len(raw)), "cut")
    with scratch() as d:
        path = d / "truncated.txt"
        path.write_bytes(raw[:cut])
        exc = check_read(fmt, path)
        # every complete line is unchanged: only the cut one (the last) can be at fault, or none
        assert exc is None or exc.line in (None, editor_lines(raw[:cut]))


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
@FUZZ
@given(data=st.data())
def test_flipped_bytes(fmt: LineFormat, data: st.DataObject) -> None:
    raw = bytearray(_valid_file(fmt, data).encode())
    for _ in range(data.draw(st.integers(1, 4), "flips")):
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= data.draw(st.integers(1, 255))
    with scratch() as d:
        path = d / "flipped.txt"
        path.write_bytes(bytes(raw))
        exc = check_read(fmt, path)
        assert exc is None or exc.line is None or exc.line <= editor_lines(bytes(raw))


INVALID_UTF8 = [
    b"\xff",
    b"\xfe",
    b"\x80",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xe2\x82",
    b"\xf5\x80\x80\x80",
    b"\xc3",
]


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
@FUZZ
@given(data=st.data(), bad=st.sampled_from(INVALID_UTF8))
def test_invalid_utf8_names_its_line(fmt: LineFormat, data: st.DataObject, bad: bytes) -> None:
    file = _valid_file(fmt, data)
    which = data.draw(st.integers(0, len(file.record_line) - 1), "record")
    number = file.record_line[which]
    line = file.lines[number - 1]
    at = data.draw(st.integers(0, len(line)), "at")
    before = file.newline.join([*file.lines[: number - 1], line[:at]])
    after = file.newline.join([line[at:], *file.lines[number:]])
    raw = (b"\xef\xbb\xbf" if file.bom else b"") + before.encode() + bad + after.encode()
    with scratch() as d:
        path = d / "latin1.txt"
        path.write_bytes(raw)
        exc = check_read(fmt, path, line=number, must_fail=True)
        assert exc is not None and "not UTF-8 text" in str(exc)


NASTY_NUMBERS = [
    "nan", "NaN", "-nan", "inf", "-inf", "+Infinity", "1e999", "-1e400", "9" * 5000, "1" + "0" * 400,
    "0x10", "1_000", "1e", "--1", "½", "١٢", "1.5.2", "0.5%", "None", "\x00",
]  # fmt: skip


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
@FUZZ
@given(data=st.data(), token=st.sampled_from(NASTY_NUMBERS))
def test_bad_number_names_its_line(fmt: LineFormat, data: st.DataObject, token: str) -> None:
    """Huge numbers, NaN / inf tokens and things that are not numbers, in a numeric field."""
    records = data.draw(fmt.records.filter(bool), "records")
    which = data.draw(st.integers(0, len(records) - 1), "record")
    column = data.draw(st.sampled_from(fmt.numeric), "column")
    fields = list(records[which])
    fields[column] = token
    records[which] = tuple(fields)
    file = lay_out(records, data.draw(LAYOUTS, "layout"))
    non_finite = token.lower().lstrip("+-") in ("nan", "inf", "infinity")
    with scratch() as d:
        path = d / "numbers.txt"
        path.write_bytes(file.encode())
        must_fail = column in fmt.finite_only and (non_finite or token.startswith(("1e999", "-1e400")))
        check_read(fmt, path, line=file.record_line[which], must_fail=must_fail)


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
@FUZZ
@given(data=st.data(), change=st.sampled_from(["drop", "add", "short", "comment"]))
def test_wrong_field_count_names_its_line(fmt: LineFormat, data: st.DataObject, change: str) -> None:
    records = data.draw(fmt.records.filter(bool), "records")
    which = data.draw(st.integers(0, len(records) - 1), "record")
    fields = list(records[which])
    expected = len(fields)
    if change == "drop":
        del fields[data.draw(st.integers(0, len(fields) - 1))]
    elif change == "add":
        fields.insert(data.draw(st.integers(0, len(fields))), data.draw(TOKEN))
    elif change == "short":
        fields = fields[: data.draw(st.integers(1, len(fields) - 1))]
    else:
        fields = ["#", *fields]
    records[which] = tuple(fields)
    file = lay_out(records, data.draw(LAYOUTS, "layout"))
    with scratch() as d:
        path = d / "columns.txt"
        path.write_bytes(file.encode())
        exc = check_read(fmt, path, line=file.record_line[which], must_fail=True)
        assert exc is not None and f"expected {expected} fields" in str(exc)
        if change == "comment":
            assert "comments are not part of the format" in str(exc)


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
@pytest.mark.parametrize(
    "content", [b"", b"\n", b"\r\n\r\n", b" \t\n\x0c\n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"]
)
def test_empty_files(tmp_path: Path, fmt: LineFormat, content: bytes) -> None:
    path = tmp_path / "empty.txt"
    path.write_bytes(content)
    if fmt.empty_is_error:
        exc = check_read(fmt, path, must_fail=True)
        assert exc is not None and exc.line is None and "no samples" in str(exc)
    else:
        assert fmt.read(path) == {}


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
def test_unreadable_paths(tmp_path: Path, fmt: LineFormat) -> None:
    for path in (tmp_path / "missing.txt", tmp_path):
        exc = check_read(fmt, path, must_fail=True)
        assert exc is not None and exc.line is None and "cannot be read" in str(exc)


@pytest.mark.parametrize("fmt", LINE_FORMATS, ids=FORMAT_IDS)
def test_line_numbers_count_only_real_line_breaks(tmp_path: Path, fmt: LineFormat) -> None:
    """A form feed, NEL or U+2028 inside a line is whitespace, not a line break an editor would show."""
    good = " ".join(LINE_EXAMPLES[fmt.name])
    for separator in ("\x0c", "\x1c", "\x85", "\u2028", "\x0b"):
        path = tmp_path / "ff.txt"
        path.write_bytes(f"{good.replace(' ', separator, 1)}\nnot a valid line at all, no\n".encode())
        check_read(fmt, path, line=2, must_fail=True)


LINE_EXAMPLES = {
    "score": ("-", "-", "real", "0.5"),
    "trec-run": ("q1", "Q0", "d1", "1", "0.5", "tag"),
    "trec-qrels": ("q1", "0", "d1", "1"),
    "calibration": ("0.5", "1"),
}


@FUZZ
@given(data=st.data(), fmt=st.sampled_from([f for f in LINE_FORMATS if f.name.startswith("trec")]))
def test_trec_duplicate_document_names_both_lines(data: st.DataObject, fmt: LineFormat) -> None:
    records = data.draw(fmt.records.filter(bool), "records")
    which = data.draw(st.integers(0, len(records) - 1), "record")
    records.append(records[which])
    file = lay_out(records, data.draw(LAYOUTS, "layout"))
    with scratch() as d:
        path = d / "dup.txt"
        path.write_bytes(file.encode())
        exc = check_read(fmt, path, line=file.record_line[-1], must_fail=True)
        assert exc is not None and f"already on line {file.record_line[which]}" in str(exc)
