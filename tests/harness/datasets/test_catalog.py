"""The data set catalog (harness/datasets/catalog.py): RunConfig.data selects any data set by ``kind``
(synthetic by default), the runner reads it, and a model's declared sample rate / frame size is checked
against the data's framing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.datasets.audio_files import AudioFilesConfig
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.config import RunConfig
from streambench.harness.results.files import load_result
from streambench.harness.runs.session import execute_run

RATE = 16000


def speech_dir(tmp_path: Path, rate: int = RATE) -> Path:
    """Two files: 2 s of quiet noise with a loud 0.5-1.5 s tone burst labelled speech (Audacity labels)."""
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        t = np.arange(2 * rate) / rate
        audio = 0.005 * rng.standard_normal(t.size)
        burst = (t >= 0.5) & (t < 1.5)
        audio[burst] += 0.3 * np.sin(2 * np.pi * 220 * t[burst])
        soundfile.write(str(tmp_path / f"{name}.wav"), audio.astype(np.float32), rate, subtype="FLOAT")
        (tmp_path / f"{name}.txt").write_text("0.5\t1.5\tspeech\n")
    return tmp_path


def audio_config(tmp_path: Path, **data: object) -> RunConfig:
    return RunConfig.model_validate(
        {
            "adapter": "tests.support:EnergyVadAdapter",
            "data": {"kind": "audio_files", "directory": str(tmp_path), "background_class": "non-speech"}
            | data,
            "engine": {"warmup_frames": 20},
            "protocol": {"bootstrap_resamples": 20, "deltas_ms": (0, 100)},
            "output_dir": tmp_path / "results",
            "run_id": "vad",
        }
    )


def test_kind_selects_the_data_set_and_synthetic_is_the_default() -> None:
    assert isinstance(RunConfig().data, SyntheticConfig)
    assert isinstance(RunConfig.model_validate({"data": {"num_streams": 2}}).data, SyntheticConfig)
    config = RunConfig.model_validate({"data": {"kind": "audio_files", "directory": "x"}})
    assert isinstance(config.data, AudioFilesConfig) and config.data.frame_samples == 512
    assert RunConfig.model_validate_json(config.model_dump_json()) == config  # round trip (event log, worker)


@pytest.mark.processes
def test_audio_files_run_end_to_end(tmp_path: Path) -> None:
    result, recordings, _ = execute_run(audio_config(speech_dir(tmp_path)))
    assert result.dataset == "audio_files" and result.seeds.dataset is None
    assert [r.stream_id for r in recordings] == ["a", "b"]
    assert result.metrics.classes == ["non-speech", "speech"]
    # 2 s at 16 kHz in frames of 512: 63 frames (the last one padded); speech frames by >= 50 % overlap
    assert recordings[0].num_frames == 63
    assert result.metrics.f1_at(0) > 0.95  # an energy detector on a clean tone burst
    assert load_result(tmp_path / "results" / "vad").dataset_config["kind"] == "audio_files"


@pytest.mark.processes
def test_rate_and_frame_size_are_checked_against_the_model(tmp_path: Path) -> None:
    config = audio_config(speech_dir(tmp_path), frame_samples=256)
    with pytest.raises(ValueError, match=r"needs frame_samples = 512, .* 256; set data.frame_samples = 512"):
        execute_run(config)
    config = audio_config(tmp_path, sample_rate_hz=8000)
    with pytest.raises(ValueError, match=r"needs sample_rate_hz = 16000, .* has 8000"):
        execute_run(config)


@pytest.mark.processes
def test_cli_reads_files_through_a_config_file(tmp_path: Path) -> None:
    speech_dir(tmp_path)
    toml = tmp_path / "vad.toml"
    toml.write_text(
        f'adapter = "tests.support:EnergyVadAdapter"\n[data]\nkind = "audio_files"\n'
        f'directory = "{tmp_path}"\nbackground_class = "non-speech"\n'
    )
    args = ["run", "--config", str(toml), "--output-dir", str(tmp_path / "out"), "--run-id", "cli"]
    res = CliRunner().invoke(app, [*args, "--no-progress", "--no-report", "--warmup-frames", "10"])
    assert res.exit_code == 0, res.output
    assert load_result(tmp_path / "out" / "cli").scored.scored_streams == 2
    res = CliRunner().invoke(app, [*args, "--streams", "3", "--no-progress"])
    assert res.exit_code == 2 and "data.num_streams: Extra inputs are not permitted" in res.output


@pytest.mark.processes
def test_ave_features_run_through_the_runner(tmp_path: Path) -> None:
    """AVE (seed 004 §6.1.1) through the online protocol: one 10-segment stream per annotated sample,
    29 classes, the reference model's matched filters bound to the features' sizes."""
    import h5py

    (tmp_path / "Annotations.txt").write_text(
        "Category&VideoID&Quality&StartTime&EndTime\nChurch bell&aaa&good&0&10\nBark&bbb&good&7&9\n"
    )
    rng = np.random.default_rng(0)
    for name, shape in (("audio", (2, 10, 128)), ("visual", (2, 10, 7, 7, 512))):
        with h5py.File(tmp_path / f"{name}.h5", "w") as handle:
            handle.create_dataset("avadataset", data=rng.standard_normal(shape).astype(np.float32))
    config = RunConfig.model_validate(
        {
            "data": {
                "kind": "ave",
                "annotations": str(tmp_path / "Annotations.txt"),
                "audio_features": str(tmp_path / "audio.h5"),
                "visual_features": str(tmp_path / "visual.h5"),
            },
            "engine": {"warmup_frames": 10},
            "protocol": {"bootstrap_resamples": 20},
            "output_dir": tmp_path / "results",
            "run_id": "ave",
        }
    )
    result, recordings, _ = execute_run(config)
    assert [r.num_frames for r in recordings] == [10, 10] and len(result.metrics.classes) == 29
    assert result.metrics.overall.accuracy.num_segments == 20
