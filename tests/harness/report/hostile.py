"""Hostile strings for the escaping tests of the HTML reports, and the check that a page holds them only as
text (DESIGN.md "Results": reports escape every string they show).

A planted value is markup wherever a report forgets to escape it: a script element, then a quote and an
angle bracket that leave an attribute for an image whose error handler runs. Each value starts with the
name of the field it was planted in, so that a failure names the field that leaked. The page is read with
the standard library's HTML parser (a browser's tokenizer sees the same elements): no ``script`` or ``img``
element and no ``on*`` attribute may be on it, and each planted value must be in its text, whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from html.parser import HTMLParser

SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'


def hostile(field: str) -> str:
    """The value planted in ``field``: its name in brackets (no value is part of another's), then both
    attacks."""
    return f"[{field}]{SCRIPT}{BREAKOUT}"


class Planter:
    """Hands out hostile values, each named after the field it goes into (prefixed), and keeps the list of
    what it planted."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.planted: list[str] = []

    def __call__(self, field: str) -> str:
        value = hostile(f"{self.prefix}.{field}" if self.prefix else field)
        self.planted.append(value)
        return value


class _Page(HTMLParser):
    """Every element (tag and attributes) and every run of text of a page, character references resolved."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_only_escaped(page: str, planted: Iterable[str]) -> None:
    """``page`` holds no element or event handler that a planted value brought, and every planted value
    as text. The fields whose value reached the page unescaped are named in the message."""
    parsed = _Page()
    parsed.feed(page)
    parsed.close()
    raw = sorted(set(re.findall(r"\[([^\]]+)\]" + re.escape(SCRIPT), page)))
    injected = [tag for tag, _ in parsed.elements if tag in ("script", "img")]
    handlers = [
        f"{tag} {name}" for tag, attrs in parsed.elements for name, _ in attrs if name.startswith("on")
    ]
    assert not injected and not handlers, f"elements {injected}, handlers {handlers}; unescaped fields: {raw}"
    shown = "\x00".join(parsed.text)
    lost = [value[1:].split("]", 1)[0] for value in planted if value not in shown]
    assert not lost, f"planted in these fields but not on the page as text: {lost}"
