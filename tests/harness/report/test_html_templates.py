"""Escaping by default holds by construction (harness/report/html.py): every ``Markup`` in the code is
made from a string literal, its template, so a value can only reach a page through ``Markup.format`` or
``Markup.join``, which escape it. A ``Markup`` of anything else (an f-string, a variable: a value marked
safe after the fact) is refused here, but in :data:`TRUSTED`: the builder of the SVG matplotlib wrote
(:func:`streambench.harness.report.figures.to_svg`) and the template helper itself."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FLOORS = ("harness", "protocols", "adapters")
MARKING = {"Markup", "markup"}
"""``markupsafe.Markup`` and :func:`streambench.harness.report.html.markup`: their first argument is
taken as HTML."""
TRUSTED = {("harness/report/figures.py", "to_svg"), ("harness/report/html.py", "markup")}
"""(module, function) allowed to make ``Markup`` of a value: the SVG a figure builder rendered, and
:func:`~streambench.harness.report.html.markup` itself, whose template every caller gives as a literal
(checked here as ``markup(...)`` calls)."""


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def marked_values(path: Path, relative: str) -> list[str]:
    """Each call in ``path`` that makes ``Markup`` of something other than a string literal, as
    ``module:line function``, outside :data:`TRUSTED`."""
    found = []

    def visit(node: ast.AST, owner: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            owner = node.name
        if isinstance(node, ast.Call) and _name(node.func) in MARKING and node.args:
            first = node.args[0]
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            if not literal and (relative, owner) not in TRUSTED:
                found.append(f"{relative}:{node.lineno} {owner}")
        for child in ast.iter_child_nodes(node):
            visit(child, owner)

    visit(ast.parse(path.read_text(encoding="utf-8")), "<module>")
    return found


def test_every_markup_is_made_from_a_literal_template() -> None:
    offenders = [
        found
        for floor in FLOORS
        for path in sorted((ROOT / floor).rglob("*.py"))
        for found in marked_values(path, path.relative_to(ROOT).as_posix())
    ]
    assert not offenders, "Markup made of a value, not a literal template (escape it instead):\n" + "\n".join(
        offenders
    )


def test_the_rule_finds_a_value_marked_safe(tmp_path: Path) -> None:
    """The check itself: literals pass; an f-string, a variable and a concatenation are found."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from markupsafe import Markup\n"
        "def ok(x):\n    return Markup('<p>{}</p>').format(x) + Markup()\n"
        "def bad(x):\n    return Markup(f'<p>{x}</p>')\n"
        "def worse(x):\n    return markup(x, 1)\n"
        "def worst(x):\n    return Markup('<p>' + x)\n"
    )
    assert marked_values(planted, "planted.py") == [
        "planted.py:5 bad",
        "planted.py:7 worse",
        "planted.py:9 worst",
    ]
