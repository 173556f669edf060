"""HTML building blocks of the report, escaping by default: numbers, tables, sections and the page itself.

Every piece of HTML is a :class:`markupsafe.Markup` (the escaping string of Jinja2 and Flask), and any
other value placed into one is escaped on the way in (DESIGN.md "Results": reports escape every string they
show): :func:`markup` fills a template of this code's own markup (``Markup.format``), :func:`concat` joins
pieces (``Markup.join``), and every block below takes plain text or ``Markup`` wherever it takes content. So
a run id, an adapter name, an option value or an exception message is text wherever it lands, without a
call at each place; the only ``Markup`` not written as a literal here is an SVG the figure builder rendered
(:func:`streambench.harness.report.figures.to_svg`, whose text matplotlib escapes). The page is
self-contained: inline CSS, inline SVG, no script, no external URL. A number is shown only when it was
measured; a missing one is "—" with the reason.
The page never scrolls sideways at 1300 px: text wraps, a token too long for its line breaks
(``overflow-wrap: break-word``; ``anywhere`` in the value column of a key/value table, whose keys never
wrap, and in the comparison's headline tables, whose run names may be long), plots scale to the column
(``max-width``). Greyed (``invalid``): a timing that is not a measurement of the model (its run's
measurement is INVALID).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from streambench.harness.report.numbers import human

if TYPE_CHECKING:
    from typing_extensions import LiteralString

__all__ = [
    "Group",
    "Markup",
    "Section",
    "absent",
    "concat",
    "figure_block",
    "kv_list",
    "kv_table",
    "kv_value",
    "markup",
    "missing",
    "num",
    "page",
    "table",
    "value_or_null",
]


def markup(template: LiteralString, /, *values: object, **named: object) -> Markup:
    """``template`` (markup written in this code) with its ``{}`` fields filled: a ``Markup`` value goes in
    as it is, any other value as escaped text (``Markup.format``; format specs such as ``{:g}`` apply)."""
    return Markup(template).format(*values, **named)


def concat(parts: Iterable[object]) -> Markup:
    """The pieces one after another: ``Markup`` as it is, anything else escaped (``Markup.join``)."""
    return Markup("").join(map(escape, parts))


def num(value: float | int | None, digits: int = 4, unit: str = "", reason: str | None = None) -> Markup:
    """A measured number as escaped text (:func:`streambench.harness.report.numbers.human`: ``digits``
    significant digits, thousands separated), or the missing mark with the reason (:func:`missing`)."""
    if value is None:
        return missing(reason or "not measured")
    if isinstance(value, bool):
        return escape(value)
    return escape(f"{human(value, digits)} {unit}".strip())


def missing(reason: str) -> Markup:
    """A figure that was not measured: "—" and the reason, never a number."""
    return markup('<span class="null">— {}</span>', reason)


_NONE = Markup('<span class="null">none</span>')


def value_or_null(value: Any, reason: str | None) -> Markup:
    """An environment item: its value (a mapping as a key/value list, :func:`kv_list`) or the missing
    mark with its reason."""
    if value is None:
        return missing(reason or "no reason recorded")
    return kv_value(value)


def kv_value(value: Any) -> Markup:
    """A configuration value for reading: a mapping as a key/value list, a list of plain values as
    comma-separated text, ``None`` as "none", anything else as its text."""
    if isinstance(value, dict):
        return kv_list(value) if value else _NONE
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in value):
            return escape(", ".join(str(v) for v in value)) if value else _NONE
        return markup("<ol>{}</ol>", concat(markup("<li>{}</li>", kv_value(v)) for v in value))
    if value is None:
        return _NONE
    return escape(value)


def kv_list(mapping: dict[str, Any]) -> Markup:
    """A mapping as a definition list (``<dl class="kv">``), keys sorted, nested mappings nested: the
    readable form of a configuration that would otherwise be raw JSON."""
    items = (
        markup("<dt>{}</dt><dd>{}</dd>", key, kv_value(mapping[key])) for key in sorted(mapping, key=str)
    )
    return markup('<dl class="kv">{}</dl>', concat(items))


def kv_table(rows: Iterable[tuple[object, object]]) -> Markup:
    """A two-column table of facts: the key as a row header, the value beside it (each plain text or
    ``Markup``). No header row: a key/value table has no column names to show."""
    body = concat(markup('<tr><th scope="row">{}</th><td>{}</td></tr>', k, v) for k, v in rows)
    return markup('<table class="facts"><tbody>{}</tbody></table>', body)


def table(headers: Sequence[object], rows: Iterable[Sequence[object]], cls: str = "") -> Markup:
    """A table: each header and cell is plain text or ``Markup``. Headers that are all empty give no header
    row (a row of empty cells says nothing)."""
    head = concat(markup("<th>{}</th>", h) for h in headers)
    thead = markup("<thead><tr>{}</tr></thead>", head) if any(headers) else Markup()
    body = concat(markup("<tr>{}</tr>", concat(markup("<td>{}</td>", c) for c in row)) for row in rows)
    klass = markup(' class="{}"', cls) if cls else Markup()
    return markup("<table{}>{}<tbody>{}</tbody></table>", klass, thead, body)


def absent(reason: str) -> Markup:
    """The note shown where a figure or table has no data."""
    return markup('<p class="absent">Not shown: {}</p>', reason)


def figure_block(svg: Markup, caption: str) -> Markup:
    """An inline SVG (rendered by :func:`streambench.harness.report.figures.to_svg`) with its caption
    (plain text or ``Markup``)."""
    return markup('<figure class="plot">{}<figcaption>{}</figcaption></figure>', svg, caption)


@dataclass(frozen=True)
class Section:
    """One titled part of the page; ``anchor`` is generated (never taken from a run's strings); ``body``:
    ``Markup`` (plain text is shown as text)."""

    anchor: str
    title: str
    body: Markup


@dataclass(frozen=True)
class Group:
    """A heading and its sections. ``collapsed``: drawn inside a closed ``<details>`` whose summary line is
    ``summary`` (plain text or ``Markup``; empty: the heading), so the details of a run wait below what
    matters first."""

    anchor: str
    heading: str
    sections: Sequence[Section]
    collapsed: bool = False
    summary: str = ""


_CSS = Markup("""
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
""")


def _toc(groups: Sequence[Group]) -> Markup:
    """The table of contents: every group, and the sections of the groups shown open."""
    items = []
    for group in groups:
        inner = Markup()
        if not group.collapsed:
            inner = concat(markup('<li><a href="#{}">{}</a></li>', s.anchor, s.title) for s in group.sections)
        nested = markup("<ul>{}</ul>", inner) if inner else Markup()
        items.append(markup('<li><a href="#{}">{}</a>{}</li>', group.anchor, group.heading, nested))
    return markup("<nav><ul>{}</ul></nav>", concat(items))


def _group(group: Group) -> Markup:
    sections = concat(
        markup('<section id="{}"><h3>{}</h3>{}</section>', s.anchor, s.title, s.body) for s in group.sections
    )
    if group.collapsed:
        return markup(
            '<section id="{}"><details class="group"><summary>{}</summary>{}</details></section>',
            group.anchor,
            group.summary or group.heading,
            sections,
        )
    return markup('<section id="{}"><h2>{}</h2>{}</section>', group.anchor, group.heading, sections)


def page(title: str, intro: str, groups: Sequence[Group]) -> Markup:
    """The whole document: a table of contents, then each group, open or collapsed; ``intro`` is plain
    text or ``Markup``."""
    parts = [
        Markup("<!DOCTYPE html>"),
        Markup('<html lang="en"><head><meta charset="utf-8">'),
        Markup('<meta name="viewport" content="width=device-width, initial-scale=1">'),
        markup("<title>{}</title><style>{}</style></head><body>", title, _CSS),
        markup("<h1>{}</h1>{}", title, intro),
        _toc(groups),
        *(_group(group) for group in groups),
        Markup("</body></html>\n"),
    ]
    return Markup("\n").join(parts)
