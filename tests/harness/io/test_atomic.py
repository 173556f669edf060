"""The atomic writer (harness/io/atomic.py): what it writes has the mode ``open`` would give it."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import IO

import pytest

from streambench.harness.io.atomic import atomic_write


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


def test_a_write_that_fails_names_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    """A full disk or a file size limit (RLIMIT_FSIZE: ``[Errno 27] File too large``) fails the write
    without a file name; the error names the file being written, and the old one stays whole."""
    target = tmp_path / "result.json"
    target.write_text("old")

    def too_large(handle: IO[bytes]) -> None:
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    with pytest.raises(OSError, match=r"^\[Errno 27\] File too large: '.*result\.json'$") as raised:
        atomic_write(target, too_large)
    assert raised.value.errno == errno.EFBIG and raised.value.filename == str(target)
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
