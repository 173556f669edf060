"""Tests of the environment manifest (harness/instruments/manifest.py, and its host items:
harness/instruments/host_items.py; seed 004 §6.2.2 环境锁定清单)."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy
import pytest
import torch
from pydantic import ValidationError

from streambench.harness.instruments import host_items
from streambench.harness.instruments.host_items import Item, git_state, read_cpu_model
from streambench.harness.instruments.manifest import (
    FINGERPRINT_FIELDS,
    NVML_FIELDS,
    EnvironmentManifest,
    collect_manifest,
    fingerprint,
)
from streambench.harness.instruments.threads import THREAD_ENV_VARS, AdapterThreads

ROOT = Path(__file__).resolve().parents[3]
SEEDS = {"dataset": 0, "torch": 0, "split": 0}


def fake_root(tmp_path: Path, governor: str | None = "performance", clocksource: str = "tsc") -> Path:
    files = {
        "proc/cpuinfo": "processor\t: 0\nvendor_id\t: Test\nmodel name\t: Test CPU 9000 @ 3.00GHz\n",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": clocksource + "\n",
        "etc/os-release": 'NAME="Test"\nPRETTY_NAME="Test OS 1.0"\n',
    }
    if governor is not None:
        files["sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"] = governor + "\n"
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.fixture(scope="module")
def manifest() -> EnvironmentManifest:
    return collect_manifest(
        SEEDS, data_hash="ab" * 32, adapter_module="streambench.adapters.reference:ReferenceAdapter"
    )


@pytest.mark.processes
def test_readable_items_equal_independent_reads(manifest: EnvironmentManifest) -> None:
    assert manifest.python_version.value == platform.python_version()
    assert manifest.python_implementation.value == platform.python_implementation()
    assert manifest.torch_version.value == torch.__version__
    assert manifest.numpy_version.value == numpy.__version__
    assert manifest.torch_intra_op_threads.value == torch.get_num_threads()
    assert manifest.torch_inter_op_threads.value == torch.get_num_interop_threads()
    assert manifest.thread_env.value == {name: os.environ.get(name) for name in THREAD_ENV_VARS}
    assert manifest.cpu_count.value == os.cpu_count()
    assert manifest.machine.value == platform.machine()
    assert manifest.kernel.value == f"{platform.system()} {platform.release()}"
    packages = manifest.packages.value
    assert isinstance(packages, dict)
    assert packages["torch"] == metadata.version("torch")
    assert packages["pydantic"] == metadata.version("pydantic")
    assert manifest.seeds.value == SEEDS
    assert manifest.data_hash.value == "ab" * 32


@pytest.mark.processes
def test_torch_flags_equal_torch(manifest: EnvironmentManifest) -> None:
    flags = manifest.torch_flags.value
    assert isinstance(flags, dict)
    assert flags["matmul_allow_tf32"] == torch.backends.cuda.matmul.allow_tf32
    assert flags["cudnn_allow_tf32"] == torch.backends.cudnn.allow_tf32
    assert flags["cudnn_benchmark"] == torch.backends.cudnn.benchmark
    assert flags["cudnn_deterministic"] == torch.backends.cudnn.deterministic
    assert flags["deterministic_algorithms"] == torch.are_deterministic_algorithms_enabled()
    assert flags["float32_matmul_precision"] == torch.get_float32_matmul_precision()


def test_unreadable_items_are_none_with_a_reason(manifest: EnvironmentManifest) -> None:
    from streambench.harness.instruments.nvml import read_lock_items

    for name in NVML_FIELDS:  # read through harness/instruments/nvml.py, null with its reason where unread
        item = getattr(manifest, name)
        value, reason = read_lock_items()[name]
        assert (item.value is None) == (value is None) and item.reason == reason
    if not torch.cuda.is_available():
        for name in ("cuda_runtime", "cudnn", "gpu_count", "gpu_model", "gpu_devices"):
            item = getattr(manifest, name)
            assert item.value is None
            assert item.reason is not None and item.reason.startswith("no CUDA device")
    if torch.version.cuda is None:
        assert manifest.cuda_torch.value is None and manifest.cuda_torch.reason
    for name in EnvironmentManifest.model_fields:
        item = getattr(manifest, name)
        if isinstance(item, Item) and item.value is None:
            assert item.reason, f"{name} has neither a value nor a reason"
    with pytest.raises(ValidationError, match="must say why"):
        Item(value=None)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_items_from_torch(manifest: EnvironmentManifest) -> None:
    assert manifest.gpu_count.value == torch.cuda.device_count()
    assert manifest.cuda_torch.value == torch.version.cuda
    devices = manifest.gpu_devices.value
    assert isinstance(devices, dict) and isinstance(devices["0"], dict)
    assert devices["0"]["name"] == torch.cuda.get_device_name(0)


@pytest.mark.processes
def test_sysfs_and_proc_are_read_from_the_given_root(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    collected = collect_manifest(SEEDS, root=root)
    assert collected.cpu_model.value == "Test CPU 9000 @ 3.00GHz"
    assert collected.cpu_governor.value == "performance"
    assert collected.clocksource.value == "tsc"
    assert collected.os.value == "Test OS 1.0"


@pytest.mark.processes
def test_missing_sysfs_files_name_the_path(tmp_path: Path) -> None:
    collected = collect_manifest(SEEDS, root=fake_root(tmp_path, governor=None))
    assert collected.cpu_governor.value is None
    assert collected.cpu_governor.reason is not None
    assert "scaling_governor does not exist" in collected.cpu_governor.reason
    assert collected.clocksource.value == "tsc"


def test_cpu_model_of_an_arm_cpuinfo(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text("processor\t: 0\nBogoMIPS\t: 48.00\nHardware\t: Test SoC\n")
    assert read_cpu_model(tmp_path).value == "Test SoC"


def test_manifest_is_json_serialisable(manifest: EnvironmentManifest) -> None:
    text = manifest.model_dump_json()
    assert json.loads(text)["torch_version"] == {"value": torch.__version__, "reason": None}
    assert EnvironmentManifest.model_validate_json(text) == manifest
    json.dumps(manifest.model_dump(mode="json"))


@pytest.mark.processes
def test_fingerprint_is_stable_across_collections_and_ignores_provenance(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    first = collect_manifest(SEEDS, data_hash="aa", root=root)
    second = collect_manifest(
        {"dataset": 7}, data_hash="bb", adapter_module="streambench.adapters.reference", root=root
    )
    assert first.collected_at <= second.collected_at
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint(first))
    assert fingerprint(first) == fingerprint(second)
    unrelated = first.model_copy(update={"harness_git": Item(value={"commit": "0" * 40, "dirty": False})})
    assert fingerprint(unrelated) == fingerprint(first)


@pytest.mark.processes
def test_fingerprint_changes_with_a_timing_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = collect_manifest(SEEDS, root=fake_root(tmp_path / "a"))
    other_governor = collect_manifest(SEEDS, root=fake_root(tmp_path / "b", governor="powersave"))
    assert fingerprint(other_governor) != fingerprint(base)
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    other_env = collect_manifest(SEEDS, root=fake_root(tmp_path / "a"))
    assert fingerprint(other_env) != fingerprint(base)
    driver = collect_manifest(SEEDS, nvml={"nvidia_driver": Item(value="550.54.15")}, root=tmp_path / "a")
    assert driver.nvidia_driver.value == "550.54.15"
    assert fingerprint(driver) != fingerprint(other_env)
    for name in FINGERPRINT_FIELDS:
        changed = base.model_copy(update={name: Item(value="something else")})
        assert fingerprint(changed) != fingerprint(base), name


def test_nvml_may_fill_only_nvml_items() -> None:
    with pytest.raises(ValueError, match="nvml may only fill"):
        collect_manifest(SEEDS, nvml={"torch_version": Item(value="0")})


def _head() -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


@pytest.mark.processes
@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")
def test_git_commit_of_the_harness_and_the_adapter(manifest: EnvironmentManifest) -> None:
    before = _head()
    state = git_state(ROOT / "harness")
    after = _head()
    assert isinstance(state.value, dict)
    assert state.value["commit"] in {before, after}
    assert isinstance(state.value["dirty"], bool)
    assert isinstance(manifest.harness_git.value, dict)
    assert re.fullmatch(r"[0-9a-f]{40}", str(manifest.harness_git.value["commit"]))
    assert manifest.adapter_git.value is not None  # adapters/ lives in the same checkout


@pytest.mark.processes
def test_git_outside_a_checkout_missing_or_slow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    outside = tmp_path / "plain"
    outside.mkdir()
    state = git_state(outside)
    assert state.value is None and state.reason is not None and "not in a git checkout" in state.reason

    (outside / "my_adapter_mod.py").write_text("class Model: ...\n")
    monkeypatch.syspath_prepend(str(outside))
    collected = collect_manifest(SEEDS, adapter_module="my_adapter_mod:Model")
    assert collected.adapter_git.value is None
    assert "not in a git checkout" in str(collected.adapter_git.reason)
    nowhere = collect_manifest(SEEDS, adapter_module="no_such_module_for_streambench")
    assert nowhere.adapter_git.value is None and nowhere.adapter_git.reason
    assert collect_manifest(SEEDS).adapter_git.reason == "no adapter module given"
    sys.modules.pop("my_adapter_mod", None)

    def timeout(args: list[str]) -> tuple[int, str, str]:
        raise subprocess.TimeoutExpired(args, 5.0)

    monkeypatch.setattr(host_items, "_run", timeout)
    assert "timed out" in str(git_state(ROOT).reason)
    monkeypatch.setattr(host_items.shutil, "which", lambda name: None)
    assert git_state(ROOT).reason == "git not found on PATH"
    assert collect_manifest(SEEDS).decoder.reason == "ffmpeg not found on PATH"


# --- the adapter's process and the data's files (issue 27 item 5) ---------------------------------------


@pytest.mark.processes
def test_adapter_packages_are_the_distributions_of_its_loaded_modules(tmp_path: Path) -> None:
    collected = collect_manifest(
        SEEDS,
        root=fake_root(tmp_path),
        nvml={},
        adapter_modules=(
            ["numpy", "torch", "pydantic_core", "my_checkout_model"],
            ["torch", "my_checkout_model"],
        ),
    )
    value = collected.adapter_packages.value
    assert isinstance(value, dict)
    assert value["distributions"] == {
        "numpy": metadata.version("numpy"),
        "pydantic_core": metadata.version("pydantic_core"),
        "torch": metadata.version("torch"),
    }
    assert value["loaded_by_adapter"] == ["torch"]  # numpy was loaded before the adapter's import
    assert value["without_distribution"] == ["my_checkout_model"]


def test_unreported_adapter_process_and_generated_data_say_why(manifest: EnvironmentManifest) -> None:
    assert manifest.adapter_packages.value is None
    assert manifest.adapter_packages.reason == "the adapter's process did not report its modules"
    assert manifest.data_sources.value is None
    assert manifest.data_sources.reason == "no stream was read from an audio file"
    older = json.loads(manifest.model_dump_json(exclude={"adapter_packages", "data_sources"}))
    again = EnvironmentManifest.model_validate(older)  # a result written before issue 27 still reads
    assert again.adapter_packages.reason == "not recorded (a run made before 0.2.0)"


@pytest.mark.processes
def test_data_sources_are_recorded_as_given(tmp_path: Path) -> None:
    sources = {"a": {"file": "a.wav", "sample_rate_hz": 8000, "channels": 2, "resampled_to_hz": 16000}}
    collected = collect_manifest(SEEDS, root=fake_root(tmp_path), nvml={}, data_sources=sources)
    assert collected.data_sources.value == sources


@pytest.mark.processes
def test_the_adapter_processs_torch_threads_are_the_fingerprinted_ones(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    seen = AdapterThreads(process="worker", torch_imported=True, intra_op=7, inter_op=5, cores=2)
    collected = collect_manifest(SEEDS, root=root, nvml={}, adapter_threads=seen)
    assert (collected.torch_intra_op_threads.value, collected.torch_inter_op_threads.value) == (7, 5)
    here = collect_manifest(SEEDS, root=root, nvml={})
    assert fingerprint(collected) != fingerprint(here)
    without = AdapterThreads(process="worker", torch_imported=False, cores=2)  # an ONNX model: this process's
    same = collect_manifest(SEEDS, root=root, nvml={}, adapter_threads=without)
    assert same.torch_intra_op_threads.value == torch.get_num_threads()
