"""Atomic file writes: a temporary file in the target's directory, flushed and fsynced, then renamed.

A reader sees either the old file or the whole new one, never half (DESIGN.md "Results"). The file gets
the mode an ``open()`` would give it (``0o666`` less the umask), not ``mkstemp``'s private ``0o600``, so
a CI artifact uploader running as another user can read the results.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> Path:
    """Call ``write(handle)`` on a temporary binary file, then rename it over ``path``. An ``OSError``
    that names no file (``[Errno 28] No space left on device``) is raised again naming ``path``."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _file_mode())
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None and exc.errno is not None:
            # a write's own error (a full disk, a file size limit) names no file: the one being written
            raise type(exc)(exc.errno, exc.strerror, str(target)) from exc
        raise
    return target


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` as UTF-8 atomically."""
    data = text.encode("utf-8")
    return atomic_write(path, lambda handle: handle.write(data))
