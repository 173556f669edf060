"""The sweep's local executor (harness/sweep/executors.py): cores pinned per worker."""

from __future__ import annotations

import os

import pytest

from streambench.harness.sweep.executors import pinned_cores


def test_pinned_cores_hands_out_distinct_cores_and_restores_the_affinity() -> None:
    before = os.sched_getaffinity(0)
    if len(before) < 2:
        pytest.skip("needs two cores")
    with pinned_cores(1) as first:
        assert first is not None and os.sched_getaffinity(0) == set(first)
        with pinned_cores(1, among=sorted(before)) as second:
            assert second is not None and set(second).isdisjoint(first)
    assert os.sched_getaffinity(0) == before
