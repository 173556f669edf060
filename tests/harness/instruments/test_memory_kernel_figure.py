"""The worker's peak memory is read by the parent from the kernel (harness/instruments/memory.py:
``process_peak_rss_bytes``), not taken from the worker: a planted model that rewrites the worker's own
report (``offender-memory-hider``) is still seen holding its memory."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution import isolation
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.instruments.memory import process_peak_rss_bytes

HOLD_MB = 300


def _peak_of_hider(tmp_path: Path) -> int | None:
    config = RunConfig(
        adapter="offender-memory-hider",
        adapter_options={"hold_mb": HOLD_MB},
        data=SyntheticConfig(num_streams=1, duration_s=1.0, seed=3),
        engine={"warmup_frames": 0},  # type: ignore[arg-type]
        output_dir=tmp_path,
    )
    with IsolatedEngine(config, config.isolation) as worker:
        worker.warm_up()
        worker.run_stream(worker.stream_ids[0])
        return worker.peak_rss_bytes


@pytest.mark.processes
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_a_model_that_rewrites_its_memory_report_is_still_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    peak = _peak_of_hider(tmp_path)
    assert peak is not None and peak >= HOLD_MB * 2**20
    # the cheat is real: on the worker's own word the same model holds (almost) nothing
    monkeypatch.setattr(isolation, "process_peak_rss_bytes", lambda pid: None)
    told = _peak_of_hider(tmp_path)
    assert told is not None and told < 2**20


def test_peak_rss_of_a_process_is_its_kernel_high_water_mark(tmp_path: Path) -> None:
    status = tmp_path / "4242" / "status"
    status.parent.mkdir()
    status.write_text("Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t  1234 kB\nVmRSS:\t  1000 kB\n")
    assert process_peak_rss_bytes(4242, proc_root=tmp_path) == 1234 * 1024
    assert process_peak_rss_bytes(4243, proc_root=tmp_path) is None  # gone, or no /proc
    if Path("/proc/self/status").exists():
        mine = process_peak_rss_bytes(os.getpid())
        assert mine is not None
        assert mine == pytest.approx(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, rel=0.05)
