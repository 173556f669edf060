"""Never a partial write (issue 7; harness/io/atomic.py): a writer interrupted at any byte, or by a
failing fsync, leaves the old file or none, and no temporary file; the score file writer refuses bad
input before it writes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streambench.harness.io import atomic
from streambench.harness.io.atomic import atomic_write, atomic_write_text
from streambench.harness.io.score_file import write_score_file
from tests.harness.fuzzing import FEW, FUZZ, scratch
from tests.harness.io.test_lines_fuzz import FINITE

# ---------------------------------------------------------------------------------------------------
# never a partial write


class Interrupted(Exception):
    pass


def _listing(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}


@FUZZ
@given(
    old=st.none() | st.binary(max_size=200),
    new=st.binary(max_size=2000),
    data=st.data(),
    failure=st.sampled_from([Interrupted, OSError, KeyboardInterrupt]),
)
def test_atomic_write_leaves_old_file_or_none(
    old: bytes | None, new: bytes, data: st.DataObject, failure: type[BaseException]
) -> None:
    fail_after = data.draw(st.none() | st.integers(0, len(new)), "fail_after")

    def write(handle: Any) -> None:
        if fail_after is None:
            handle.write(new)
            return
        handle.write(new[:fail_after])
        handle.flush()
        raise failure("disk on fire")

    with scratch() as d:
        target = d / "out.bin"
        if old is not None:
            target.write_bytes(old)
        before = _listing(d)
        if fail_after is None:
            assert atomic_write(target, write) == target
            assert _listing(d) == {"out.bin": new}
        else:
            with pytest.raises(failure, match="disk on fire"):
                atomic_write(target, write)
            assert _listing(d) == before  # the old content or no file, and no temporary file


@FUZZ
@given(old=st.none() | st.text(max_size=50), text=st.text(max_size=200), fsync_fails=st.booleans())
def test_atomic_write_text_unencodable_or_failing_fsync(
    old: str | None, text: str, fsync_fails: bool
) -> None:
    """Surrogates cannot be encoded; a failing fsync (full disk) is the failure after the bytes are out."""
    with scratch() as d, pytest.MonkeyPatch.context() as mp:
        target = d / "out.txt"
        if old is not None:
            target.write_text(old, encoding="utf-8", errors="surrogatepass")
        before = _listing(d)
        if fsync_fails:

            def fsync(fd: int) -> None:
                raise OSError(28, "No space left on device")

            mp.setattr(atomic.os, "fsync", fsync)
        try:
            atomic_write_text(target, text)
        except (UnicodeEncodeError, OSError):
            assert fsync_fails or any(0xD800 <= ord(c) <= 0xDFFF for c in text)
            assert _listing(d) == before
        else:
            assert not fsync_fails
            assert _listing(d) == {"out.txt": text.encode("utf-8")}


BAD_LABELS = st.sampled_from([2, -1, 0.5, math.nan, "real"])


BAD_SCORES = st.sampled_from([math.nan, math.inf, -math.inf])


@FUZZ
@given(
    labels=st.lists(st.sampled_from([0, 1]), min_size=1, max_size=10),
    data=st.data(),
    old=st.none() | st.just(b"- - real 0.5\n"),
)
def test_score_file_writer_refuses_before_writing(
    labels: list[Any], data: st.DataObject, old: bytes | None
) -> None:
    scores: list[float] = data.draw(st.lists(FINITE, min_size=len(labels), max_size=len(labels)))
    i = data.draw(st.integers(0, len(labels) - 1))
    if data.draw(st.booleans(), "bad label"):
        labels[i] = data.draw(BAD_LABELS)
    else:
        scores[i] = data.draw(BAD_SCORES)
    with scratch() as d:
        target = d / "scores.txt"
        if old is not None:
            target.write_bytes(old)
        before = _listing(d)
        with pytest.raises(ValueError, match=r"labels|scores") as info:
            write_score_file(target, np.array(labels, dtype=object if labels[i] == "real" else None), scores)
        assert f"index {i}" in str(info.value) or "dtype" in str(info.value)
        assert _listing(d) == before


@FEW
@given(labels=st.lists(st.booleans(), min_size=1, max_size=10), old=st.none() | st.just(b"- - real 0.5\n"))
def test_score_file_writer_on_a_full_disk(labels: list[bool], old: bytes | None) -> None:
    """The bytes are out but fsync fails: the old file stays whole (or absent), no temporary file."""
    with scratch() as d, pytest.MonkeyPatch.context() as mp:
        target = d / "scores.txt"
        if old is not None:
            target.write_bytes(old)
        before = _listing(d)

        def fsync(fd: int) -> None:
            raise OSError(28, "No space left on device")

        mp.setattr(atomic.os, "fsync", fsync)
        with pytest.raises(OSError, match="No space left"):
            write_score_file(target, np.array(labels), np.linspace(0.0, 1.0, len(labels)))
        assert _listing(d) == before
