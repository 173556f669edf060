"""Reading a JSON file so that any bad input becomes one error type naming the file (and the line).

Every JSON reader of the harness (result files, configuration files, protocol results, the report's
loader) goes through :func:`read_json_text` / :func:`read_json`, so that invalid UTF-8, a byte-order
mark, a syntax error, an integer longer than Python parses (> 4300 digits) or nesting deeper than the
stack all give the caller's documented error type, never ``UnicodeDecodeError``, ``ValueError`` or
``RecursionError`` from inside the standard library.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["read_json", "read_json_text"]


def read_json_text(path: Path, error: type[Exception], missing: str = "no such file") -> str:
    """The file's text: UTF-8, a leading byte-order mark dropped. Raises ``error`` naming the file, and
    the line of the first byte that is not UTF-8."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{path}: {missing}") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark is not part of the JSON
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(f"{path}: line {line}: not UTF-8 text ({exc.reason})") from None


def parse_json(text: str, path: Path | str, error: type[Exception]) -> Any:
    """``json.loads`` with every failure turned into ``error`` naming ``path`` (and the line)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # an integer of > 4300 digits; nesting deeper than the stack
        raise error(f"{path}: not valid JSON ({type(exc).__name__}: {exc})") from None


def read_json(path: Path, error: type[Exception], missing: str = "no such file") -> Any:
    """The parsed content of a JSON file; any failure is ``error`` naming the file (and the line)."""
    return parse_json(read_json_text(path, error, missing), path, error)
