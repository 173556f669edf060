"""The source explains the code; its history is in CHANGELOG.md and the commit messages. No comment or
docstring under harness/, protocols/, adapters/ or streambench/ cites a project issue by its number
("issue 24", "issues 12 and 14", "Issue #3"), and neither does a string the code shows users (a message,
a field description, a reason stored in a result file: "before 0.2.0" says when, an issue number does
not). Citations of the source documents ("seed 004 §6.2.3") stay: they cite the metric definitions."""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ("harness", "protocols", "adapters", "streambench")

_ISSUE = re.compile(r"\b[Ii]ssues? #?\d+")


def sources(root: Path = ROOT, floors: tuple[str, ...] = FLOORS) -> Iterator[Path]:
    """Every ``.py`` file under ``floors``, each once: streambench/'s links to the three floors are not
    followed (os.walk does not follow them, and a linked file is skipped)."""
    for floor in floors:
        for directory, _, names in sorted(os.walk(root / floor)):
            for name in sorted(names):
                path = Path(directory) / name
                if name.endswith(".py") and not path.is_symlink():
                    yield path


def docstring_lines(source: str) -> set[int]:
    """The first lines of the string literals that are statements of their own: module, class and
    function docstrings, and the attribute docstrings written under an assignment."""
    return {
        node.value.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def issue_references(path: Path, root: Path = ROOT, runtime: bool = True) -> list[str]:
    """``file:line: text`` of every issue number in a comment or a string literal of ``path``
    (``runtime``: every string; else docstrings only)."""
    source = path.read_text(encoding="utf-8")
    docstrings = docstring_lines(source)
    where = path.relative_to(root).as_posix()
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        checked = runtime or token.start[0] in docstrings
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING and checked):
            for match in _ISSUE.finditer(token.string):
                line = token.start[0] + token.string.count("\n", 0, match.start())
                found.append(f"{where}:{line}: {match.group(0)}")
    return found


def test_no_comment_docstring_or_message_cites_an_issue() -> None:
    found = [reference for path in sources() for reference in issue_references(path)]
    assert not found, (
        f"{len(found)} issue reference(s) in comments or strings (say what the code does; its history "
        "goes in CHANGELOG.md):\n" + "\n".join(found)
    )


def test_the_check_finds_planted_references(tmp_path: Path) -> None:
    """Comments, module, function and attribute docstrings are checked, wherever the number sits in a
    docstring of several lines, and so is a string the code uses at run time (only with ``runtime=False``
    is it not); a link to a floor and words such as "issues" without a number are not."""
    floor = tmp_path / "harness"
    floor.mkdir()
    (floor / "a.py").write_text(
        '"""A module.\n\nSince issue 28 it works."""\n'
        "\n"
        "X = 1  # see Issue #3\n"
        '"""The limit (issues 12 and 14)."""\n'
        "\n"
        "\n"
        "def f() -> str:\n"
        '    """Rank #1 of 3 issues; seed 004 §6.2.3."""\n'
        '    return "null before issue 27"\n'
    )
    (tmp_path / "streambench").mkdir()
    (tmp_path / "streambench" / "harness").symlink_to(floor, target_is_directory=True)
    paths = list(sources(tmp_path))
    assert paths == [floor / "a.py"]
    docstrings = ["harness/a.py:3: issue 28", "harness/a.py:5: Issue #3", "harness/a.py:6: issues 12"]
    assert issue_references(paths[0], tmp_path, runtime=False) == docstrings
    assert issue_references(paths[0], tmp_path) == [*docstrings, "harness/a.py:11: issue 27"]
