"""Line-oriented text files (score files, TREC runs and qrels, calibration files): one reader, one error.

Every malformed line is reported as ``<file>, line <n>: <problem>`` so a user can go straight to it.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator
from pathlib import Path


class LineFileError(ValueError):
    """A text file that does not follow its format; ``path`` and ``line`` (1-based, or None) say where."""

    def __init__(self, path: str | os.PathLike[str], line: int | None, problem: str) -> None:
        self.path = Path(path)
        self.line = line
        self.problem = problem
        where = os.fspath(path) if line is None else f"{os.fspath(path)}, line {line}"
        super().__init__(f"{where}: {problem}")


def _lines(text: str) -> list[str]:
    """``text`` split at ``\\n``, ``\\r\\n`` and ``\\r`` only: the line numbers an editor shows.

    (``str.splitlines`` also breaks at form feeds, ``\\x1c``-``\\x1e``, NEL and U+2028/9, which would
    make "line N" in an error point at the wrong line; inside a line they are whitespace.)
    """
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def fields_of_lines(
    path: str | os.PathLike[str], expected: int, layout: str, error: type[LineFileError] = LineFileError
) -> Iterator[tuple[int, list[str]]]:
    """``(line number, whitespace-separated fields)`` of each non-blank line, ``expected`` fields each.

    ``layout`` names the fields for the error message; a file that cannot be read or is not UTF-8 text
    raises ``error`` naming it (and the line, for bad UTF-8). A leading UTF-8 byte-order mark is ignored;
    lines end at ``\\n``, ``\\r\\n`` or ``\\r``.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise error(path, None, f"cannot be read ({exc.strerror or exc})") from None
    if raw.startswith(codecs.BOM_UTF8):  # a byte-order mark (some Windows editors write one) is not text
        raw = raw[len(codecs.BOM_UTF8) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        where = len(_lines(raw[: err.start].decode("utf-8")))
        raise error(path, where, f"not UTF-8 text ({err.reason})") from None
    for number, line in enumerate(_lines(text), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != expected:
            hint = " (comments are not part of the format)" if fields[0].startswith("#") else ""
            raise error(path, number, f"expected {expected} fields {layout}, got {len(fields)}{hint}")
        yield number, fields
