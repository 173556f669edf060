"""Plug-ins found through package entry points (issue 26, item 4; lm-evaluation-harness's registry):
``streambench.adapters`` and ``streambench.protocols``, checked against their base class."""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest

from streambench.adapters.registry import AdapterLoadError, create_adapter, known, plugins, resolve
from streambench.harness.runs import registry

PLUGIN_MODULE = """
from streambench import AdapterInfo, Prediction, StreamingAdapter
from streambench.adapters.null import NullAdapter
from streambench.harness.runs.online import OnlineProtocol


class PluginAdapter(NullAdapter):
    pass


class NotAnAdapter:
    pass


class PluginProtocol(OnlineProtocol):
    name = "plugin-online"


class NotAProtocol:
    name = "not-a-protocol"
"""

ENTRY_POINTS = """
[streambench.adapters]
plugin-null = sb_plugin_mod:PluginAdapter
plugin-bad = sb_plugin_mod:NotAnAdapter
null = sb_plugin_mod:PluginAdapter

[streambench.protocols]
plugin-online = sb_plugin_mod:PluginProtocol
not-a-protocol = sb_plugin_mod:NotAProtocol
online = sb_plugin_mod:PluginProtocol
"""


@pytest.fixture
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A distribution on sys.path, as pip would leave it: a module and its .dist-info."""
    (tmp_path / "sb_plugin_mod.py").write_text(PLUGIN_MODULE)
    info = tmp_path / "sb_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sb-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    sys.modules.pop("sb_plugin_mod", None)
    for name in ("plugin-online", "not-a-protocol"):
        registry._loaded.pop(name, None)


def test_an_installed_adapter_is_found_by_its_name(installed_plugin: Path) -> None:
    assert plugins()["plugin-null"] == ("sb_plugin_mod:PluginAdapter", "sb-plugin")
    assert known()["plugin-null"] == "sb_plugin_mod:PluginAdapter"
    assert type(create_adapter("plugin-null")).__name__ == "PluginAdapter"


def test_a_plugin_cannot_take_a_built_in_name(installed_plugin: Path) -> None:
    assert "null" not in plugins() and known()["null"] == "streambench.adapters.null:NullAdapter"
    assert "online" not in registry._plugins()
    assert type(registry.get("online")).__name__ == "OnlineProtocol"


def test_an_entry_point_that_is_not_an_adapter_is_refused_naming_its_distribution(
    installed_plugin: Path,
) -> None:
    refused = r"entry point of sb-plugin .* not a StreamingAdapter subclass"
    with pytest.raises(AdapterLoadError, match=refused):
        resolve("plugin-bad")


def test_an_installed_protocol_is_found_and_checked(installed_plugin: Path) -> None:
    assert "plugin-online" in registry.names()
    protocol = registry.get("plugin-online")
    assert type(protocol).__name__ == "PluginProtocol" and protocol.name == "plugin-online"
    with pytest.raises(TypeError, match=r"entry point of sb-plugin .* not a RunProtocol subclass"):
        registry.get("not-a-protocol")


def test_without_the_plugin_its_names_are_unknown() -> None:
    assert "plugin-null" not in known() and "plugin-online" not in registry.names()
    with pytest.raises(AdapterLoadError, match="unknown adapter 'plugin-null'"):
        resolve("plugin-null")
