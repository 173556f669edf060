"""Tests of the thread settings (harness/instruments/threads.py; seed 004 §6.2.2 固定随机种子与线程绑定)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from streambench.harness.instruments.threads import THREAD_ENV_VARS, ThreadConfig, apply, read_thread_env

ROOT = Path(__file__).resolve().parents[3]


def test_default_changes_nothing_and_records_what_is_in_force() -> None:
    intra, inter = torch.get_num_threads(), torch.get_num_interop_threads()
    record = apply()
    assert (record.intra_op, record.inter_op) == (intra, inter)
    assert (record.intra_op_before, record.inter_op_before) == (intra, inter)
    assert record.intra_op_applied and record.inter_op_applied
    assert record.intra_op_reason is None and record.inter_op_reason is None
    assert record.env == {name: os.environ.get(name) for name in THREAD_ENV_VARS}
    assert (torch.get_num_threads(), torch.get_num_interop_threads()) == (intra, inter)


def test_intra_op_is_set_and_read_back() -> None:
    original = torch.get_num_threads()
    try:
        record = apply(ThreadConfig(intra_op=1))
        assert record.intra_op == 1 == torch.get_num_threads()
        assert record.intra_op_before == original
        assert record.intra_op_applied and record.intra_op_reason is None
    finally:
        torch.set_num_threads(original)
    assert torch.get_num_threads() == original


def test_env_variables_are_set_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "STREAMBENCH_TEST_THREADS"):
        monkeypatch.delenv(name, raising=False)  # restored by monkeypatch after the test
    record = apply(ThreadConfig(env={"OMP_NUM_THREADS": "1", "STREAMBENCH_TEST_THREADS": "3"}))
    assert os.environ["OMP_NUM_THREADS"] == "1"
    assert record.env["OMP_NUM_THREADS"] == "1"
    assert record.env["MKL_NUM_THREADS"] is None
    assert record.env["STREAMBENCH_TEST_THREADS"] == "3"
    assert read_thread_env() == {name: os.environ.get(name) for name in THREAD_ENV_VARS}


def test_refused_inter_op_is_recorded_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    current = torch.get_num_interop_threads()

    def refuse(n: int) -> None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started")

    monkeypatch.setattr(torch, "set_num_interop_threads", refuse)
    record = apply(ThreadConfig(inter_op=current + 1))
    assert record.inter_op == current
    assert not record.inter_op_applied
    assert record.inter_op_reason is not None
    assert "once per process" in record.inter_op_reason
    assert "after parallel work has started" in record.inter_op_reason


def test_inter_op_equal_to_current_is_not_sent_to_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    def must_not_be_called(n: int) -> None:
        raise AssertionError("set_num_interop_threads called for a no-op")

    monkeypatch.setattr(torch, "set_num_interop_threads", must_not_be_called)
    record = apply(ThreadConfig(inter_op=torch.get_num_interop_threads()))
    assert record.inter_op_applied and record.inter_op_reason is None


def test_inter_op_set_once_then_refused_in_a_fresh_process() -> None:
    script = (
        "import json\n"
        "from streambench.harness.instruments.threads import ThreadConfig, apply\n"
        "first = apply(ThreadConfig(inter_op=1))\n"
        "second = apply(ThreadConfig(inter_op=2))\n"
        "print(json.dumps([first.model_dump(mode='json'), second.model_dump(mode='json')]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    assert first["inter_op"] == 1 and first["inter_op_applied"] is True
    assert second["inter_op"] == 1 and second["inter_op_applied"] is False
    assert "cannot set number of interop threads" in second["inter_op_reason"]


def test_thread_counts_must_be_positive() -> None:
    with pytest.raises(ValidationError):
        ThreadConfig(intra_op=0)
    with pytest.raises(ValidationError):
        ThreadConfig(inter_op=-1)
