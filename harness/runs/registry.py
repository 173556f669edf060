"""The one registry of protocols: short name -> ``module:Class`` of a :class:`RunProtocol`, imported on
first use (the lm-evaluation-harness convention), in the order the run store, ``compare`` and the report
list them. The command line, the sweep, the store and the report iterate :func:`protocols`; none of them
names a protocol.

A protocol defined elsewhere (a plug-in, a test) joins with :func:`register`; it is then found by
``streambench run --protocol NAME``, read by the store, compared and drawn in the report like the built-in
ones.
"""

from __future__ import annotations

import difflib
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where a protocol is loaded: listing the names costs no import (CLI start-up)
    from streambench.harness.runs.contract import ProtocolContract

    RunProtocol = ProtocolContract[Any, Any]

__all__ = [
    "BUILT_IN",
    "BUILT_IN_FILES",
    "DEFAULT",
    "UnknownProtocolError",
    "added",
    "get",
    "names",
    "protocols",
    "register",
    "result_file",
    "resumer",
    "unregister",
]

BUILT_IN: dict[str, str] = {
    "online": "streambench.harness.runs.online:OnlineProtocol",
    "robustness": "streambench.harness.runs.robustness:RobustnessProtocol",
    "causality": "streambench.harness.runs.causality.protocol:CausalityProtocol",
    "detection": "streambench.harness.runs.detection:DetectionProtocol",
    "stability": "streambench.harness.runs.stability:StabilityProtocol",
    "hysteresis": "streambench.harness.runs.hysteresis:HysteresisProtocol",
    "capacity": "streambench.harness.runs.capacity:CapacityProtocol",
}
"""The built-in protocols, in their listing order (a run directory's result files are read in it)."""
BUILT_IN_FILES: dict[str, str] = {
    "online": "result.json",
    "robustness": "robustness.json",
    "causality": "causality.json",
    "detection": "detection.json",
    "stability": "stability.json",
    "hysteresis": "hysteresis.json",
    "capacity": "capacity.json",
}
"""The result file each built-in protocol writes (its ``result_file``; tests/harness/runs/test_registry.py
holds them equal): what a run directory holds is known without importing a protocol (``streambench runs``
starts in a fraction of a second)."""
DEFAULT = "online"
"""What ``streambench run`` runs without ``--protocol``."""

_targets: dict[str, str | RunProtocol] = dict(BUILT_IN)
_loaded: dict[str, RunProtocol] = {}


class UnknownProtocolError(ValueError):
    """No protocol of that name; the message offers the close names and lists the known ones."""


def register(protocol: RunProtocol, replace: bool = False) -> None:
    """Add a protocol (an instance); its ``name`` must be new unless ``replace``."""
    if protocol.name in _targets and not replace:
        raise ValueError(f"a protocol named {protocol.name!r} is registered already")
    _targets[protocol.name] = protocol
    _loaded.pop(protocol.name, None)


def added() -> list[RunProtocol]:
    """The protocols joined by :func:`register` (not the built-in ones): what a process of a sweep's own
    must register again to know them."""
    return [target for target in _targets.values() if not isinstance(target, str)]


def unregister(name: str) -> None:
    """Remove a protocol added by :func:`register` (a built-in one is restored)."""
    _loaded.pop(name, None)
    if name in BUILT_IN:
        _targets[name] = BUILT_IN[name]
    else:
        _targets.pop(name, None)


ENTRY_POINT_GROUP = "streambench.protocols"
"""Installed plug-ins name their protocols in this entry-point group (``name = "module:Class"``, a
:class:`RunProtocol` subclass, instantiated without arguments); a registered name cannot be taken."""


def _plugins() -> dict[str, tuple[str, str]]:
    """name -> (``module:Class``, the distribution that declared it), from installed metadata only."""
    import importlib.metadata  # here: the command line's start-up imports none of it

    found: dict[str, tuple[str, str]] = {}
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name not in _targets:
            dist = entry.dist.name if entry.dist is not None else "an unknown distribution"
            found.setdefault(entry.name, (entry.value, dist))
    return found


def names() -> list[str]:
    return [*_targets, *_plugins()]


def get(name: str) -> RunProtocol:
    """The protocol called ``name``; :class:`UnknownProtocolError` with "did you mean" otherwise."""
    if name in _loaded:
        return _loaded[name]
    target = _targets.get(name)
    plugin = _plugins().get(name) if target is None else None
    if target is None and plugin is None:
        known = names()
        close = difflib.get_close_matches(name, known, n=2)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownProtocolError(f"--protocol {name!r}: expected one of {', '.join(known)}{hint}")
    from streambench.harness.runs.contract import ProtocolContract

    protocol: RunProtocol | None
    if plugin is not None:
        module_name, _, class_name = plugin[0].partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        if not (isinstance(cls, type) and issubclass(cls, ProtocolContract)):
            raise TypeError(
                f"--protocol {name!r}: the entry point of {plugin[1]} ({ENTRY_POINT_GROUP}) names "
                f"{plugin[0]!r}, which is not a RunProtocol subclass"
            )
        target = plugin[0]
        protocol = cls()
    elif isinstance(target, str):
        module_name, _, class_name = target.partition(":")
        protocol = getattr(importlib.import_module(module_name), class_name)()
    else:
        protocol = target

    if not isinstance(protocol, ProtocolContract) or protocol.name != name:
        raise TypeError(f"registry entry {name!r} -> {target!r} is not a RunProtocol named {name!r}")
    _loaded[name] = protocol
    return protocol


def result_file(name: str) -> str:
    """The file the protocol called ``name`` writes into a run directory: a built-in protocol's without
    importing it (:data:`BUILT_IN_FILES`), any other's from the loaded protocol."""
    if name not in _loaded and _targets.get(name) == BUILT_IN.get(name) and name in BUILT_IN_FILES:
        return BUILT_IN_FILES[name]
    return get(name).result_file


def protocols() -> list[RunProtocol]:
    """Every registered protocol, in listing order."""
    return [get(name) for name in names()]


def resumer(run_dir: Path) -> RunProtocol:
    """The protocol that can finish ``run_dir`` (``streambench run --resume``); none can: the one whose
    result file the directory holds (its resume says it cannot resume a run), else the default one, whose
    resume says what is missing there."""
    able = [p for p in protocols() if p.can_resume(run_dir)]
    if able:
        return able[0]
    owners = [p for p in protocols() if (run_dir / p.result_file).is_file()]
    return owners[0] if owners else get(DEFAULT)
