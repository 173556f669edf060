"""Issue 18: under ``--isolate`` the adapter's memory is its worker's. The run reports the worker's peak
RSS beside the harness's (``resources.worker_peak_rss_bytes``), in ``result.json`` and the summary (the
sealed worker, the default since issue 24, is such a worker); in process (``--in-process``) that field is
null with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.results.files import load_result

BALLAST_MB = 256
ARGS = ["run", "--adapter", "tests.support:BallastAdapter", "--option", f"ballast_mb={BALLAST_MB}"]
ARGS += ["--streams", "2", "--duration", "5", "--warmup-frames", "0", "--no-progress", "--no-report"]


@pytest.mark.processes
def test_an_isolated_run_reports_the_workers_peak_beside_the_harnesss(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [*ARGS, "--isolate", "--output-dir", str(tmp_path), "--run-id", "iso"])
    assert res.exit_code == 0, res.output
    resources = load_result(tmp_path / "iso").resources
    assert resources.worker_peak_rss_bytes is not None
    assert resources.worker_peak_rss_bytes >= BALLAST_MB * 2**20  # the model's ballast is in it
    assert resources.worker_peak_rss_reason and "worker" in resources.worker_peak_rss_reason
    assert "harness process only" in resources.memory.peak_rss_method
    flat = " ".join(res.output.split())
    shown = f"adapter worker {resources.worker_peak_rss_bytes / 2**20:.0f} MiB"
    assert shown in flat and "peak RSS harness" in flat


@pytest.mark.processes
def test_in_process_the_worker_peak_is_null_with_the_reason(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [*ARGS, "--in-process", "--output-dir", str(tmp_path), "--run-id", "local"])
    assert res.exit_code == 0, res.output
    resources = load_result(tmp_path / "local").resources
    assert resources.worker_peak_rss_bytes is None
    assert resources.worker_peak_rss_reason and "this process" in resources.worker_peak_rss_reason
    assert resources.memory.peak_rss_bytes >= BALLAST_MB * 2**20  # the harness's probe sees it here
