"""The README's end-to-end example (issue 8): generated speech files with Audacity labels, the Silero VAD
adapter (both variants), the online protocol -> F1@Δt, latency and RTF, with examples/vad.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from streambench.harness.execution.config import RunConfig
from streambench.harness.io.config_file import load_config_file
from streambench.harness.runs.session import execute_run
from tests.data.speech_like import write_example

pytest.importorskip("onnxruntime")
pytest.importorskip("silero_vad")

ROOT = Path(__file__).resolve().parents[2]
F1_FLOOR = 0.85  # measured 0.974 for both variants (3 recordings, F1@0 ms Strict frame micro)


@pytest.fixture(scope="module")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("vad") / "speech"
    write_example(directory)
    return directory


@pytest.mark.processes
@pytest.mark.parametrize("adapter", ["silero-vad", "silero-vad-onnx"])
def test_the_example_configuration_runs_both_variants(speech: Path, adapter: str) -> None:
    tree = load_config_file(ROOT / "examples" / "vad.toml")
    tree["data"]["directory"] = str(speech)
    config = RunConfig.model_validate(
        {**tree, "adapter": adapter, "output_dir": speech.parent / "results", "run_id": adapter}
    )
    result, recordings, _ = execute_run(config)
    assert [r.stream_id for r in recordings] == ["speech-0", "speech-1", "speech-2"]
    assert result.metrics.classes == ["non-speech", "speech"]
    assert result.metrics.f1_at(0) >= F1_FLOOR and result.metrics.f1_at(512) >= F1_FLOOR
    assert result.metrics.overall.speed.latency.n == 3 * 204  # 6.5 s at 16 kHz: 203 frames + a padded one
    assert result.adapter_info.sample_rate_hz == 16000 and result.adapter_info.frame_samples == 512


def test_the_readme_shows_the_example() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "python -m tests.data.speech_like speech" in readme
    assert "streambench run --config examples/vad.toml" in readme
