"""A model's code named by module: found from the working directory as ``python -m`` finds it, and when it
is found nowhere, an error naming every directory searched and the fix (issue 37 item 3)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from streambench.adapters.importing import (
    ModuleNotFoundHere,
    import_here,
    offered_arguments,
    resolve_callable,
)


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory is ``tmp_path``, which is not on sys.path (a console script's case)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    return tmp_path


def test_a_package_in_the_working_directory_is_found(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = elsewhere / "cwd_only_pkg_37"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text("def build(classes, size=3):\n    return (classes, size)\n")
    monkeypatch.delitem(sys.modules, "cwd_only_pkg_37", raising=False)
    monkeypatch.delitem(sys.modules, "cwd_only_pkg_37.models", raising=False)
    build = resolve_callable("cwd_only_pkg_37.models:build", "factory")
    assert build(("a",)) == (("a",), 3)


def test_a_module_found_nowhere_names_the_directories_searched_and_the_fix(elsewhere: Path) -> None:
    with pytest.raises(ModuleNotFoundHere) as info:
        import_here("kws_nowhere_37.models")
    message = str(info.value)
    assert "No module named 'kws_nowhere_37'" in message
    assert f"{elsewhere}" in message and sys.path[-1] in message  # the working directory and sys.path
    assert "Run from the directory that holds kws_nowhere_37/ or kws_nowhere_37.py" in message
    assert "PYTHONPATH" in message
    assert str(elsewhere) not in sys.path  # the working directory was tried, not left on sys.path
    with pytest.raises(ImportError, match=r"factory 'kws_nowhere_37\.models:build': cannot import"):
        resolve_callable("kws_nowhere_37.models:build", "factory")


def test_a_missing_dependency_of_a_found_module_is_not_a_search_path_problem(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (elsewhere / "needs_dep_37.py").write_text("import no_such_dependency_37\n")
    monkeypatch.delitem(sys.modules, "needs_dep_37", raising=False)
    with pytest.raises(ModuleNotFoundError) as info:
        import_here("needs_dep_37")
    assert not isinstance(info.value, ModuleNotFoundHere) and info.value.name == "no_such_dependency_37"


def build_named(classes: tuple[str, ...], input_dims: dict[str, int], hidden: int = 4) -> dict[str, Any]:
    return {"classes": classes, "input_dims": input_dims, "hidden": hidden}


def build_catch_all(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def build_optional(classes: tuple[str, ...] | None = None) -> dict[str, Any]:
    return {"classes": classes}


def test_data_bound_values_are_offered_to_the_parameters_a_signature_names() -> None:
    data = {"classes": ("bg", "yes"), "input_dims": {"audio": 40}}
    assert offered_arguments(build_named, {"hidden": 8}, data, "factory_kwargs") == {
        "hidden": 8,
        "classes": ("bg", "yes"),
        "input_dims": {"audio": 40},
    }
    # what the user gives wins; a **kwargs catch-all is offered nothing (it may forward to a constructor)
    given = offered_arguments(build_named, {"classes": ("x",)}, data, "factory_kwargs")
    assert given["classes"] == ("x",)
    assert offered_arguments(build_catch_all, {}, data, "factory_kwargs") == {}
    # no data known: an optional parameter keeps its default, a required one is refused by name
    assert offered_arguments(build_optional, {}, {"classes": None}, "factory_kwargs") == {}
    with pytest.raises(ValueError, match="takes 'input_dims', which the data fills, but no data is known"):
        offered_arguments(build_named, {}, {"classes": ("a",), "input_dims": None}, "factory_kwargs")
