"""``streambench data [KIND]`` (issue 17): each data set kind's modalities, payload shapes, frame rate,
classes and default streams, and its options — checked against streams the data sets actually build."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import soundfile
from typer.testing import CliRunner

from streambench.adapters.contract import Stream
from streambench.harness.cli import app
from streambench.harness.datasets import catalog
from streambench.harness.datasets.audio_files import AudioFilesConfig, AudioLabelPair
from streambench.harness.datasets.ave import AveConfig
from streambench.harness.datasets.descriptions import CONFIGS, describe, type_name
from streambench.harness.datasets.llp import LlpConfig
from streambench.harness.datasets.spoof import SpoofConfig
from streambench.harness.datasets.synthetic import SyntheticConfig

ROOT = Path(__file__).resolve().parents[3]


def invoke(*args: str) -> Any:
    done = CliRunner().invoke(app, ["data", *args])
    assert done.exit_code == 0, done.output
    return done


def as_json(*args: str) -> Any:
    return json.loads(invoke(*args, "--json").stdout)


def first_frame_shapes(stream: Stream) -> dict[str, list[int]]:
    frame = next(iter(stream.frames()))
    return {m: list(np.shape(v)) for m, v in frame.inputs.items() if v is not None}


def frame_rate(stream: Stream) -> float:
    return float(1.0 / np.diff(stream.frame_times).mean())


def check_against(doc: dict[str, Any], stream: Stream) -> None:
    """What the description says is what the stream holds."""
    assert {p["modality"]: p["shape"] for p in doc["payloads"]} == first_frame_shapes(stream)
    assert doc["modalities"] == list(stream.modalities)
    assert doc["frame_rate_hz"] == pytest.approx(frame_rate(stream))
    assert doc["num_classes"] == len(stream.classes) and doc["classes"] == list(stream.classes)
    assert doc["segment_length_s"] == stream.segment_length_s


def test_synthetic_shapes_rate_and_classes_are_those_of_a_built_stream() -> None:
    stream = catalog.make_streams(SyntheticConfig(seed=0, num_streams=1))[0]
    doc = as_json("synthetic")
    check_against(doc, stream)
    # the figures the issue asked to find without reading the code
    assert first_frame_shapes(stream) == {"audio": [64], "visual": [128]}
    assert len(stream.classes) == 29 and frame_rate(stream) == pytest.approx(25.0)
    assert doc["num_streams"] == SyntheticConfig().num_streams == 60
    assert doc["stream_duration_s"] == stream.duration_s == 10.0
    text = invoke("synthetic").stdout
    shown = ("[64]", "[128]", "29: background, Church bell", "25 frames/s", "60 streams x 10 s", "Mandolin")
    assert all(part in text for part in shown), text


def test_spoof_utterances() -> None:
    config = SpoofConfig(seed=0)
    stream = catalog.make_streams(config.model_copy(update={"num_utterances": 2}))[0]
    doc = as_json("synthetic_spoof")
    check_against(doc, stream)
    assert doc["num_streams"] == config.num_utterances and doc["stream_duration_s"] == stream.duration_s
    assert first_frame_shapes(stream) == {"audio": [config.frame_samples]}
    assert doc["classes"] == ["fake", "real"]


def test_audio_files_described_as_the_default_framing_reads_a_recording(tmp_path: Path) -> None:
    config = AudioFilesConfig(files=(AudioLabelPair(audio=tmp_path / "a.wav", labels=tmp_path / "a.txt"),))
    soundfile.write(tmp_path / "a.wav", np.zeros(16000, dtype=np.float32), config.sample_rate_hz)
    (tmp_path / "a.txt").write_text("0.1\t0.5\tspeech\n")
    stream = catalog.make_streams(config)[0]
    doc = as_json("audio_files")
    shapes = {p["modality"]: p["shape"] for p in doc["payloads"]}
    assert shapes == first_frame_shapes(stream) == {"audio": [512]}
    assert doc["frame_rate_hz"] == pytest.approx(frame_rate(stream)) == pytest.approx(31.25)
    assert doc["num_classes"] is None and doc["classes"] is None  # they come from the label files


def test_ave_and_llp_declarations_match_streams_of_the_released_layout(tmp_path: Path) -> None:
    annotations = "Category&VideoID&Quality&StartTime&EndTime\nBark&vid&good&2&5\n"
    (tmp_path / "Annotations.txt").write_text(annotations)
    for name, shape in (("audio_feature.h5", (1, 10, 128)), ("visual_feature.h5", (1, 10, 7, 7, 512))):
        with h5py.File(tmp_path / name, "w") as handle:
            handle.create_dataset("avadataset", data=np.zeros(shape, dtype=np.float32))
    ave = AveConfig(
        annotations=tmp_path / "Annotations.txt",
        audio_features=tmp_path / "audio_feature.h5",
        visual_features=tmp_path / "visual_feature.h5",
    )
    ave_stream = catalog.make_streams(ave)[0]
    check_against(as_json("ave"), ave_stream)
    assert as_json("ave")["stream_duration_s"] == ave_stream.duration_s

    header = "filename\tonset\toffset\tevent_labels\n"
    (tmp_path / "a.csv").write_text(header + "clip0000000_0_10\t0\t3\tSpeech\n")
    (tmp_path / "v.csv").write_text(header + "clip0000000_0_10\t2\t4\tDog\n")
    for folder, shape in (("audio", (10, 128)), ("visual", (80, 2048))):
        (tmp_path / folder).mkdir()
        np.save(tmp_path / folder / "clip0000000.npy", np.zeros(shape, dtype=np.float32))
    llp = LlpConfig(
        audio_labels=tmp_path / "a.csv",
        visual_labels=tmp_path / "v.csv",
        audio_features=tmp_path / "audio",
        visual_features=tmp_path / "visual",
    )
    check_against(as_json("llp"), catalog.make_streams(llp)[0])


@pytest.mark.parametrize("kind", catalog.KINDS)
def test_every_option_has_a_type_a_default_and_a_description(kind: str) -> None:
    doc = as_json(kind)
    model = CONFIGS[kind]
    fields = [name for name in model.model_fields if name != "kind"]
    assert [row["option"] for row in doc["options"]] == fields
    for row in doc["options"]:
        assert row["type"] and row["default"], row
        assert row["description"], f"{kind}.{row['option']} has no description"
    text = invoke(kind).stdout
    assert all(row["option"] in text for row in doc["options"])


def test_every_kind_of_the_catalog_is_listed() -> None:
    assert set(CONFIGS) == set(catalog.KINDS)
    listed = as_json()
    assert [doc["kind"] for doc in listed] == list(catalog.KINDS)
    text = invoke().stdout
    assert all(kind in text for kind in catalog.KINDS)
    assert describe("synthetic").model_dump() == next(d for d in listed if d["kind"] == "synthetic")


def test_an_unknown_kind_names_its_neighbour() -> None:
    done = CliRunner().invoke(app, ["data", "synthtic"])
    assert done.exit_code == 2
    assert "did you mean 'synthetic'" in done.output.lower() and "audio_files" in done.output


def test_type_names_are_readable() -> None:
    fields = AudioFilesConfig.model_fields
    assert type_name(fields["channels"].annotation) == "'mix' | 'first' | 'all'"
    assert type_name(fields["classes"].annotation) == "tuple[str, ...] | None"
    assert type_name(fields["directory"].annotation) == "Path | None"


@pytest.mark.processes
def test_describing_every_kind_imports_neither_torch_nor_scipy_nor_the_file_readers() -> None:
    """The command starts as fast as the CLI: a generated kind is built with numpy alone."""
    code = (
        "import sys; from typer.testing import CliRunner; from streambench.harness.cli import app; "
        "done = CliRunner().invoke(app, ['data', '--json']); assert done.exit_code == 0, done.output; "
        "print(sorted({'torch', 'scipy', 'h5py', 'soundfile'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_kind_completes_from_the_catalog() -> None:
    from streambench.harness.cli.completion import data_kinds as _complete_kind

    assert _complete_kind("synth") == ["synthetic", "synthetic_spoof"]
    assert _complete_kind("") == list(catalog.KINDS)
