"""Adapters written against the import path before streambench 0.2 (``from adapters.contract import ...``)
get an error naming the new path (issue 26, item 1), not a bare ModuleNotFoundError, whether or not
another distribution's ``adapters`` (AdapterHub) is installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from streambench.adapters.registry import AdapterLoadError, moved_to, resolve

OLD_PLUGIN = """
from adapters.contract import AdapterInfo, Prediction, StreamingAdapter


class OldAdapter(StreamingAdapter):
    pass
"""


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "old_plugin_sb.py").write_text(OLD_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("old_plugin_sb", None)


def test_a_plugin_importing_the_old_contract_path_is_told_the_new_one(plugin_dir: Path) -> None:
    with pytest.raises(AdapterLoadError) as caught:
        resolve("old_plugin_sb:OldAdapter")
    message = str(caught.value)
    assert "imports 'adapters'" in message and "it is now 'streambench.adapters'" in message
    assert "from streambench import StreamingAdapter" in message


def test_a_plugin_importing_the_old_path_beside_another_adapters_package(
    plugin_dir: Path, tmp_path: Path
) -> None:
    """AdapterHub's ``adapters`` installed: ``adapters`` imports, ``adapters.contract`` does not."""
    other = plugin_dir / "adapters"
    other.mkdir()
    (other / "__init__.py").write_text("HUB = True\n")
    sys.modules.pop("adapters", None)
    try:
        with pytest.raises(AdapterLoadError, match=r"'streambench\.adapters\.contract'"):
            resolve("old_plugin_sb:OldAdapter")
    finally:
        sys.modules.pop("adapters", None)


def test_an_old_module_class_target_is_told_the_new_one() -> None:
    with pytest.raises(AdapterLoadError, match=r"it is now 'streambench\.adapters\.null'"):
        resolve("adapters.null:NullAdapter")


def test_other_import_errors_are_not_mistaken_for_the_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "needs_missing_sb.py").write_text("import surely_not_a_module_sb\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AdapterLoadError) as caught:
        resolve("needs_missing_sb:X")
    assert "streambench.adapters" not in str(caught.value) and "surely_not_a_module_sb" in str(caught.value)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("adapters", "streambench.adapters"),
        ("adapters.contract", "streambench.adapters.contract"),
        ("harness.cli", "streambench.harness.cli"),
        ("protocols.metrics.delay", "streambench.protocols.metrics.delay"),
        ("adaptersx", None),
        ("streambench.adapters", None),
        (None, None),
    ],
)
def test_moved_to(old: str | None, new: str | None) -> None:
    assert moved_to(old) == new
