"""Label files (harness/io/labels.py: Audacity, CSV): values, errors, and fuzzing (the fuzzing covers
the annotation readers too, tests/harness/io/test_annotations.py: every reader of the line-file
family)."""

from __future__ import annotations

import contextlib
import math
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streambench.harness.io.annotations import (
    AnnotationFileError,
    read_ave_annotations,
    read_llp_csv,
)
from streambench.harness.io.labels import LabelFileError, LabelSpan, read_audacity_labels, read_label_csv
from streambench.harness.io.lines import LineFileError

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, str):
        path.write_bytes(content.encode("utf-8"))
    else:
        path.write_bytes(content)
    return path


# --- Audacity labels -------------------------------------------------------------------------------


def test_audacity_labels_values(tmp_path: Path) -> None:
    text = (
        "\ufeff0.000000\t1.500000\tdog bark\r\n"
        "\\\t100.0\t2000.0\r\n"  # spectral selection of the label above
        "\r\n"
        "2.25\t2.25\tclick\r\n"  # point label
        "3\t4.5\t  speech  \n"
    )
    spans = read_audacity_labels(write(tmp_path, "a.txt", text))
    assert spans == [
        LabelSpan(0.0, 1.5, "dog bark"),
        LabelSpan(2.25, 2.25, "click"),
        LabelSpan(3.0, 4.5, "speech"),
    ]
    assert [s.line for s in spans] == [1, 4, 5]


def test_audacity_empty_file_is_no_labels(tmp_path: Path) -> None:
    assert read_audacity_labels(write(tmp_path, "a.txt", "")) == []
    assert read_audacity_labels(write(tmp_path, "b.txt", "\n\n")) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("1.0 2.0 dog", "expected 3 tab-separated fields"),
        ("1.0\t2.0", "expected 3 tab-separated fields"),
        ("x\t2.0\tdog", "onset 'x' is not a number"),
        ("1.0\t1_0\tdog", "offset '1_0' is not a number"),
        ("-1.0\t2.0\tdog", "onset '-1.0' must be finite and >= 0"),
        ("1.0\tinf\tdog", "offset 'inf' must be finite"),
        ("nan\t2.0\tdog", "onset 'nan' must be finite"),
        ("3.0\t2.0\tdog", "onset 3 s is after offset 2 s"),
        ("1.0\t2.0\t   ", "empty label"),
    ],
)
def test_audacity_errors_name_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    path = write(tmp_path, "bad.txt", f"0\t1\tok\n\n{line}\n")
    with pytest.raises(LabelFileError) as info:
        read_audacity_labels(path)
    assert info.value.line == 3
    assert info.value.path == path
    assert str(info.value).startswith(f"{path}, line 3: ")
    assert problem in str(info.value)


def test_label_file_not_utf8_or_missing(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.txt", b"0\t1\tok\r\n1\t2\t\xff\n")
    with pytest.raises(LabelFileError, match="line 2: not UTF-8"):
        read_audacity_labels(path)
    with pytest.raises(LabelFileError, match="cannot be read") as info:
        read_label_csv(tmp_path / "missing.csv")
    assert info.value.line is None


# --- CSV labels ------------------------------------------------------------------------------------


def test_label_csv_without_header(tmp_path: Path) -> None:
    text = '0,0.5,speech\n\n1.25,2,"dog, barking"\n 3 , 4 , music \n'
    assert read_label_csv(write(tmp_path, "l.csv", text)) == [
        LabelSpan(0.0, 0.5, "speech"),
        LabelSpan(1.25, 2.0, "dog, barking"),
        LabelSpan(3.0, 4.0, "music"),
    ]


def test_label_csv_header_maps_columns_by_name(tmp_path: Path) -> None:
    text = "Label,Start,End\nspeech,0.5,1.0\n"
    assert read_label_csv(write(tmp_path, "l.csv", text)) == [LabelSpan(0.5, 1.0, "speech")]
    assert read_label_csv(write(tmp_path, "m.csv", "onset,offset,event_label\n")) == []


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("onset,offset,what\n1,2,a\n", 1, "must name the columns onset, offset and label"),
        ("1,2\n", 1, "expected 3 fields"),
        ("1,2,a,b\n", 1, "expected 3 fields"),
        ("0,1,a\nabc,2,a\n", 2, "onset 'abc' is not a number"),
        ("0,1,a\n2,1,a\n", 2, "onset 2 s is after offset 1 s"),
        ('0,1,a\n0,1,"unclosed\n', 2, "not a CSV row"),
        ("0,1,a\n0,1,\n", 2, "empty label"),
        ("onset,offset,label\n0,1,a\nonset,offset,label\n", 3, "is not a number"),
    ],
)
def test_label_csv_errors(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = write(tmp_path, "bad.csv", text)
    with pytest.raises(LabelFileError) as info:
        read_label_csv(path)
    assert info.value.line == line
    assert problem in str(info.value)
    assert str(path) in str(info.value)


# --- an AVE annotation file (read by tests/harness/io/test_annotations.py and fuzzed below) -----------

AVE_TEXT = (
    "Category&VideoID&Quality&StartTime&EndTime\n"
    "Church bell&RUhOCu3LNXM&good&0&10\n"
    "Male speech, man speaking&0giAfYq9oVM&good&3&9\n"
    "Bark&VWi2ENBuTbw&good&0&0\n"
)


# --- round trips and fuzzing -----------------------------------------------------------------------

READERS: list[tuple[str, Callable[[Path], Any], type[LineFileError]]] = [
    ("audacity", read_audacity_labels, LabelFileError),
    ("csv", read_label_csv, LabelFileError),
    ("ave", read_ave_annotations, AnnotationFileError),
    ("llp", read_llp_csv, AnnotationFileError),
]


VALID = {
    "audacity": b"0.5\t1.25\tdog bark\n2\t3\tspeech\n",
    "csv": b'onset,offset,label\n0.5,1.25,"dog, bark"\n2,3,speech\n',
    "ave": AVE_TEXT.encode(),
    "llp": b"filename\tonset\toffset\tevent_labels\nclip_0_10\t0\t4\tDog\nclip_0_10\t5\t10\tSpeech\n",
}


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="labels-") as name:
        yield Path(name)


