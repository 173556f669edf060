"""The model's files hashed into the environment record (issue 17), and a run that used one file refusing
the results of a model whose file was retrained in place (same path, other bytes)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streambench.harness.cli import app
from streambench.harness.instruments.model_files import model_files

ADAPTER = '''
from pydantic import Field
from streambench.adapters.null import NullAdapter, NullOptions


class WeightsOptions(NullOptions):
    weights: str = Field(description="a weights file")
    extra: dict = Field(default_factory=dict, description="nested options")


class WeightsAdapter(NullAdapter):
    """The null adapter, told where its weights are (it reads them, as a real model would)."""

    Options = WeightsOptions

    def __init__(self, options=None, device="cpu"):
        super().__init__(options, device)
        with open(options.weights, "rb") as handle:
            self.weights = handle.read()
'''


def test_each_file_the_options_name_is_hashed_nested_too(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"\x00onnx" * 1000)
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "head.pt").write_bytes(b"weights")
    options = {
        "path": "model.onnx",
        "classes": ["a", "b"],  # strings that name no file are not files
        "factory_kwargs": {"weights": "w/head.pt", "directory": "w"},  # a directory is not a model file
        "modalities": ["audio"],
    }
    found = model_files(options, cwd=tmp_path)
    assert set(found) == {"path", "factory_kwargs.weights"}
    assert found["path"] == {
        "path": str((tmp_path / "model.onnx").resolve()),
        "bytes": 5000,
        "sha256": hashlib.sha256(b"\x00onnx" * 1000).hexdigest(),
    }
    assert found["factory_kwargs.weights"]["sha256"] == hashlib.sha256(b"weights").hexdigest()
    assert model_files({"classes": ["a"]}, cwd=tmp_path) == {}


@pytest.mark.processes
def test_a_model_retrained_in_place_cannot_join_the_run_of_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_weights_adapter.py").write_text(ADAPTER)
    weights = tmp_path / "model.bin"
    weights.write_bytes(b"epoch 1")
    run = ["run", "--adapter", "my_weights_adapter:WeightsAdapter", "--option", "weights=model.bin"]
    run += ["--streams", "2", "--duration", "2", "--warmup-frames", "0", "--run-id", "r"]
    run += ["--no-progress", "--no-report"]
    runner = CliRunner()
    first = runner.invoke(app, run)
    assert first.exit_code == 0, first.output
    environment = json.loads((tmp_path / "results" / "r" / "result.json").read_text())["environment"]
    recorded = environment["model_files"]["value"]["weights"]
    assert recorded["sha256"] == hashlib.sha256(b"epoch 1").hexdigest()
    assert recorded["path"] == str(weights.resolve())

    same = runner.invoke(app, [*run, "--protocol", "robustness"])  # the same model may add its results
    assert same.exit_code == 0, same.output
    weights.write_bytes(b"epoch 2")  # retrained, written over the same path
    other = runner.invoke(app, [*run, "--protocol", "causality"])
    assert other.exit_code == 2
    assert "model file weights" in other.output and "content changed" in other.output
    assert not (tmp_path / "results" / "r" / "causality.json").exists()


@pytest.mark.processes
def test_a_registry_adapter_records_that_no_file_was_named(tmp_path: Path) -> None:
    from streambench.harness.instruments.manifest import collect_manifest

    manifest = collect_manifest({}, adapter_options={"classes": ["a"]}, nvml={})
    assert manifest.model_files.value is None
    assert manifest.model_files.reason == "the adapter's options name no file"
