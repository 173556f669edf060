"""The result of a run on disk: ``results/<run_id>/result.json`` and ``arrays.npz`` (DESIGN.md "Results").

``result.json`` is a versioned pydantic schema (:class:`RunResult`); the arrays hold every stream's
recording so a run can be re-scored without the model. Both are written atomically (a temporary file
in the same directory, then a rename), so a reader never sees half a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from streambench.adapters.contract import AdapterInfo
from streambench.harness.execution.engine import ClockInfo, EngineConfig
from streambench.harness.execution.host_timing import HostTimingRecord
from streambench.harness.execution.process_tree import LeftoverProcess
from streambench.harness.execution.sandbox import SandboxRecord
from streambench.harness.instruments.manifest import EnvironmentManifest
from streambench.harness.instruments.memory import MemoryReport
from streambench.harness.instruments.power import EnergyReport
from streambench.harness.instruments.rapl import RaplReport
from streambench.harness.instruments.threads import ThreadRecord
from streambench.harness.io.atomic import atomic_write, atomic_write_text
from streambench.harness.io.json_file import read_json, strict_json
from streambench.harness.io.store_layout import check_run_dir
from streambench.harness.results.arrays import read_arrays
from streambench.harness.results.quality import MeasurementQuality
from streambench.protocols.online import OnlineConfig, OnlineScore
from streambench.protocols.recording import FailedStream, StreamRecording, failed_to_arrays, to_arrays
from streambench.protocols.session_audit import SessionAuditResult

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
    "RunRecord",
    "RunResult",
    "ScoredRecord",
    "SeedRecord",
    "load_failed_streams",
    "load_protocol_result",
    "load_recordings",
    "load_result",
    "package_version",
    "write_arrays",
    "write_run",
]


class ResultFileError(ValueError):
    """A result file could not be read; names the file."""


SEED_KIND_DESCRIPTION = (
    "secret: the data set's seed was drawn for this run and written here only after scoring; public: the "
    "configuration gave it, so anyone (a model's author too) could rebuild the scored streams; null: "
    "the data has no seed (files)"
)


def _unnamed_seed_kind(seed: Any) -> Any:
    """The kind of a seed a result does not name (a file written before seed kinds, whose every seed was
    given, the default 0 included; or code that did not say): public, never claimed secret."""
    return "public" if isinstance(seed, int) and not isinstance(seed, bool) else None


class RunRecord(BaseModel):
    """What every protocol's result file records about the run, declared once: the file's schema version
    (a model raises its default with a breaking change), the run's id, when it was written and the
    adapter it measured. Every result model extends it; the store, ``show`` and the report read these
    fields of any result (:mod:`streambench.harness.runs.catalog`)."""

    schema_version: int = 1
    run_id: str
    created_at: datetime
    adapter: str = Field(description="the registry name or module:Class the run was asked for")


class EnvironmentRecord(RunRecord):
    """The environment a protocol's result was measured in (robustness, causality, detection, stability,
    hysteresis): the lock manifest (seed 004 §6.2.2) and its timing fingerprint; None in older files. And
    where the data set's seed (``run.data.seed``, ``environment.seeds``) came from."""

    environment: EnvironmentManifest | None = Field(
        None, description="the environment lock manifest the run was measured in"
    )
    fingerprint: str | None = Field(None, description="hash of the environment items that affect timing")
    dataset_seed_kind: Literal["secret", "public"] | None = Field(None, description=SEED_KIND_DESCRIPTION)
    sandbox: SandboxRecord | None = Field(
        None, description="the sealed worker's OS sandbox; null in process and in older files"
    )
    execution_mode: Literal["in-process", "isolated", "sealed"] | None = Field(
        None,
        description="where the adapter ran: a sealed worker (the default), or this process (--in-process, "
        "for debugging: the model could reach the clock, data and labels); None in older files",
    )

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and "dataset_seed_kind" not in raw:
            run = raw.get("run")
            data = run.get("data") if isinstance(run, dict) else None
            seed = data.get("seed") if isinstance(data, dict) else None
            return {**raw, "dataset_seed_kind": _unnamed_seed_kind(seed)}
        return raw


