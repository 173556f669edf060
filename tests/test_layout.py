"""Tests are named after the module they test (issue 26, in the manner of torchmetrics' test suite): a
test file ``tests/<floor>/<room>/.../test_<module>.py`` mirrors ``<floor>/<room>/.../<module>.py``, and the
tests of one module split by aspect or cost are ``test_<module>_<aspect>.py``. A package's ``__init__.py``
counts as the package's name (harness/api/__init__.py: tests/harness/api/test_api.py). Files that test the
repository as a whole stay at the top of tests/ (:data:`CROSS_CUTTING`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

CROSS_CUTTING = frozenset(
    {
        "test_docs.py",  # every page of docs/ and README.md
        "test_docs_commands.py",  # every command the pages show
        "test_install_collision.py",  # the wheel beside another distribution's `adapters`
        "test_layering.py",  # the import rules of the three floors and the rooms
        "test_layout.py",  # this file
        "test_packaging.py",  # the wheel's packages and the public API
        "test_plugins.py",  # installed plug-ins through both registries (adapters and protocols)
        "test_source_history.py",  # no comment or docstring of the source cites an issue
    }
)
"""Test files at the top of tests/ that test no one module."""

RULE = (
    "a test file tests/<floor>/<room>/.../test_<module>[_<aspect>].py sits where "
    "<floor>/<room>/.../<module>.py is (a package's __init__.py counts as the package's name); files that "
    "test the repository as a whole are listed in tests/test_layout.py CROSS_CUTTING"
)


def modules_in(directory: Path) -> set[str]:
    """The names a test file in the mirror of ``directory`` may be named after: its modules, and the
    package itself when it is one."""
    if not directory.is_dir():
        return set()
    names = {p.stem for p in directory.glob("*.py") if p.name != "__init__.py"}
    if (directory / "__init__.py").is_file():
        names.add(directory.name)
    return names


def misnamed(tests: Path, source: Path, cross_cutting: frozenset[str] = CROSS_CUTTING) -> list[str]:
    """Every test file under ``tests`` named after no module of its mirrored directory under ``source``,
    each with the names that directory offers."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        relative = path.relative_to(tests)
        shown = path.relative_to(tests.parent)
        if relative.parent == Path("."):
            if relative.name not in cross_cutting:
                found.append(f"{shown.as_posix()}: at the top of tests/ but not in CROSS_CUTTING")
            continue
        stem = path.stem.removeprefix("test_")
        names = modules_in(source / relative.parent)
        if not names:
            found.append(f"{shown.as_posix()}: {relative.parent.as_posix()}/ holds no module")
        elif not any(stem == name or stem.startswith(name + "_") for name in names):
            found.append(f"{shown.as_posix()}: test_<module> for a <module> of {', '.join(sorted(names))}")
    return found


def test_every_test_file_is_named_after_a_module() -> None:
    offenders = misnamed(TESTS, ROOT)
    assert not offenders, f"{len(offenders)} test file(s) named after no module ({RULE}):\n" + "\n".join(
        offenders
    )


def test_the_rule_names_what_matches_no_module(tmp_path: Path) -> None:
    """The check itself, on a planted tree: a module's name, its aspect, a package's name and a listed
    top-level file pass; a feature's name, a room that does not exist and an unlisted top-level file
    fail."""
    source, tests = tmp_path / "src", tmp_path / "tests"
    for path in ("harness/execution/process_tree.py", "harness/api/__init__.py", "adapters/null.py"):
        (source / path).parent.mkdir(parents=True, exist_ok=True)
        (source / path).write_text("")
    passing = [
        "harness/execution/test_process_tree.py",
        "harness/execution/test_process_tree_orphans.py",
        "harness/api/test_api.py",
        "adapters/test_null.py",
        "test_docs.py",
    ]
    failing = [
        "harness/execution/test_orphans.py",
        "harness/execution/test_process.py",
        "harness/io/test_safe_text.py",
    ]
    for path in [*passing, *failing, "test_python_api.py"]:
        (tests / path).parent.mkdir(parents=True, exist_ok=True)
        (tests / path).write_text("")
    assert set(misnamed(tests, source)) == {
        "tests/harness/execution/test_orphans.py: test_<module> for a <module> of process_tree",
        "tests/harness/execution/test_process.py: test_<module> for a <module> of process_tree",
        "tests/harness/io/test_safe_text.py: harness/io/ holds no module",
        "tests/test_python_api.py: at the top of tests/ but not in CROSS_CUTTING",
    }
