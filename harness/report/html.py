"""HTML building blocks of the report: escaping, numbers, tables, sections and the page itself.

Every string that reaches the page goes through :func:`esc` (``html.escape`` with quotes), including
run ids, adapter names, stream ids, stage names and environment values (DESIGN.md "Results": reports
escape every string they show). The page is self-contained: inline CSS, inline SVG, no script, no
external URL. A number is shown only when it was measured; a missing one is ``null: <reason>``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Section", "absent", "esc", "figure_block", "num", "page", "table", "value_or_null"]


def esc(value: object) -> str:
    """Any value as escaped HTML text."""
    return html.escape(str(value), quote=True)


def num(value: float | int | None, digits: int = 4, unit: str = "", reason: str | None = None) -> str:
    """A measured number as escaped text (``digits`` significant digits), or ``null: reason``."""
    if value is None:
        return f'<span class="null">null: {esc(reason or "not measured")}</span>'
    if isinstance(value, bool):
        return esc(value)
    text = f"{value}" if isinstance(value, int) else f"{value:.{digits}g}"
    return esc(f"{text} {unit}".strip())


def value_or_null(value: Any, reason: str | None) -> str:
    """An environment item: its value (dicts and lists as compact JSON) or ``null: reason``."""
    if value is None:
        return f'<span class="null">null: {esc(reason or "no reason recorded")}</span>'
    if isinstance(value, (dict, list)):
        return f"<code>{esc(json.dumps(value, sort_keys=True, default=str))}</code>"
    return esc(value)


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table: ``headers`` are plain text (escaped here), each cell is HTML already escaped by the caller."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    klass = f' class="{esc(cls)}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def absent(reason: str) -> str:
    """The note shown where a figure or table has no data."""
    return f'<p class="absent">Not shown: {esc(reason)}</p>'


def figure_block(svg: str, caption_html: str) -> str:
    """An inline SVG (rendered by :func:`harness.report.figures.to_svg`) with its caption (HTML)."""
    return f'<figure class="plot">{svg}<figcaption>{caption_html}</figcaption></figure>'


@dataclass(frozen=True)
class Section:
    """One titled part of the page; ``anchor`` is generated (never taken from a run's strings)."""

    anchor: str
    title: str
    body: str


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1150px;
padding:1em 2em;color:#1b1b1b;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.5em}nav ul{columns:2}table{border-collapse:collapse;margin:.6em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td code{font-size:.85em;word-break:break-all}
figure.plot{margin:1em 0}svg.plot{max-width:100%;height:auto;display:block}
figcaption{font-size:.88em;color:#444;max-width:60em}.null{color:#8a6d3b;font-style:italic}
.absent{color:#8a6d3b;background:#fcf8e3;padding:.4em .7em;border-left:3px solid #e0c060}
.warn{color:#a94442}.pass{color:#2e7d32}.fail{color:#c62828;font-weight:bold}
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}
"""


def page(title: str, intro: str, groups: Sequence[tuple[str, str, Sequence[Section]]]) -> str:
    """The whole document: a table of contents, then each group (anchor, heading, sections)."""
    toc = []
    for anchor, heading, sections in groups:
        inner = "".join(f'<li><a href="#{esc(s.anchor)}">{esc(s.title)}</a></li>' for s in sections)
        toc.append(f'<li><a href="#{esc(anchor)}">{esc(heading)}</a><ul>{inner}</ul></li>')
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>{intro}",
        f"<nav><ul>{''.join(toc)}</ul></nav>",
    ]
    for anchor, heading, sections in groups:
        parts.append(f'<section id="{esc(anchor)}"><h2>{esc(heading)}</h2>')
        parts.extend(
            f'<section id="{esc(s.anchor)}"><h3>{esc(s.title)}</h3>{s.body}</section>' for s in sections
        )
        parts.append("</section>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
