"""The result of a run on disk: ``results/<run_id>/result.json`` and ``arrays.npz`` (DESIGN.md "Results").

``result.json`` is a versioned pydantic schema (:class:`RunResult`); the arrays hold every stream's
recording so a run can be re-scored without the model. Both are written atomically (a temporary file
in the same directory, then a rename), so a reader never sees half a file.
"""

from __future__ import annotations

import zipfile
from collections.abc import Sequence
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.contract import AdapterInfo
from harness.execution.engine import ClockInfo, EngineConfig
from harness.instruments.manifest import EnvironmentManifest
from harness.instruments.memory import MemoryReport
from harness.instruments.power import EnergyReport
from harness.instruments.rapl import RaplReport
from harness.instruments.threads import ThreadRecord
from harness.io.atomic import atomic_write, atomic_write_text
from harness.io.json_file import read_json
from harness.results.quality import MeasurementQuality
from protocols.online import OnlineConfig, OnlineScore
from protocols.recording import StreamRecording, from_arrays, to_arrays

SCHEMA_VERSION = 3
_Model = TypeVar("_Model", bound=BaseModel)
RESULT_FILE = "result.json"
ARRAYS_FILE = "arrays.npz"

__all__ = [
    "RESULT_FILE",
    "SCHEMA_VERSION",
    "EnvironmentRecord",
    "ExecutionRecord",
    "FailureRecord",
    "ResourceRecord",
    "ResultFileError",
    "RunResult",
    "ScoredRecord",
    "SeedRecord",
    "load_protocol_result",
    "load_recordings",
    "load_result",
    "package_version",
    "write_run",
]


class ResultFileError(ValueError):
    """A result file could not be read; names the file."""


class EnvironmentRecord(BaseModel):
    """The environment a protocol's result was measured in (robustness, causality, detection, stability,
    hysteresis): the lock manifest (seed 004 §6.2.2) and its timing fingerprint; None in older files."""

    environment: EnvironmentManifest | None = Field(
        None, description="the environment lock manifest the run was measured in"
    )
    fingerprint: str | None = Field(None, description="hash of the environment items that affect timing")


class ExecutionRecord(BaseModel):
    """How the adapter was run (issue 7): in this process or in an isolated worker, the failure policy,
    and how many sessions the run took (1 + the number of resumes)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["in-process", "isolated", "sealed"] = Field(
        description="where the adapter ran: this process, a worker (--isolate), or a worker that never held "
        "the data (--sealed)"
    )
    on_error: Literal["continue", "stop"]
    sessions: int = Field(ge=1)


class ScoredRecord(BaseModel):
    """How much of the plan was scored: metrics are computed over the finished streams only."""

    model_config = ConfigDict(extra="forbid")

    planned_streams: int
    scored_streams: int
    scored_frames: int
    failed_streams: int
    predictions_beyond_end: int = Field(
        0, description="predictions dropped because they labelled a frame past the end of their stream"
    )


class FailureRecord(BaseModel):
    """An adapter failure: the stream (the rest of it was skipped), the frame, the error, the traceback."""

    model_config = ConfigDict(extra="forbid")

    stream_id: str
    role: Literal["test", "validation"]
    frame: int | None
    error_type: str
    message: str
    traceback: str


class SeedRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: int | None = Field(description="the synthetic data set's seed; None for data read from files")
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
    worker_peak_rss_bytes: int | None = Field(
        None,
        description="--isolate: peak resident memory of the worker process the adapter ran in (its own "
        "peak since it started, the largest over the run's workers); memory.peak_rss_bytes is the "
        "harness process's. None with worker_peak_rss_reason in process (the adapter's memory is then "
        "memory.peak_rss_bytes) or where no worker reported one",
    )
    worker_peak_rss_reason: str | None = None


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

    schema_version: Literal[3] = 3
    run_id: str
    created_at: datetime
    streambench_version: str
    status: Literal["complete", "incomplete"] = Field(
        "complete", description="incomplete: interrupted or stopped; `streambench run --resume` finishes it"
    )
    incomplete_reason: str | None = None
    adapter: str = Field(description="the registry name or module:Class the run was asked for")
    adapter_options: dict[str, Any]
    adapter_info: AdapterInfo
    dataset: str
    dataset_config: dict[str, Any]
    protocol: Literal["online"] = "online"
    protocol_config: OnlineConfig
    engine: EngineConfig
    execution: ExecutionRecord
    seeds: SeedRecord
    clock: ClockInfo
    threads: ThreadRecord
    environment: EnvironmentManifest
    fingerprint: str = Field(description="hash of the environment items that affect timing")
    resources: ResourceRecord
    warmup: WarmupRecord | None
    normalisation: NormalisationRecord | None = None
    streams: dict[str, list[str]] = Field(description="stream ids by role (test, validation), as planned")
    scored: ScoredRecord
    failures: list[FailureRecord] = Field(description="every adapter failure, in the order they happened")
    metrics: OnlineScore = Field(description="over the scored (finished) streams")
    measurement_quality: MeasurementQuality | None = Field(
        None, description="VALID / INVALID with reasons (issue 16); null in runs recorded before it"
    )
    arrays_file: str = ARRAYS_FILE


def package_version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def write_run(run_dir: Path, result: RunResult, recordings: Sequence[StreamRecording]) -> Path:
    """Write the arrays, then ``result.json`` (last, so its presence means the run is complete). The
    caller indexes the run (:func:`harness.runs.catalog.index_written`)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    arrays = to_arrays(recordings)
    atomic_write(run_dir / ARRAYS_FILE, lambda f: np.savez_compressed(f, **arrays))  # type: ignore[arg-type]
    atomic_write_text(run_dir / RESULT_FILE, result.model_dump_json(indent=2))
    return run_dir / RESULT_FILE


