"""Reading a JSON file so that any bad input becomes one error type naming the file (and the line).

Every JSON reader of the harness (result files, configuration files, protocol results, the report's
loader) goes through :func:`read_json_text` / :func:`read_json`, so that invalid UTF-8, a byte-order
mark, a syntax error, an integer longer than Python parses (> 4300 digits) or nesting deeper than the
stack all give the caller's documented error type, never ``UnicodeDecodeError``, ``ValueError`` or
``RecursionError`` from inside the standard library.

Every result file is written through :func:`strict_json`: JSON as RFC 8259 defines
it, which has no ``Infinity`` or ``NaN``. Pydantic writes a non-finite float as ``null`` unless a model
asks for the constants; whatever still carries one is written as ``null`` too, so that any JSON reader
(``jq``, a browser, ``json.loads(..., parse_constant=...)``) reads every result file. The model's own
field says what its ``null`` means (e.g. a causality check's ``max_difference``: no finite figure, the
check's detail says why).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["read_json", "read_json_text", "strict_json"]


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


class _NonFinite(Exception):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def strict_json(model: BaseModel, indent: int | None = 2) -> str:
    """``model`` as strict JSON (no ``Infinity``/``NaN``: each becomes ``null``); the model's own text
    when it holds none, else the same document written again with every non-finite number nulled."""
    text = model.model_dump_json(indent=indent)
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except _NonFinite:
        document = _finite(json.loads(text))
        return json.dumps(document, indent=indent, ensure_ascii=False, allow_nan=False)
    return text


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value
