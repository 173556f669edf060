"""Text from outside the harness made safe to print with Rich: markup escaped, terminal control codes
neutralised (a model's output may hold Rich markup or escape codes).

Adapter names, class names, stream ids, error messages, configuration values and file contents are the
model's or the user's words, not ours: a ``[/bold]`` in them is Rich markup that would end the CLI with a
``MarkupError`` (after the result was written) and an ANSI escape code (``\\x1b[2J``) would act on the
terminal. :func:`safe` removes complete ANSI escape sequences, shows any other control character as its
``\\xNN`` code, and escapes Rich markup; every console print of such text goes through it.
"""

from __future__ import annotations

import re

from rich.markup import escape

__all__ = ["plain", "safe"]

_ANSI = re.compile(
    r"""
    \x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?   # OSC ... BEL or ST (titles, hyperlinks)
    | \x1b\[[0-?]*[ -/]*[@-~]            # CSI ... final byte (colours, cursor, clear screen)
    | \x9b[0-?]*[ -/]*[@-~]              # 8-bit CSI
    | \x1b[ -/]*[0-~]                    # any other ESC sequence (charset, reset, keypad)
    """,
    re.VERBOSE,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(value: object) -> str:
    """``str(value)`` without terminal control: ANSI escape sequences removed, any other control
    character (newline and tab aside) shown as ``\\xNN``; for output that Rich does not parse."""
    text = _ANSI.sub("", str(value))
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def safe(value: object) -> str:
    """``value`` as text Rich prints literally: :func:`plain`, then Rich's markup escaped."""
    return escape(plain(value))
