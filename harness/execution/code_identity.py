"""Which files a worker's adapter was imported from, and a hash of each: what tells an A/B comparison's
sides apart (DESIGN.md, "Causality": "no regression" is held against the base's own code, each side's
files recorded).

The worker names the files (:func:`code_files`: the module of the adapter's class, and the module of every
option that names a ``module:callable``, such as a ``torch-module`` factory); this process reads and hashes
them (:func:`identify`), so a hash is never the worker's word. The file a worker names is its word: a side
whose files are the other side's is refused (harness/runs/ab.py), not trusted to differ.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CodeFile", "code_files", "identify", "same_code"]

_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
"""An option value naming ``package.module:attribute``."""


class CodeFile(BaseModel):
    """One file of a side's code."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["adapter", "option"] = Field(description="the adapter's class, or an option's callable")
    name: str = Field(description="module:Class, or option=module:callable")
    file: str | None = Field(description="the file it was imported from (null: no file, e.g. built in)")
    sha256: str | None = Field(None, description="of the file's bytes, read by the harness (null: unread)")


def _module_file(module_name: str) -> str | None:
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    return os.path.realpath(path) if isinstance(path, str) else None


def code_files(adapter: Any) -> list[dict[str, Any]]:
    """Worker side, once the adapter is built: the files its code came from (see the module docstring)."""
    cls = type(adapter)
    name = f"{cls.__module__}:{cls.__qualname__}"
    found = [{"role": "adapter", "name": name, "file": _module_file(cls.__module__)}]
    options = getattr(adapter, "options", None)
    fields: dict[str, Any] = options.model_dump() if isinstance(options, BaseModel) else {}
    for key, value in sorted(fields.items()):
        if isinstance(value, str) and _CALLABLE.match(value):
            module = value.partition(":")[0]
            if module in sys.modules:
                found.append({"role": "option", "name": f"{key}={value}", "file": _module_file(module)})
    return found


_MOST_BYTES = 64 * 2**20
"""A named file larger than this is not hashed (a source file is far smaller; a worker names the path)."""


def _sha256(path: str) -> str | None:
    """The file's hash; None for what is not a regular file of at most :data:`_MOST_BYTES` (a worker
    could name a device or a pipe)."""
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _MOST_BYTES:
            return None
        digest = hashlib.sha256()
        with open(path, "rb") as source:
            for block in iter(lambda: source.read(1 << 16), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def identify(reported: Any) -> list[CodeFile] | None:
    """This process's record of what a worker reported (``None``: it reported nothing, e.g. an older
    checkout's worker): each file hashed here."""
    if not isinstance(reported, list):
        return None
    files = []
    for item in reported:
        code = CodeFile.model_validate(item)
        files.append(code.model_copy(update={"sha256": _sha256(code.file) if code.file else None}))
    return files


def same_code(base: list[CodeFile] | None, head: list[CodeFile] | None) -> bool:
    """Whether two sides imported their code from the very same files (both reported, all named)."""
    if not base or not head:
        return False
    files = [{(c.role, c.name.partition("=")[0], c.file) for c in side} for side in (base, head)]
    return all(c.file for c in base + head) and files[0] == files[1]
