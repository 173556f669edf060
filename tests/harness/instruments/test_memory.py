"""Tests of the memory probe (harness/instruments/memory.py; DESIGN.md "Instruments": memory)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from streambench.harness.instruments.memory import MemoryProbe, MemoryReport

MB50 = 50 * 1024 * 1024


def allocate_50mb() -> np.ndarray:
    block = np.ones(MB50 // 8, dtype=np.float64)
    block += 1.0  # touch every page
    return block


def test_peak_covers_an_allocation_made_inside_the_window() -> None:
    probe = MemoryProbe()
    probe.start()
    block = allocate_50mb()
    report = probe.stop()
    assert float(block[-1]) == 2.0
    assert report.peak_rss_bytes >= report.rss_start_bytes + int(0.95 * MB50)
    assert report.peak_rss_bytes >= report.rss_end_bytes >= report.rss_start_bytes + int(0.95 * MB50)
    assert json.loads(report.model_dump_json())["peak_rss_bytes"] == report.peak_rss_bytes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="window peak is a Linux feature")
def test_window_peak_excludes_an_earlier_peak() -> None:
    block = allocate_50mb()
    del block  # large numpy blocks are unmapped on free: RSS drops, the high-water mark stays
    probe = MemoryProbe()
    probe.start()
    report = probe.stop()
    if report.peak_rss_scope != "window":
        pytest.skip("this kernel does not let the process reset its RSS high-water mark")
    assert report.peak_rss_bytes < report.rss_start_bytes + MB50 // 2
    assert "VmHWM" in report.peak_rss_method


def test_falls_back_to_the_process_peak(tmp_path: Path) -> None:
    resource = pytest.importorskip("resource")
    probe = MemoryProbe(proc_root=tmp_path)  # no clear_refs / status here
    probe.start()
    block = allocate_50mb()
    report = probe.stop()
    unit = 1 if sys.platform == "darwin" else 1024
    process_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
    assert report.peak_rss_scope == "process"
    assert "ru_maxrss" in report.peak_rss_method
    assert report.peak_rss_bytes >= report.rss_start_bytes + int(0.95 * MB50)
    # the kernel's RSS counters are approximate per-CPU sums: the peak is the larger of the two reads
    assert report.peak_rss_bytes <= max(process_peak, report.rss_end_bytes)
    del block


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
def test_no_cuda_peak_without_a_device() -> None:
    probe = MemoryProbe()
    probe.start()
    report = probe.stop()
    assert report.peak_cuda_bytes is None and report.peak_cuda_reserved_bytes is None
    assert report.cuda_reason is not None and report.cuda_reason.startswith("no CUDA device")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_peak_covers_a_tensor() -> None:
    probe = MemoryProbe()
    probe.start()
    tensor = torch.ones(MB50 // 4, dtype=torch.float32, device="cuda")
    report = probe.stop()
    assert report.peak_cuda_bytes is not None and report.peak_cuda_bytes >= MB50
    assert report.cuda_reason is None
    del tensor


def test_stop_before_start_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="before start"):
        MemoryProbe().stop()


def test_report_requires_non_negative_sizes() -> None:
    with pytest.raises(ValueError):
        MemoryReport(
            peak_rss_bytes=-1,
            peak_rss_scope="window",
            peak_rss_method="x",
            rss_start_bytes=0,
            rss_end_bytes=0,
        )
