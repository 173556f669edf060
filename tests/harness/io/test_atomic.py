"""The atomic writer (harness/io/atomic.py): what it writes has the mode ``open`` would give it."""

from __future__ import annotations

import os
from pathlib import Path


def test_result_files_are_readable_by_other_users_as_open_would_make_them(tmp_path: Path) -> None:
    """Issue 17: the atomic writer's temporary file is 0600; the result must get the umask's mode, so a
    CI artifact uploader running as another user can read it."""
    import stat

    from streambench.harness.io.atomic import atomic_write_text

    old = os.umask(0o022)
    try:
        path = atomic_write_text(tmp_path / "result.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