def check_read_or_documented_error(
    read: Callable[[Path], Any], error: type[LineFileError], data: bytes
) -> None:
    with scratch() as directory:
        path = directory / "f"
        path.write_bytes(data)
        try:
            read(path)
        except error as exc:  # the documented error, naming the file (and a line that exists)
            assert exc.path == path
            assert str(path) in str(exc)
            if exc.line is not None:
                assert 1 <= exc.line <= data.count(b"\n") + data.count(b"\r") + 1


@pytest.mark.parametrize(("name", "read", "error"), READERS, ids=[r[0] for r in READERS])
@FUZZ
@given(data=st.binary(max_size=200))
def test_random_bytes_parse_or_raise_documented_error(
    name: str, read: Callable[[Path], Any], error: type[LineFileError], data: bytes
) -> None:
    check_read_or_documented_error(read, error, data)


@pytest.mark.parametrize(("name", "read", "error"), READERS, ids=[r[0] for r in READERS])
@FUZZ
@given(data=st.data())
def test_corrupted_valid_files_parse_or_raise_documented_error(
    name: str, read: Callable[[Path], Any], error: type[LineFileError], data: st.DataObject
) -> None:
    raw = bytearray(VALID[name])
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(raw)))
        action = data.draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        byte = data.draw(
            st.sampled_from([b"\t", b"&", b",", b'"', b"\n", b"\r", b"-", b"\xff", b"\x00", b"e"])
        )
        if action == "flip" and position < len(raw):
            raw[position] = byte[0]
        elif action == "insert":
            raw[position:position] = byte
        elif action == "delete" and position < len(raw):
            del raw[position]
        elif action == "truncate":
            del raw[position:]
    check_read_or_documented_error(read, error, bytes(raw))


SECONDS = st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False)


LABEL = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp", "Zs")), min_size=1, max_size=8
)


@FUZZ
@given(spans=st.lists(st.tuples(SECONDS, SECONDS, LABEL), max_size=8))
def test_generated_spans_read_back(spans: list[tuple[float, float, str]]) -> None:
    ordered = [(min(a, b), max(a, b), label) for a, b, label in spans]
    expected = [LabelSpan(a, b, label) for a, b, label in ordered]
    with scratch() as directory:
        audacity = directory / "l.txt"
        audacity.write_text("".join(f"{a!r}\t{b!r}\t{label}\n" for a, b, label in ordered), "utf-8")
        assert read_audacity_labels(audacity) == expected
        csv_path = directory / "l.csv"
        quoted = ['"' + label.replace('"', '""') + '"' for _, _, label in ordered]
        csv_path.write_text(
            "onset,offset,label\n"
            + "".join(f"{a!r},{b!r},{q}\n" for (a, b, _), q in zip(ordered, quoted, strict=True)),
            "utf-8",
        )
        got = read_label_csv(csv_path)
        assert got == expected
        assert all(math.isfinite(s.onset_s) and s.onset_s <= s.offset_s for s in got)
