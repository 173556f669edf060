"""Annotation files (harness/io/annotations.py: AVE, LLP/AVVP): values and errors (their fuzzing:
tests/harness/io/test_labels.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambench.harness.io.annotations import (
    AnnotationFileError,
    AveAnnotation,
    LlpEvent,
    read_ave_annotations,
    read_llp_csv,
)
from tests.harness.io.test_labels import AVE_TEXT, write


def test_ave_annotations_with_and_without_header(tmp_path: Path) -> None:
    expected = [
        AveAnnotation("Church bell", "RUhOCu3LNXM", "good", 0, 10),
        AveAnnotation("Male speech, man speaking", "0giAfYq9oVM", "good", 3, 9),
        AveAnnotation("Bark", "VWi2ENBuTbw", "good", 0, 0),
    ]
    with_header = read_ave_annotations(write(tmp_path, "Annotations.txt", AVE_TEXT))
    assert with_header == expected
    assert [a.line for a in with_header] == [2, 3, 4]
    without = read_ave_annotations(write(tmp_path, "testSet.txt", AVE_TEXT.split("\n", 1)[1]))
    assert without == expected
    assert [a.line for a in without] == [1, 2, 3]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("Bark&id&good&0", "expected 5 fields"),
        ("Bark&id&good&0&10&x", "expected 5 fields"),
        ("Bark&id&good&1.5&10", "StartTime '1.5' is not a whole number"),
        ("Bark&id&good&-1&10", "StartTime '-1' is not a whole number"),
        ("Bark&id&good&6&5", "StartTime 6 is after EndTime 5"),
        ("Bark&&good&0&5", "empty VideoID"),
    ],
)
def test_ave_annotation_errors(tmp_path: Path, line: str, problem: str) -> None:
    path = write(tmp_path, "Annotations.txt", f"Bark&a&good&0&1\n{line}\n")
    with pytest.raises(AnnotationFileError) as info:
        read_ave_annotations(path)
    assert info.value.line == 2
    assert problem in str(info.value)


def test_annotation_files_without_records_are_errors(tmp_path: Path) -> None:
    with pytest.raises(AnnotationFileError, match="no annotations"):
        read_ave_annotations(write(tmp_path, "a.txt", "Category&VideoID&Quality&StartTime&EndTime\n"))
    with pytest.raises(AnnotationFileError, match="no annotations"):
        read_llp_csv(write(tmp_path, "b.csv", "filename\tonset\toffset\tevent_labels\n\n"))


# --- LLP / AVVP evaluation files -------------------------------------------------------------------


def test_llp_csv_values(tmp_path: Path) -> None:
    text = (
        "filename\tonset\toffset\tevent_labels\n"
        "4YdbENYcIyE_23_33\t0\t4\tBaby_cry_infant_cry\n"
        "KSRjje7GH44_60_70\t8\t10\tBlender\r\n"
        "CaC2xvdLC34_250_260\t9\t9\tSpeech\n"
    )
    events = read_llp_csv(write(tmp_path, "AVVP_eval_audio.csv", text))
    assert events == [
        LlpEvent("4YdbENYcIyE_23_33", 0, 4, "Baby_cry_infant_cry"),
        LlpEvent("KSRjje7GH44_60_70", 8, 10, "Blender"),
        LlpEvent("CaC2xvdLC34_250_260", 9, 9, "Speech"),
    ]
    assert [e.line for e in events] == [2, 3, 4]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("clip 0 4 Dog", "expected 4 fields"),
        ("clip\t0\t4", "expected 4 fields"),
        ("clip\t0.5\t4\tDog", "onset '0.5' is not a whole number"),
        ("clip\t5\t4\tDog", "onset 5 is after offset 4"),
        ("clip\t0\t4\t", "empty event_labels"),
    ],
)
def test_llp_csv_errors(tmp_path: Path, line: str, problem: str) -> None:
    path = write(tmp_path, "e.csv", f"filename\tonset\toffset\tevent_labels\n{line}\n")
    with pytest.raises(AnnotationFileError) as info:
        read_llp_csv(path)
    assert info.value.line == 2
    assert problem in str(info.value)
