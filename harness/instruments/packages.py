"""Package versions for the environment manifest (harness/instruments/manifest.py): the project's own
stack, and the distributions behind the modules an adapter's process loaded.

Versions come from ``importlib.metadata`` in the harness's process; for the adapter's process, which
names the top-level modules it loaded once the model was built, this module maps them to the installed
distributions that provide them (``importlib.metadata.packages_distributions``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib import metadata

from pydantic import JsonValue

__all__ = ["adapter_distributions", "package_versions", "version"]

_CORE_PACKAGES = ("streambench", "torch", "numpy", "pydantic", "psutil", "nvidia-ml-py", "onnxruntime")
_OPTIONAL_PACKAGES = ("onnxruntime-gpu", "av", "torchvision", "torchaudio", "opencv-python", "decord")


def version(package: str) -> str | None:
    """The installed version of distribution ``package``; None when it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def package_versions() -> dict[str, JsonValue]:
    """Versions of the project's runtime dependencies, the core stack and installed optional ones."""
    names = list(_CORE_PACKAGES)
    try:
        requires = metadata.requires("streambench") or []
    except metadata.PackageNotFoundError:
        requires = []
    for requirement in requires:
        match = re.match(r"[A-Za-z0-9._-]+", requirement)
        if match and "extra ==" not in requirement:
            names.append(match.group(0))
    names += [p for p in _OPTIONAL_PACKAGES if version(p) is not None]
    return {name: version(name) for name in sorted(set(names), key=str.lower)}


def adapter_distributions(modules: Sequence[str], new_modules: Sequence[str] = ()) -> dict[str, JsonValue]:
    """The installed distributions that provide ``modules`` (top-level module names loaded in the adapter's
    process), with their versions (``importlib.metadata.packages_distributions``, read here, in the
    harness's process: the adapter's process only names its modules). ``loaded_by_adapter``: the
    distributions of ``new_modules``, those the adapter's import and construction loaded;
    ``without_distribution``: loaded modules no installed distribution provides (a checkout's own code)."""
    owners = metadata.packages_distributions()
    found: dict[str, JsonValue] = {}
    new: set[str] = set()
    orphans: list[JsonValue] = []
    for module in sorted(set(modules) | set(new_modules)):
        dists = owners.get(module, [])
        if not dists:
            orphans.append(module)
        for dist in dists:
            found[dist] = version(dist)
            if module in new_modules:
                new.add(dist)
    return {
        "distributions": dict(sorted(found.items(), key=lambda kv: kv[0].lower())),
        "loaded_by_adapter": [name for name in sorted(new, key=str.lower)],
        "without_distribution": orphans,
    }
