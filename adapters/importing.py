"""Importing a model's code named by ``package.module`` (an adapter's ``module:Class``, a torch-module
``factory=``), as ``python -m`` finds it: ``sys.path`` first, then the working directory, which a console
script's ``sys.path`` lacks (Python's ``sys.path`` initialisation: ``python -m`` puts the working directory
first, a script its own directory). When the module is not found, the error names every directory searched
and the fix.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["ModuleNotFoundHere", "import_here", "not_found_hint", "offered_arguments", "resolve_callable"]


class ModuleNotFoundHere(ModuleNotFoundError):
    """The module's top-level package is on no directory searched; the message names them and the fix."""


def not_found_hint(module_name: str, searched: list[str]) -> str:
    """Which directories were searched for ``module_name``'s top-level package, and how to make it found."""
    top = module_name.split(".")[0]
    where = ", ".join(searched) if searched else "(none)"
    return (
        f"no directory searched holds the package or module {top!r} (searched, in order: {where}). "
        f"Run from the directory that holds {top}/ or {top}.py (the project's root), or add that directory "
        "to PYTHONPATH"
    )


def import_here(module_name: str) -> ModuleType:
    """Import ``module_name`` from ``sys.path``, then from the working directory (module docstring). Its
    top-level package found nowhere: :class:`ModuleNotFoundHere` naming the directories searched. Any
    other error (the module's own code failing, a missing dependency of it) propagates unchanged."""
    top = module_name.split(".")[0]
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != top:
            raise
        first = exc
    cwd = os.getcwd()
    searched = [entry or cwd for entry in sys.path]
    if cwd not in searched:
        sys.path.insert(0, cwd)
        searched.append(cwd)
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != top:  # found here; something it imports is missing
                raise
            sys.path.remove(cwd)
    raise ModuleNotFoundHere(f"{first}: {not_found_hint(module_name, searched)}", name=top) from None


def resolve_callable(spec: str, option: str) -> Callable[..., Any]:
    """The callable ``package.module:callable`` (``option`` names the setting in errors), its module
    imported by :func:`import_here`. ImportError (the module not found: the directories searched and the
    fix; or its own import failing) or ValueError (a malformed spec, a missing attribute, not callable),
    each naming the spec."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"{option} {spec!r}: expected 'package.module:callable'")
    try:
        module = import_here(module_name)
    except ImportError as exc:
        raise ImportError(f"{option} {spec!r}: cannot import {module_name!r}: {exc}") from exc
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ValueError(f"{option} {spec!r}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"{option} {spec!r} is not callable")
    return target


def offered_arguments(
    target: Callable[..., Any], given: Mapping[str, Any], offered: Mapping[str, Any], given_as: str
) -> dict[str, Any]:
    """``given`` plus each ``offered`` value whose name ``target``'s signature lists as a parameter (a
    ``**kwargs`` catch-all does not count) and ``given`` leaves out. An offered value of None is not
    passed; a parameter without a default that then gets nothing is a ValueError naming it and
    ``given_as``, the setting that can give it."""
    kwargs = dict(given)
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):  # a callable without a signature (builtin, C): nothing offered
        return kwargs
    for name, value in offered.items():
        parameter = parameters.get(name)
        if parameter is None or name in kwargs:
            continue
        if value is not None:
            kwargs[name] = value
        elif parameter.default is parameter.empty:
            raise ValueError(
                f"{getattr(target, '__qualname__', target)!r} takes {name!r}, which the data fills, but no "
                f"data is known: give it in {given_as}"
            )
    return kwargs