def write_protocol_result(output_dir: Path, run_id: str, filename: str, result: BaseModel) -> Path:
    """Write a protocol's own result file (robustness.json, causality.json) atomically; the run directory."""
    run_dir = output_dir / run_id
    if (run_dir / filename).exists():  # never overwrite a measured result
        raise ValueError(f"{run_dir / filename}: exists already; give the run another --run-id")
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / filename, result.model_dump_json(indent=2))
    return run_dir



def load_result(path: Path) -> RunResult:
    """Read and validate a ``result.json`` (or the run directory holding one)."""
    if path.is_dir():
        path = path / RESULT_FILE
    raw = read_json(path, ResultFileError, missing="no such result file")
    if not isinstance(raw, dict):
        raise ResultFileError(f"{path}: not a result: the JSON is a {type(raw).__name__}, not an object")
    if "schema_version" not in raw:
        raise ResultFileError(
            f"{path}: schema_version is missing (this streambench reads version {SCHEMA_VERSION})"
        )
    version = raw["schema_version"]
    if type(version) is not int or version != SCHEMA_VERSION:
        newer = type(version) is int and version > SCHEMA_VERSION
        raise ResultFileError(
            f"{path}: schema_version {repr(version)[:80]} is not supported by this streambench "
            f"(it reads version {SCHEMA_VERSION})"
            + ("; the file is newer than this streambench: upgrade streambench to read it" if newer else "")
        )
    try:
        return RunResult.model_validate(raw)
    except ValidationError as exc:
        raise ResultFileError(f"{path}: does not match the result schema:\n{exc}") from None


def load_protocol_result(path: Path, model: type[_Model]) -> _Model:
    """Read and validate a protocol's own result file (``robustness.json``, ``causality.json``)."""
    raw = read_json(path, ResultFileError, missing=f"no such {path.name}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ResultFileError(f"{path}: does not match the {model.__name__} schema:\n{exc}") from None


def load_recordings(run_dir: Path) -> list[StreamRecording]:
    """The recordings in ``arrays.npz``, checked against the shapes and types the engine records.

    Never unpickles (an object array is refused). Any file that is not such an archive raises
    :class:`ResultFileError` naming it, and the stream and array at fault where there is one.
    """
    import tokenize  # only for the error types of corrupted bytes: a bad .npy header, a bad deflate stream
    import zlib

    path = run_dir / ARRAYS_FILE
    try:
        with np.load(path, allow_pickle=False) as arrays:
            recordings = from_arrays(arrays)
            names = list(arrays.files)
    except FileNotFoundError:
        raise ResultFileError(f"{path}: no such arrays file") from None
    # corrupted bytes surface as BadZipFile (bad CRC, bad header), zlib.error (bad deflate data), EOFError
    # (truncated member), NotImplementedError (a flipped compression method or zip version), TokenError (a
    # flipped .npy header), MemoryError (a header claiming a huge shape); a well-formed file with the wrong
    # arrays as KeyError, TypeError or IndexError
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        IndexError,
        EOFError,
        NotImplementedError,
        MemoryError,
        zipfile.BadZipFile,
        zlib.error,
        tokenize.TokenError,
    ) as exc:
        raise ResultFileError(f"{path}: not a readable arrays file ({type(exc).__name__}: {exc})") from None
    # validated here, at the edge: arrays of other shapes or types would only fail later, far from the file
    numbered = {f"s{i}" for i in range(len(recordings))}
    stray = sorted(name for name in names if name.split("/", 1)[0] not in numbered)
    if stray:
        known = f"s0 to s{len(recordings) - 1}" if recordings else "none: there is no s0/meta"
        raise ResultFileError(
            f"{path}: array {stray[0]!r} belongs to no stream (each stream s<i> has an s<i>/meta; "
            f"streams here: {known})"
        )
    # name: (dtype kinds, dimensions, length of the first dimension: frames T or predictions P)
    layout = {
        "frame_times_ns": ("iu", 1, "T"),
        "latency_ns": ("iu", 1, "T"),
        "labels": ("biu", 2, "T"),
        "emitted_at": ("iu", 1, "P"),
        "refers_to": ("iu", 1, "P"),
        "scores": ("f", 2, "P"),
        "paced_start_ns": ("iu", 1, "T"),
        "device_ns": ("iu", 1, "T"),
        "cpu_ns": ("iu", 1, "T"),
    }
    for i, rec in enumerate(recordings):
        sizes = {"T": np.shape(rec.frame_times_ns)[:1], "P": np.shape(rec.emitted_at)[:1]}
        for name, (kinds, ndim, length) in layout.items():
            value = getattr(rec, name)
            if value is None:
                continue
            if value.dtype.kind not in kinds or value.ndim != ndim or value.shape[:1] != sizes[length]:
                raise ResultFileError(
                    f"{path}: stream s{i} ({rec.stream_id!r}): s{i}/{name} has dtype {value.dtype} and shape "
                    f"{value.shape}, expected {ndim} dimensions of kind {kinds!r} and {length} = "
                    f"{sizes[length][0] if sizes[length] else '?'} rows"
                )
    return recordings
