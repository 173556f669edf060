"""Annotation files of the AVE and LLP (AVVP) data sets (seed 004 §6.1.1 and §6.1.2).

**AVE** (Tian et al., ECCV 2018): ``Annotations.txt`` and the split files ``trainSet.txt`` /
``valSet.txt`` / ``testSet.txt`` hold one event per line, five fields separated by ``&``::

    Category&VideoID&Quality&StartTime&EndTime
    Church bell&RUhOCu3LNXM&good&0&10

``Category`` is one of the 28 AVE categories (it may contain spaces and commas), ``VideoID`` the YouTube
id, ``Quality`` a free word (``good`` throughout the release), ``StartTime`` / ``EndTime`` whole seconds
(``0 <= start <= end``; the event covers the 1 s segments ``start .. end - 1``, so ``3&3`` covers none).
The copy in the authors' repository has no header line, the copy in the data set archive starts with
the header above: a first line equal to it (case-insensitive) is skipped. Each line is one *sample*; a
video with two events appears twice.

**LLP / AVVP** (Tian et al., ECCV 2020): the evaluation files ``AVVP_eval_audio.csv`` and
``AVVP_eval_visual.csv`` are tab-separated with the header ``filename<TAB>onset<TAB>offset<TAB>event_labels``
and one event per row::

    4YdbENYcIyE_23_33	0	4	Baby_cry_infant_cry

``filename`` is ``<YouTube id>_<start>_<end>`` of the 10 s clip; ``onset`` / ``offset`` are whole seconds
and the event covers the segments ``onset .. offset - 1`` (the authors' evaluation sets
``GT[class, onset:offset] = 1``); ``event_labels`` is one LLP class. The header is optional here; a first
line equal to it is skipped.

Both readers skip blank lines, accept ``\\n``, ``\\r\\n`` or ``\\r`` line ends and a leading UTF-8
byte-order mark, strip whitespace around fields, and require at least one record. Anything else raises
:class:`AnnotationFileError` (a :class:`~streambench.harness.io.lines.LineFileError`) naming the file and the
line; a reader returns the whole file or raises.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from streambench.harness.io.labels import text_lines
from streambench.harness.io.lines import LineFileError

__all__ = [
    "AVE_HEADER",
    "LLP_HEADER",
    "AnnotationFileError",
    "AveAnnotation",
    "LlpEvent",
    "read_ave_annotations",
    "read_llp_csv",
]

AVE_HEADER: tuple[str, ...] = ("Category", "VideoID", "Quality", "StartTime", "EndTime")
LLP_HEADER: tuple[str, ...] = ("filename", "onset", "offset", "event_labels")


class AnnotationFileError(LineFileError):
    """An AVE or LLP annotation file that does not follow its format; ``path`` and ``line`` say where."""


@dataclass(frozen=True, slots=True)
class AveAnnotation:
    """One line of an AVE annotation file: an event of ``category`` over segments ``start_s .. end_s - 1``."""

    category: str
    video_id: str
    quality: str
    start_s: int
    end_s: int
    line: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class LlpEvent:
    """One row of an AVVP evaluation file: ``label`` over segments ``onset_s .. offset_s - 1``."""

    filename: str
    onset_s: int
    offset_s: int
    label: str
    line: int = field(default=0, compare=False)


def _whole_seconds(path: str | os.PathLike[str], number: int, name: str, token: str) -> int:
    if not (token.isascii() and token.isdigit()):
        raise AnnotationFileError(path, number, f"{name} {token!r} is not a whole number of seconds")
    return int(token)


def _is_header(fields: list[str], header: tuple[str, ...]) -> bool:
    return [f.lower() for f in fields] == [h.lower() for h in header]


def _records(
    path: str | os.PathLike[str], separator: str, header: tuple[str, ...]
) -> list[tuple[int, list[str]]]:
    """``(line number, stripped fields)`` of the non-blank lines, the optional header dropped."""
    records: list[tuple[int, list[str]]] = []
    layout = separator.join(header).replace("\t", "<TAB>")
    first = True
    for number, line in text_lines(path, AnnotationFileError):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(separator)]
        if first:
            first = False
            if _is_header(fields, header):
                continue
        if len(fields) != len(header):
            raise AnnotationFileError(
                path, number, f"expected {len(header)} fields ({layout}), got {len(fields)}"
            )
        for name, value in zip(header, fields, strict=True):
            if not value:
                raise AnnotationFileError(path, number, f"empty {name}")
        records.append((number, fields))
    if not records:
        raise AnnotationFileError(path, None, "no annotations: the file has no records")
    return records


def read_ave_annotations(path: str | os.PathLike[str]) -> list[AveAnnotation]:
    """The samples of an AVE annotation or split file, in file order."""
    out: list[AveAnnotation] = []
    for number, (category, video_id, quality, start_text, end_text) in _records(path, "&", AVE_HEADER):
        start = _whole_seconds(path, number, "StartTime", start_text)
        end = _whole_seconds(path, number, "EndTime", end_text)
        if start > end:
            raise AnnotationFileError(path, number, f"StartTime {start} is after EndTime {end}")
        out.append(AveAnnotation(category, video_id, quality, start, end, number))
    return out


def read_llp_csv(path: str | os.PathLike[str]) -> list[LlpEvent]:
    """The events of an AVVP evaluation file (audio or visual), in file order."""
    out: list[LlpEvent] = []
    for number, (filename, onset_text, offset_text, label) in _records(path, "\t", LLP_HEADER):
        onset = _whole_seconds(path, number, "onset", onset_text)
        offset = _whole_seconds(path, number, "offset", offset_text)
        if onset > offset:
            raise AnnotationFileError(path, number, f"onset {onset} is after offset {offset}")
        out.append(LlpEvent(filename, onset, offset, label, number))
    return out
