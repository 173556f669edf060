"""streambench installs under one import namespace (issue 26, item 1) and exposes a small public API
(item 2).

The fast checks here read the source tree: every package of the three floors is listed in pyproject.toml
(a package left out would be missing from the wheel though present in an editable install), the links of
``streambench/`` point at the floors, and ``streambench.__all__`` is exactly the documented API (a name
that leaves it, or arrives unannounced, fails here). tests/test_install_collision.py installs the wheel
beside AdapterHub's ``adapters`` for real (slow tier).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

import streambench

ROOT = Path(__file__).resolve().parents[1]
FLOORS = ("adapters", "harness", "protocols")

PUBLIC_API = {
    # adapter authors: the data contract
    "AdapterInfo",
    "AdapterOptions",
    "Frame",
    "Prediction",
    "StreamingAdapter",
    # running from Python
    "RunConfig",
    "run",
    "resume",
    "Outcome",
    "RunResult",
    "ab",
    "RoundsConfig",
    "ABReport",
    # protocol authors
    "RunProtocol",
    "RunContext",
    "RunRecord",
    "Figure",
    "register",
    "__version__",
}
"""The public API (README, "Python API"). Changing it is a release note, not an accident."""


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_of_the_floors_is_in_the_wheel() -> None:
    on_disk = {"streambench"} | {
        "streambench." + ".".join(init.parent.relative_to(ROOT).parts)
        for floor in FLOORS
        for init in (ROOT / floor).rglob("__init__.py")
    }
    assert set(_setuptools()["packages"]) == on_disk


def test_each_floor_is_mapped_from_its_own_directory() -> None:
    assert _setuptools()["package-dir"] == {f"streambench.{floor}": floor for floor in FLOORS}


@pytest.mark.parametrize("floor", FLOORS)
def test_the_source_tree_links_each_floor_into_streambench(floor: str) -> None:
    link = ROOT / "streambench" / floor
    assert link.is_symlink() and link.resolve() == (ROOT / floor).resolve()


@pytest.mark.processes
@pytest.mark.parametrize("floor", FLOORS)
def test_a_floor_imported_under_its_old_top_level_name_says_where_it_went(floor: str) -> None:
    """From a checkout's root, ``import adapters`` would otherwise load a second copy of the floor."""
    done = subprocess.run([sys.executable, "-c", f"import {floor}"], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1
    assert f"the package is now 'streambench.{floor}'" in done.stderr.splitlines()[-1]


def test_the_public_api_is_exactly_the_documented_one() -> None:
    assert set(streambench.__all__) == PUBLIC_API
    for name in PUBLIC_API:
        assert getattr(streambench, name) is not None, name


@pytest.mark.processes
def test_help_lists_the_public_api() -> None:
    code = "import streambench; help(streambench)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    for name in PUBLIC_API - {"__version__"}:
        assert name in done.stdout, name


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Runner'"):
        _ = streambench.Runner  # type: ignore[attr-defined]


def test_the_package_is_marked_typed() -> None:
    """PEP 561: ``py.typed`` in the ``streambench`` package, declared as its package data (the wheel's
    content is checked in the slow tier below)."""
    assert (ROOT / "streambench" / "py.typed").is_file()
    assert "py.typed" in _setuptools()["package-data"]["streambench"]


@pytest.mark.slow
def test_the_wheel_ships_py_typed(tmp_path: Path) -> None:
    from tests.test_install_collision import _wheel

    names = zipfile.ZipFile(_wheel(tmp_path)).namelist()
    assert "streambench/py.typed" in names
    assert "streambench/harness/runs/interface.py" in names  # the floors, under one name
