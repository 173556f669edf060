"""A run records what governed the model and what the data was (issue 27 items 1 and 5): the thread
setting read in the adapter's process and who chose it, an oversubscription warning, the packages the
adapter's process loaded, and each audio file's own rate and channels with the conversions named in the
run's warnings, its ``show`` and its report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.execution.config import RunConfig
from streambench.harness.instruments.threads import usable_cores
from streambench.harness.runs.catalog import load_headline, write_report
from streambench.harness.runs.online import online_warnings
from streambench.harness.runs.session import execute_run


def _recordings(directory: Path) -> Path:
    """a: 8 kHz stereo with a .labels track (Audacity's export); b: 16 kHz mono with a .txt track."""
    directory.mkdir()
    rng = np.random.default_rng(0)
    soundfile.write(str(directory / "a.wav"), 0.1 * rng.standard_normal((4000, 2)), 8000)
    (directory / "a.labels").write_text("0.1\t0.3\tspeech\n")
    soundfile.write(str(directory / "b.wav"), 0.1 * rng.standard_normal(8000), 16000)
    (directory / "b.txt").write_text("0.1\t0.3\tspeech\n")
    return directory


def _config(tmp_path: Path, **changes: object) -> RunConfig:
    tree = {
        "adapter": "null",
        "data": {"kind": "audio_files", "directory": str(_recordings(tmp_path / "rec"))},
        "engine": {"warmup_frames": 5},
        "output_dir": tmp_path / "results",
        "run_id": "run",
        **changes,
    }
    return RunConfig.model_validate(tree)


@pytest.mark.processes
def test_an_in_process_run_records_threads_packages_and_conversions(tmp_path: Path) -> None:
    result, _, run_dir = execute_run(_config(tmp_path, isolate=False))
    threads = result.threads
    assert threads.set_by == "streambench default" and threads.warning is None
    assert threads.adapter_process is not None and threads.adapter_process.process == "harness"
    assert threads.adapter_process.intra_op == 1 == result.environment.torch_intra_op_threads.value
    packages = result.environment.adapter_packages.value
    assert isinstance(packages, dict) and "numpy" in packages["distributions"]  # type: ignore[operator]
    sources = result.environment.data_sources.value
    assert isinstance(sources, dict)
    assert sources["a"] == {
        "file": str(tmp_path / "rec" / "a.wav"),
        "sample_rate_hz": 8000,
        "channels": 2,
        "resampled_to_hz": 16000,
        "channels_taken": "mix",
    }
    warnings = online_warnings(result)
    assert any(w.startswith("1 of 2 audio files resampled from 8000 Hz to 16000 Hz (a;") for w in warnings)
    assert any(w.startswith("1 of 2 audio files mixed to mono") for w in warnings)
    head = load_headline(run_dir)
    assert head.threads == "torch intra-op threads 1 (streambench default), inter-op 2 · " + (
        f"{usable_cores()} usable cores"
    )
    assert head.data is not None and head.data.framing is not None and head.data.framing.frame_samples == 512
    shown = CliRunner().invoke(app, ["show", str(run_dir)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "threads: torch intra-op threads 1 (streambench default)" in shown.output
    assert "1 of 2 audio files resampled from 8000 Hz to 16000 Hz" in shown.output
    report = write_report([str(run_dir)], tmp_path / "report.html").read_text()
    assert "torch intra-op threads 1 (streambench default)" in report
    assert "audio files resampled from 8000 Hz to 16000 Hz" in report


@pytest.mark.slow
def test_a_sealed_run_reads_the_threads_in_the_worker_and_warns_when_they_oversubscribe(
    tmp_path: Path,
) -> None:
    pytest.importorskip("silero_vad")
    many = max(2, usable_cores() or 1)  # with the harness's feeding thread: more than the cores
    config = _config(tmp_path, adapter="silero-vad", threads={"intra_op": many})
    vad = config.data.model_copy(update={"background_class": "non-speech"})
    result, _, _ = execute_run(config.model_copy(update={"data": vad}))
    seen = result.threads.adapter_process
    assert seen is not None and seen.process == "worker" and seen.torch_imported
    assert seen.intra_op == many and result.threads.set_by == "configuration"
    assert result.threads.warning is not None
    assert result.threads.warning.startswith(f"{many} torch intra-op threads in the adapter's process plus")
    assert result.threads.warning in online_warnings(result)
    packages = result.environment.adapter_packages.value
    assert isinstance(packages, dict) and "torch" in packages["loaded_by_adapter"]  # type: ignore[operator]
