"""Label files of audio recordings: Audacity label tracks and ``onset,offset,label`` CSV files.

Both give a list of :class:`LabelSpan` — a labelled time span in seconds from the start of the recording.

**Audacity labels** (the "Export Labels" text of Audacity's label tracks): one label per line,
``START<TAB>END<TAB>LABEL``, times in seconds written with a ``.`` decimal point. The reader:

- splits at the first two tabs, so the label is the rest of the line (it may contain spaces; leading and
  trailing whitespace is stripped); a point label has ``START == END``;
- skips the spectral-selection lines Audacity writes after a label when it has a frequency range
  (they start with a backslash: ``\\<TAB>LOW_HZ<TAB>HIGH_HZ``) and blank lines;
- accepts a file without any label (a recording with no event).

**CSV labels**: comma-separated rows ``onset,offset,label`` (seconds, seconds, text), parsed per line by
Python's :mod:`csv` (RFC 4180 quoting, so a label may contain commas when quoted). An optional header row
comes first: it is recognised when its first two fields are not numbers, and it must then name its three
columns (case-insensitive) ``onset``/``start``, ``offset``/``end`` and ``label``/``event``/``event_label``
in any order — the rows are read by those names. Blank lines are skipped; a file with no rows is valid.

Both readers require times that are finite, non-negative, plain decimal numbers with ``onset <= offset``,
and a non-empty label. Anything else — an unreadable file, bytes that are not UTF-8, a malformed line —
raises :class:`LabelFileError` (a :class:`~streambench.harness.io.lines.LineFileError`) naming the file and
the line. Lines end at ``\\n``, ``\\r\\n`` or ``\\r``; a leading UTF-8 byte-order mark is ignored. A reader
returns the whole file or raises: never a part of it.
"""

from __future__ import annotations

import codecs
import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from streambench.harness.io.lines import LineFileError

__all__ = [
    "LabelFileError",
    "LabelSpan",
    "parse_seconds",
    "read_audacity_labels",
    "read_label_csv",
    "text_lines",
]

_HEADER_NAMES = {
    "onset": "onset",
    "start": "onset",
    "offset": "offset",
    "end": "offset",
    "label": "label",
    "event": "label",
    "event_label": "label",
}


class LabelFileError(LineFileError):
    """A label file (Audacity or CSV) that does not follow its format; ``path`` and ``line`` say where."""


@dataclass(frozen=True, slots=True)
class LabelSpan:
    """A labelled span of a recording: ``[onset_s, offset_s]`` seconds from its start, and its label.

    ``line`` is the line of the file it was read from (for error messages; not compared)."""

    onset_s: float
    offset_s: float
    label: str
    line: int | None = field(default=None, compare=False)


def _split_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def text_lines(path: str | os.PathLike[str], error: type[LineFileError]) -> list[tuple[int, str]]:
    """``(line number, text)`` of every line of a UTF-8 text file, blank lines included.

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (the numbers an editor shows); a leading UTF-8 byte-order
    mark is dropped. An unreadable file or bytes that are not UTF-8 raise ``error`` naming the file (and
    the line of the first bad byte).
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise error(path, None, f"cannot be read ({exc.strerror or exc})") from None
    if raw.startswith(codecs.BOM_UTF8):
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = len(_split_lines(raw[: err.start].decode("utf-8", errors="replace")))
        raise error(path, line, f"not UTF-8 text ({err.reason})") from None
    return list(enumerate(_split_lines(text), start=1))


def parse_seconds(token: str) -> float | None:
    """The float of a plain decimal or exponent number (surrounding whitespace allowed), else None.

    ``float()`` also takes digit separators (``1_000``), which no label format writes: they are refused.
    """
    if "_" in token:
        return None
    try:
        return float(token)
    except ValueError:
        return None


def _span(
    path: str | os.PathLike[str], number: int, onset_text: str, offset_text: str, label: str
) -> LabelSpan:
    """A validated span, or :class:`LabelFileError` naming ``path`` and line ``number``."""
    times = []
    for name, token in (("onset", onset_text), ("offset", offset_text)):
        value = parse_seconds(token)
        if value is None:
            raise LabelFileError(path, number, f"{name} {token.strip()!r} is not a number of seconds")
        if not math.isfinite(value) or value < 0:
            raise LabelFileError(path, number, f"{name} {token.strip()!r} must be finite and >= 0")
        times.append(value)
    onset, offset = times
    if onset > offset:
        raise LabelFileError(path, number, f"onset {onset:g} s is after offset {offset:g} s")
    label = label.strip()
    if not label:
        raise LabelFileError(path, number, "empty label")
    return LabelSpan(onset, offset, label, number)


def read_audacity_labels(path: str | os.PathLike[str]) -> list[LabelSpan]:
    """The spans of an Audacity label file (``START<TAB>END<TAB>LABEL`` per line), in file order."""
    spans: list[LabelSpan] = []
    for number, line in text_lines(path, LabelFileError):
        if not line.strip() or line.startswith("\\"):  # blank, or a spectral-selection line
            continue
        fields = line.split("\t", 2)
        if len(fields) != 3:
            raise LabelFileError(
                path, number, f"expected 3 tab-separated fields (START END LABEL), got {len(fields)}"
            )
        spans.append(_span(path, number, *fields))
    return spans


def _csv_fields(path: str | os.PathLike[str], number: int, line: str) -> list[str]:
    try:
        return next(csv.reader([line], strict=True))
    except (csv.Error, StopIteration) as exc:
        raise LabelFileError(path, number, f"not a CSV row ({exc})") from None


def read_label_csv(path: str | os.PathLike[str]) -> list[LabelSpan]:
    """The spans of an ``onset,offset,label`` CSV file (optional header row), in file order."""
    spans: list[LabelSpan] = []
    order = (0, 1, 2)  # column index of onset, offset, label
    first = True
    for number, line in text_lines(path, LabelFileError):
        if not line.strip():
            continue
        fields = _csv_fields(path, number, line)
        if len(fields) != 3:
            raise LabelFileError(path, number, f"expected 3 fields (onset,offset,label), got {len(fields)}")
        if first and parse_seconds(fields[0]) is None and parse_seconds(fields[1]) is None:
            names = [_HEADER_NAMES.get(field.strip().lower()) for field in fields]
            if sorted(name or "" for name in names) != ["label", "offset", "onset"]:
                raise LabelFileError(
                    path, number, f"header {fields!r} must name the columns onset, offset and label"
                )
            order = (names.index("onset"), names.index("offset"), names.index("label"))
            first = False
            continue
        first = False
        spans.append(_span(path, number, fields[order[0]], fields[order[1]], fields[order[2]]))
    return spans
