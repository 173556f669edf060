"""The result of a run on disk: ``results/<run_id>/result.json`` and ``arrays.npz`` (DESIGN.md "Results").

``result.json`` is a versioned pydantic schema (:class:`RunResult`); the arrays hold every stream's
recording so a run can be re-scored without the model. Both are written atomically (a temporary file
in the same directory, then a rename), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Sequence
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.contract import AdapterInfo
from harness.engine import ClockInfo, EngineConfig
from harness.instruments.manifest import EnvironmentManifest
from harness.instruments.memory import MemoryReport
from harness.instruments.power import EnergyReport
from harness.instruments.rapl import RaplReport
from harness.instruments.threads import ThreadRecord
from harness.io.atomic import atomic_write, atomic_write_text
from protocols.online import OnlineConfig, OnlineScore
from protocols.recording import StreamRecording, from_arrays, to_arrays

SCHEMA_VERSION = 2
RESULT_FILE = "result.json"
ARRAYS_FILE = "arrays.npz"

__all__ = [
    "RESULT_FILE",
    "SCHEMA_VERSION",
    "ResourceRecord",
    "ResultFileError",
    "RunResult",
    "SeedRecord",
    "load_recordings",
    "load_result",
    "package_version",
    "write_run",
]


class ResultFileError(ValueError):
    """A result file could not be read; names the file."""


class SeedRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: int
    torch: int
    split: int


class ResourceRecord(BaseModel):
    """What the run cost: memory, energy (GPU by NVML, CPU by RAPL) and FLOPs, each null with a reason
    where this machine cannot measure it (DESIGN.md "Instruments"; seed 004 §6.3.3)."""

    memory: MemoryReport
    gpu_energy: EnergyReport
    cpu_energy: RaplReport
    energy_per_frame_j: float | None = Field(description="GPU energy of the measured window / frames in it")
    energy_per_frame_reason: str | None
    power_at_rtf1_w: float | None = Field(
        description="W at RTF = 1: mean GPU power of a paced run, whose frames arrive in real time"
    )
    power_at_rtf1_reason: str | None
    frames_measured: int = Field(
        description="frames fed inside the energy and memory window (warm-up excluded)"
    )
    flops_per_frame: int | None
    flops_reason: str | None


class NormalisationRecord(BaseModel):
    """Hardware normalisation against a baseline run (seed 004 §6.3.1 (2)); null with a reason where the
    runs cannot be compared (different environment fingerprints) or a FLOPs count is missing."""

    baseline_run: str
    baseline_path: str
    speedup: float | None = Field(description="Latency_baseline / Latency_method, mean latency per frame")
    flops_normalised_latency_ms: float | None = Field(
        description="Latency_measured x FLOPs_baseline / FLOPs_measured (mean per frame)"
    )
    reason: str | None


class WarmupRecord(BaseModel):
    stream_id: str
    frames: int


class RunResult(BaseModel):
    """Everything a run produced but the arrays. ``schema_version`` changes with any breaking change."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[2] = 2
    run_id: str
    created_at: datetime
    streambench_version: str
    adapter: str = Field(description="the registry name or module:Class the run was asked for")
    adapter_options: dict[str, Any]
    adapter_info: AdapterInfo
    dataset: str
    dataset_config: dict[str, Any]
    protocol: Literal["online"] = "online"
    protocol_config: OnlineConfig
    engine: EngineConfig
    seeds: SeedRecord
    clock: ClockInfo
    threads: ThreadRecord
    environment: EnvironmentManifest
    fingerprint: str = Field(description="hash of the environment items that affect timing")
    resources: ResourceRecord
    warmup: WarmupRecord | None
    normalisation: NormalisationRecord | None = None
    streams: dict[str, list[str]] = Field(description="stream ids by role (test, validation)")
    metrics: OnlineScore
    arrays_file: str = ARRAYS_FILE


def package_version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def write_run(run_dir: Path, result: RunResult, recordings: Sequence[StreamRecording]) -> Path:
    """Write the arrays, then ``result.json`` (last, so its presence means the run is complete)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    arrays = to_arrays(recordings)
    atomic_write(run_dir / ARRAYS_FILE, lambda f: np.savez_compressed(f, **arrays))  # type: ignore[arg-type]
    atomic_write_text(run_dir / RESULT_FILE, result.model_dump_json(indent=2))
    return run_dir / RESULT_FILE


def write_protocol_result(output_dir: Path, run_id: str, filename: str, result: BaseModel) -> Path:
    """Write a protocol's own result file (robustness.json, causality.json) atomically; the run directory."""
    run_dir = output_dir / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / filename, result.model_dump_json(indent=2))
    return run_dir


def load_result(path: Path) -> RunResult:
    """Read and validate a ``result.json`` (or the run directory holding one)."""
    if path.is_dir():
        path = path / RESULT_FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such result file") from None
    except json.JSONDecodeError as exc:
        raise ResultFileError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version != SCHEMA_VERSION:
        raise ResultFileError(
            f"{path}: schema_version {version!r} is not supported by this streambench "
            f"(it reads version {SCHEMA_VERSION})"
        )
    try:
        return RunResult.model_validate(raw)
    except ValidationError as exc:
        raise ResultFileError(f"{path}: does not match the result schema:\n{exc}") from None


def load_recordings(run_dir: Path) -> list[StreamRecording]:
    path = run_dir / ARRAYS_FILE
    try:
        with np.load(path, allow_pickle=False) as arrays:
            return from_arrays(arrays)
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such arrays file") from None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise ResultFileError(f"{path}: not a readable arrays file ({type(exc).__name__}: {exc})") from None
