"""The model's files in the environment record: each file an adapter option names, hashed.

A TorchScript or ONNX file, a weights file passed to a factory: the adapter's options say which model ran
only as a path, and a path can be overwritten by a retrained model. Every string among the options (in
nested lists and dicts too, e.g. ``factory_kwargs``) that names an existing regular file, relative to the
current directory as the adapter resolves it, is recorded with its absolute path, size and SHA-256
(``hashlib``, read in 1 MiB blocks). Strings that name no file (class names, modalities) are not files.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["ModelFile", "file_digest", "model_files"]

ModelFile = dict[str, str | int]
"""``{"path": absolute path, "bytes": size, "sha256": hex digest}``."""

_BLOCK = 1 << 20


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, (list, tuple)):
        for k, item in enumerate(value):
            yield from _strings(item, f"{where}[{k}]")


def model_files(options: Mapping[str, Any], cwd: Path | None = None) -> dict[str, ModelFile]:
    """Option name (``path``, ``factory_kwargs.weights``) -> the file it names, for every option value
    that is an existing regular file; empty when the options name none."""
    base = cwd if cwd is not None else Path.cwd()
    found: dict[str, ModelFile] = {}
    for where, text in _strings(dict(options), ""):
        if not text or "\n" in text or len(text) > 4096:
            continue
        path = base / Path(text).expanduser()
        try:
            if not path.is_file():
                continue
            found[where.lstrip(".")] = {
                "path": str(path.resolve()),
                "bytes": path.stat().st_size,
                "sha256": file_digest(path),
            }
        except OSError:
            continue  # unreadable: not evidence of anything; the adapter's own load will say so
    return found