class ExecutionRecord(BaseModel):
    """How the adapter was run: in this process or in an isolated worker, the failure policy,
    and how many sessions the run took (1 + the number of resumes)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["in-process", "isolated", "sealed"] = Field(
        description="where the adapter ran: this process, a worker (--isolate), or a worker that never held "
        "the data (--sealed)"
    )
    on_error: Literal["continue", "stop"]
    sessions: int = Field(ge=1)
    sandbox: SandboxRecord | None = Field(
        None,
        description="the sealed worker's OS sandbox: sandboxed, or unsandboxed with the reason; "
        "null in process and in runs recorded before it",
    )
    leftover_processes: list[LeftoverProcess] = Field(
        default_factory=list,
        description="processes the adapter started and left running, which the harness ended when the run "
        "(or a worker) ended; empty in runs recorded before it",
    )


class ScoredRecord(BaseModel):
    """How much of the plan was scored, and how: the streams that finished by their outputs, the test
    streams the adapter failed on as answered wrongly on every frame (``failure_rule``)."""

    model_config = ConfigDict(extra="forbid")

    planned_streams: int
    scored_streams: int = Field(description="streams that finished, scored by their outputs (validation too)")
    scored_frames: int = Field(description="frames of the streams that finished")
    failed_streams: int = Field(description="streams the adapter failed on (every failure is in failures)")
    failed_frames: int = Field(
        0, description="frames of the failed test streams, each in the metrics as answered wrongly"
    )
    failure_rule: Literal["dropped", "wrong"] = Field(
        "dropped",
        description="how the failed test streams entered the metrics: wrong, as answered wrongly on every "
        "frame (the complement of their labels); dropped, left out (results written before 0.2.0)",
    )
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
    """The run's seeds. ``dataset``: the seed the scored streams were built from (``--seed`` rebuilds
    them), with ``dataset_seed_kind`` saying whether it was secret until this file was written."""

    model_config = ConfigDict(extra="forbid")

    dataset: int | None = Field(description="the synthetic data set's seed; None for data read from files")
    dataset_seed_kind: Literal["secret", "public"] | None = Field(description=SEED_KIND_DESCRIPTION)
    torch: int
    split: int

    @model_validator(mode="before")
    @classmethod
    def _older_file(cls, raw: Any) -> Any:
        if isinstance(raw, dict) and "dataset_seed_kind" not in raw:
            return {**raw, "dataset_seed_kind": _unnamed_seed_kind(raw.get("dataset"))}
        return raw


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
    error: str | None = Field(
        None,
        description="the baseline could not be read once the streams were measured: "
        "the run is written with no normalisation, and `streambench run` exits 2; None: it was read",
    )


class WarmupRecord(BaseModel):
    stream_id: str
    frames: int


class RunResult(RunRecord):
    """Everything a run produced but the arrays. ``schema_version`` changes with any breaking change."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[3] = 3
    streambench_version: str
    status: Literal["complete", "incomplete"] = Field(
        "complete", description="incomplete: interrupted or stopped; `streambench run --resume` finishes it"
    )
    incomplete_reason: str | None = None
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
    metrics: OnlineScore = Field(
        description="over the test streams: those that finished by their outputs, the failed ones as "
        "answered wrongly (scored.failure_rule)"
    )
    measurement_quality: MeasurementQuality | None = Field(
        None, description="VALID / INVALID with reasons; null in runs recorded before it"
    )
    host_timing: HostTimingRecord | None = Field(
        None,
        description="the parent's clock against the worker's: sealed runs; not-checked with the "
        "reason in process; null in runs recorded before it",
    )
    session_audit: SessionAuditResult | None = Field(
        None,
        description="the run's own causality verdict: replayed and occluded copies of scored "
        "streams interleaved among them in the same sealed worker; null in runs recorded before it",
    )
    arrays_file: str = ARRAYS_FILE


def package_version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def write_run(
    run_dir: Path,
    result: RunResult,
    recordings: Sequence[StreamRecording],
    failed: Sequence[FailedStream] = (),
) -> Path:
    """Write the arrays (the recordings, and the failed streams' labels and clocks so that re-scoring
    counts them as the run did), then ``result.json`` (last, so its presence means the run is complete).
    The caller indexes the run (:func:`streambench.harness.runs.catalog.index_written`). The JSON is strict
    (:func:`~streambench.harness.io.json_file.strict_json`); a run directory that is a symbolic link is
    refused."""
    check_run_dir(run_dir).mkdir(parents=True, exist_ok=True)
    write_arrays(run_dir, recordings, failed)
    atomic_write_text(run_dir / RESULT_FILE, strict_json(result))
    return run_dir / RESULT_FILE


def write_arrays(
    run_dir: Path, recordings: Sequence[StreamRecording], failed: Sequence[FailedStream] = ()
) -> None:
    """Write ``arrays.npz`` atomically into ``run_dir`` (which exists): the recordings, and the failed
    streams' labels and clocks."""
    arrays = {**to_arrays(recordings), **failed_to_arrays(failed)}
    atomic_write(run_dir / ARRAYS_FILE, lambda f: np.savez_compressed(f, **arrays))  # type: ignore[arg-type]


def write_protocol_result(output_dir: Path, run_id: str, filename: str, result: BaseModel) -> Path:
    """Write a protocol's own result file (robustness.json, causality.json) atomically, as strict JSON;
    the run directory (never a symbolic link: :func:`~streambench.harness.io.store_layout.check_run_dir`)."""
    run_dir = check_run_dir(output_dir / run_id)
    if (run_dir / filename).exists():  # never overwrite a measured result
        raise ValueError(f"{run_dir / filename}: exists already; give the run another --run-id")
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / filename, strict_json(result))
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
    return read_arrays(run_dir / ARRAYS_FILE, ResultFileError)[0]


def load_failed_streams(run_dir: Path) -> list[FailedStream]:
    """The failed streams saved in ``arrays.npz`` (labels and clock, no output), checked like the
    recordings; none in a file written before failed streams were scored."""
    return read_arrays(run_dir / ARRAYS_FILE, ResultFileError)[1]
