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

from streambench.harness.instruments.threads import (
    THREAD_ENV_VARS,
    AdapterThreads,
    ThreadConfig,
    ThreadRecord,
    apply,
    oversubscription,
    read_adapter_threads,
    read_thread_env,
    settle,
    thread_summary,
    usable_cores,
)

ROOT = Path(__file__).resolve().parents[3]


def test_default_is_one_intra_op_thread_and_records_what_is_in_force() -> None:
    # issue 27 item 1: batch 1 is measured with one intra-op thread unless asked otherwise
    intra, inter = torch.get_num_threads(), torch.get_num_interop_threads()
    try:
        record = apply()
        assert ThreadConfig().intra_op == 1 and "intra_op" not in ThreadConfig().model_fields_set
        assert (record.intra_op, record.inter_op) == (1, inter) == (torch.get_num_threads(), inter)
        assert (record.intra_op_before, record.inter_op_before) == (intra, inter)
        assert record.intra_op_applied and record.inter_op_applied
        assert record.intra_op_reason is None and record.inter_op_reason is None
        assert record.env == {name: os.environ.get(name) for name in THREAD_ENV_VARS}
    finally:
        torch.set_num_threads(intra)


@pytest.mark.parametrize("leave", ["torch", "TORCH", None])
def test_torch_or_null_leaves_torchs_own_count(leave: str | None) -> None:
    intra = torch.get_num_threads()
    config = ThreadConfig.model_validate({"intra_op": leave})
    assert config.intra_op is None and config.model_dump()["intra_op"] is None
    record = apply(config)
    assert record.intra_op == intra == record.intra_op_before and record.intra_op_applied
    with pytest.raises(ValidationError):
        ThreadConfig.model_validate({"intra_op": "all"})


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


@pytest.mark.processes
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


# --- what governed the model in its process, who chose it, and oversubscription (issue 27 item 1) ------


def _seen(
    intra: int, applied: int | None = None, cores: int | None = 2, process: str = "worker"
) -> AdapterThreads:
    return AdapterThreads.model_validate(
        {"process": process, "torch_imported": True, "intra_op": intra, "inter_op": 2,
         "applied_intra_op": intra if applied is None else applied, "cores": cores}
    )  # fmt: skip


def _record(config: ThreadConfig) -> ThreadRecord:
    return ThreadRecord(
        requested=config, intra_op_before=2, inter_op_before=2, intra_op=1, inter_op=2,
        intra_op_applied=True, inter_op_applied=True, env={},
    )  # fmt: skip


def test_settle_names_who_chose_the_count() -> None:
    default, configured, leave = ThreadConfig(), ThreadConfig(intra_op=1), ThreadConfig(intra_op=None)
    assert settle(_record(default), default, _seen(1), True).set_by == "streambench default"
    assert settle(_record(configured), configured, _seen(1), True).set_by == "configuration"
    assert settle(_record(leave), leave, _seen(2), False).set_by == "torch default"
    by_adapter = settle(_record(default), default, _seen(4, applied=1, cores=8), True)
    assert by_adapter.set_by == "adapter" and by_adapter.adapter_process == _seen(4, applied=1, cores=8)
    assert settle(_record(default), default, None, True) == _record(default)  # a worker that does not say


def test_oversubscription_counts_the_feeding_thread_of_a_sealed_worker() -> None:
    message = oversubscription(2, 2, fed_by_parent=True)
    assert message is not None and message.startswith(
        "2 torch intra-op threads in the adapter's process plus the harness's thread that feeds it frames "
        "on 2 usable cores"
    )
    assert oversubscription(2, 2, fed_by_parent=False) is None  # in process: the caller is one of the two
    assert oversubscription(3, 2, fed_by_parent=False) is not None
    assert oversubscription(1, 1, fed_by_parent=True) is None  # one thread alone never oversubscribes
    assert oversubscription(4, None, fed_by_parent=True) is None  # cores unknown: no claim
    default = ThreadConfig(intra_op=None)
    warned = settle(_record(default), default, _seen(2), fed_by_parent=True)
    assert warned.warning == message


def test_a_model_without_torch_is_recorded_as_such() -> None:
    config = ThreadConfig()
    seen = AdapterThreads(process="worker", torch_imported=False, cores=2)
    record = settle(_record(config), config, seen, True)
    assert record.set_by is None and record.warning is None
    assert thread_summary(record).startswith(
        "the adapter's process did not import torch: its thread setting (1)"
    )


def test_summary_is_one_line_with_the_count_its_source_and_the_cores() -> None:
    config = ThreadConfig()
    record = settle(_record(config), config, _seen(1), True)
    assert (
        thread_summary(record)
        == "torch intra-op threads 1 (streambench default), inter-op 2 · 2 usable cores"
    )
    assert thread_summary(_record(config)) == "torch intra-op threads 1, inter-op 2 (the harness's process)"


def test_read_adapter_threads_reads_torch_here() -> None:
    seen = read_adapter_threads("harness", 3)
    assert seen.torch_imported and seen.intra_op == torch.get_num_threads()
    assert seen.applied_intra_op == 3 and seen.cores == usable_cores() == len(os.sched_getaffinity(0))
