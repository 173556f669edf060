"""HTML building blocks of the report: escaping, numbers, tables, sections and the page itself.

Every string that reaches the page goes through :func:`esc` (``html.escape`` with quotes), including
run ids, adapter names, stream ids, stage names and environment values (DESIGN.md "Results": reports
escape every string they show). The page is self-contained: inline CSS, inline SVG, no script, no
external URL. A number is shown only when it was measured; a missing one is "—" with the reason.
The page never scrolls sideways at 1300 px: text wraps, a token too long for its line breaks
(``overflow-wrap: break-word``; ``anywhere`` in the value column of a key/value table, whose keys never
wrap, and in the comparison's headline tables, whose run names may be long), plots scale to the column
(``max-width``). Greyed (``invalid``): a timing that is not a measurement of the model (its run's
measurement is INVALID).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from streambench.harness.report.numbers import human

__all__ = [
    "Group",
    "Section",
    "absent",
    "esc",
    "figure_block",
    "kv_list",
    "kv_table",
    "kv_value",
    "missing",
    "num",
    "page",
    "table",
    "value_or_null",
]


def esc(value: object) -> str:
    """Any value as escaped HTML text."""
    return html.escape(str(value), quote=True)


def num(value: float | int | None, digits: int = 4, unit: str = "", reason: str | None = None) -> str:
    """A measured number as escaped text (:func:`streambench.harness.report.numbers.human`: ``digits``
    significant digits, thousands separated), or the missing mark with the reason (:func:`missing`)."""
    if value is None:
        return missing(reason or "not measured")
    if isinstance(value, bool):
        return esc(value)
    return esc(f"{human(value, digits)} {unit}".strip())


def missing(reason: str) -> str:
    """A figure that was not measured: "—" and the reason, never a number."""
    return f'<span class="null">— {esc(reason)}</span>'


def value_or_null(value: Any, reason: str | None) -> str:
    """An environment item: its value (a mapping as a key/value list, :func:`kv_list`) or the missing
    mark with its reason."""
    if value is None:
        return missing(reason or "no reason recorded")
    return kv_value(value)


def kv_value(value: Any) -> str:
    """A configuration value for reading: a mapping as a key/value list, a list of plain values as
    comma-separated text, ``None`` as "none", anything else as its text."""
    if isinstance(value, dict):
        return kv_list(value) if value else '<span class="null">none</span>'
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            return esc(", ".join(str(v) for v in value)) if value else '<span class="null">none</span>'
        return "<ol>" + "".join(f"<li>{kv_value(v)}</li>" for v in value) + "</ol>"
    if value is None:
        return '<span class="null">none</span>'
    return esc(value)


def kv_list(mapping: dict[str, Any]) -> str:
    """A mapping as a definition list (``<dl class="kv">``), keys sorted, nested mappings nested: the
    readable form of a configuration that would otherwise be raw JSON."""
    items = "".join(
        f"<dt>{esc(key)}</dt><dd>{kv_value(mapping[key])}</dd>" for key in sorted(mapping, key=str)
    )
    return f'<dl class="kv">{items}</dl>'


def kv_table(rows: Iterable[tuple[str, str]]) -> str:
    """A two-column table of facts: the key (plain text, escaped here) as a row header, the value (HTML
    escaped by the caller). No header row: a key/value table has no column names to show."""
    body = "".join(f'<tr><th scope="row">{esc(k)}</th><td>{v}</td></tr>' for k, v in rows)
    return f'<table class="facts"><tbody>{body}</tbody></table>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table: ``headers`` are plain text (escaped here), each cell is HTML already escaped by the caller.
    Headers that are all empty give no header row (a row of empty cells says nothing)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    thead = f"<thead><tr>{head}</tr></thead>" if any(headers) else ""
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    klass = f' class="{esc(cls)}"' if cls else ""
    return f"<table{klass}>{thead}<tbody>{body}</tbody></table>"


def absent(reason: str) -> str:
    """The note shown where a figure or table has no data."""
    return f'<p class="absent">Not shown: {esc(reason)}</p>'


def figure_block(svg: str, caption_html: str) -> str:
    """An inline SVG (rendered by :func:`streambench.harness.report.figures.to_svg`) with its caption
    (HTML)."""
    return f'<figure class="plot">{svg}<figcaption>{caption_html}</figcaption></figure>'


@dataclass(frozen=True)
class Section:
    """One titled part of the page; ``anchor`` is generated (never taken from a run's strings)."""

    anchor: str
    title: str
    body: str


@dataclass(frozen=True)
class Group:
    """A heading and its sections. ``collapsed``: drawn inside a closed ``<details>`` whose summary line is
    ``summary`` (HTML, escaped by the caller), so the details of a run wait below what matters first."""

    anchor: str
    heading: str
    sections: Sequence[Section]
    collapsed: bool = False
    summary: str = ""


_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1150px;
padding:1em 2em;color:#1b1b1b;line-height:1.4;overflow-wrap:break-word}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
h3{margin-top:1.5em}nav ul{columns:2}nav li{break-inside:avoid}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em;max-width:100%}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.facts th{background:#f7f7f7;font-weight:600;white-space:nowrap}table.facts td{overflow-wrap:anywhere}
code{font-size:.88em}td code,dd code{overflow-wrap:anywhere}
dl.kv{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.05em .8em;margin:0}
dl.kv dt{font-family:ui-monospace,monospace;font-size:.88em;color:#555;white-space:nowrap}
dl.kv dd{margin:0}dl.kv dl.kv{border-left:2px solid #eee;padding-left:.5em}
td ol{margin:0;padding-left:1.2em}table.headline td:first-child{min-width:11em}
table.headline th,table.headline td{overflow-wrap:anywhere}
.invalid,.small.invalid{color:#999}
.verdict-invalid{color:#555;background:#f2f2f2;padding:.4em .7em;border-left:3px solid #c62828}
p.verdict{font-size:1.05em;background:#f4f8fb;padding:.5em .8em;border-left:3px solid #3573a5}
figure.plot{margin:1em 0}svg.plot{max-width:100%;height:auto;display:block}
figcaption{font-size:.88em;color:#444;max-width:60em}.null{color:#8a6d3b;font-style:italic}
.absent{color:#8a6d3b;background:#fcf8e3;padding:.4em .7em;border-left:3px solid #e0c060}
.absent ul{margin:.3em 0}.small{font-size:.85em;color:#555}
.warn{color:#a94442}.pass{color:#2e7d32}.fail{color:#c62828;font-weight:bold}.differs{font-weight:bold}.nw{white-space:nowrap}
.why{border-left:3px solid #8a6d3b;padding-left:.5em}
details{margin:.5em 0}summary{cursor:pointer;font-weight:600}
details.group{border:1px solid #ddd;border-radius:4px;padding:.3em .8em;margin:.8em 0}
details.group>summary{font-size:1.15em;padding:.2em 0}
"""


def _toc(groups: Sequence[Group]) -> str:
    """The table of contents: every group, and the sections of the groups shown open."""
    items = []
    for group in groups:
        inner = (
            ""
            if group.collapsed
            else "".join(f'<li><a href="#{esc(s.anchor)}">{esc(s.title)}</a></li>' for s in group.sections)
        )
        items.append(
            f'<li><a href="#{esc(group.anchor)}">{esc(group.heading)}</a>'
            + (f"<ul>{inner}</ul>" if inner else "")
            + "</li>"
        )
    return f"<nav><ul>{''.join(items)}</ul></nav>"


def _group(group: Group) -> str:
    sections = "".join(
        f'<section id="{esc(s.anchor)}"><h3>{esc(s.title)}</h3>{s.body}</section>' for s in group.sections
    )
    if group.collapsed:
        summary = group.summary or esc(group.heading)
        return (
            f'<section id="{esc(group.anchor)}"><details class="group"><summary>{summary}</summary>'
            f"{sections}</details></section>"
        )
    return f'<section id="{esc(group.anchor)}"><h2>{esc(group.heading)}</h2>{sections}</section>'


def page(title: str, intro: str, groups: Sequence[Group]) -> str:
    """The whole document: a table of contents, then each group, open or collapsed."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>{intro}",
        _toc(groups),
        *(_group(group) for group in groups),
        "</body></html>\n",
    ]
    return "\n".join(parts)
