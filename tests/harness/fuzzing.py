"""Hypothesis settings and a scratch directory shared by the fuzz tests of the file readers
(tests/harness/io/test_lines_fuzz.py, test_atomic_fuzz.py, tests/harness/results/test_files_fuzz.py)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import HealthCheck, settings

FUZZ = settings(
    max_examples=75,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
FEW = settings(FUZZ, max_examples=40)


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A fresh directory per hypothesis example (the tmp_path fixture is one per test function)."""
    with tempfile.TemporaryDirectory(prefix="fuzz-") as name:
        yield Path(name)
