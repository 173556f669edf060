"""The environment manifest: every item of seed 004's environment lock list that can be read.

Seed 004 §6.2.2 "计时与稳定性建议" asks for the full environment in the appendix and lists what to lock
("环境锁定清单"): driver version, CUDA, cuDNN, framework and version, GPU model and count, GPU power
limit, GPU clock / persistence mode, thread / OMP variables, the data decoding library; §6.2.3 "硬件与
环境" adds GPU memory and the concurrency setting. :func:`collect_manifest` records each as an
:class:`Item`: a value, or ``None`` with the reason it could not be read — never a guess. The CPU
(model, frequency governor, clock source), OS, Python, package versions, torch's numeric flags, seeds,
git commits and the data hash complete it (DESIGN.md "Instruments": manifest), with the
packages of the adapter's own process (``adapter_packages``: the distributions of the modules loaded
there once the model was built, those its import and construction loaded marked;
:mod:`streambench.harness.instruments.packages`) and the data's source
files as read (``data_sources``: each file's own rate and channels and what was converted). :class:`Item`
and the readers of the host's items (CPU, governor, clock source, OS, git state, decoder) live in
:mod:`streambench.harness.instruments.host_items`; this module adds the torch, GPU and package items.

GPU items come from what ``torch.cuda`` exposes. Driver version, power limit, persistence and clock mode
are NVML-only: they stay ``None`` (reason :data:`NEEDS_NVML`) unless the caller passes them in ``nvml``
(read by :mod:`streambench.harness.instruments.nvml`; this module never imports the vendor library).
:func:`fingerprint` hashes the items that affect timing; comparisons refuse runs whose fingerprints differ.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from streambench.harness.instruments.host_items import (
    Item,
    git_state,
    guarded,
    missing_item,
    read_adapter_git,
    read_clocksource,
    read_cpu_model,
    read_decoder,
    read_governor,
    read_os,
    value_item,
)
from streambench.harness.instruments.model_files import model_files
from streambench.harness.instruments.packages import adapter_distributions, package_versions, version
from streambench.harness.instruments.threads import AdapterThreads, ThreadConfig, read_thread_env

__all__ = [
    "FINGERPRINT_FIELDS",
    "NEEDS_NVML",
    "NVML_FIELDS",
    "EnvironmentManifest",
    "collect_manifest",
    "fingerprint",
]

NEEDS_NVML = "needs NVML: see harness/instruments/nvml.py"
NVML_FIELDS = ("nvidia_driver", "gpu_power_limit", "gpu_persistence_mode", "gpu_clock_mode")
_GPU_FIELDS = ("cuda_runtime", "cudnn", "gpu_count", "gpu_model", "gpu_devices")


class EnvironmentManifest(BaseModel):
    """Seed 004's environment lock list, item by item. Every field but the first two is an :class:`Item`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = 1
    collected_at: datetime
    # lock list: driver, CUDA, cuDNN, GPU model / count / memory, power limit, clock / persistence mode
    nvidia_driver: Item  # NVML
    cuda_torch: Item  # torch.version.cuda: the CUDA torch was built with
    cuda_runtime: Item  # the runtime torch loaded, where torch.cuda.cudart() tells
    cudnn: Item  # torch.backends.cudnn.version()
    gpu_count: Item
    gpu_model: Item  # e.g. "1x NVIDIA V100-SXM2-32GB"
    gpu_devices: Item  # per device: name, uuid, memory, compute capability, max clocks (torch)
    gpu_power_limit: Item  # NVML
    gpu_persistence_mode: Item  # NVML
    gpu_clock_mode: Item  # NVML: application / locked clocks
    # lock list: framework and version; package versions (importlib.metadata)
    torch_version: Item
    numpy_version: Item
    onnxruntime_version: Item
    packages: Item
    # lock list: thread / OMP variables; §6.2.3: concurrency; torch's numeric flags
    thread_env: Item
    torch_intra_op_threads: Item
    torch_inter_op_threads: Item
    cpu_affinity: Item  # number of CPUs this process may run on
    torch_flags: Item  # TF32, cudnn benchmark / deterministic, deterministic algorithms
    # lock list: data decoding library
    decoder: Item
    # host
    cpu_model: Item
    cpu_count: Item
    cpu_governor: Item
    clocksource: Item
    kernel: Item
    os: Item
    machine: Item
    python_version: Item
    python_implementation: Item
    # provenance (not in the fingerprint)
    seeds: Item
    harness_git: Item
    adapter_git: Item
    data_hash: Item
    model_files: Item = Field(
        default_factory=lambda: missing_item("not recorded (a run made before model files were hashed)"),
        description="each file an adapter option names (ONNX, TorchScript, weights): path, bytes, sha256",
    )
    adapter_packages: Item = Field(
        default_factory=lambda: missing_item("not recorded (a run made before 0.2.0)"),
        description="distributions of the modules loaded in the adapter's process once the model was built "
        "(name: version), those its import and construction loaded, and modules of no distribution",
    )
    data_sources: Item = Field(
        default_factory=lambda: missing_item("not recorded (a run made before 0.2.0)"),
        description="per stream read from a file: the file, its own sample rate and channels, and the "
        "conversions applied (resampled to, channels taken)",
    )


FINGERPRINT_FIELDS: tuple[str, ...] = (
    *("cpu_model", "cpu_governor", "clocksource", "cpu_affinity"),
    *("gpu_model", "gpu_count", "nvidia_driver", "cuda_torch", "cuda_runtime", "cudnn"),
    *("gpu_power_limit", "gpu_persistence_mode", "gpu_clock_mode", "torch_version"),
    *("thread_env", "torch_intra_op_threads", "torch_inter_op_threads", "torch_flags"),
)
"""Items that change timings. Not seeds, git commits, the data hash or dates."""


def fingerprint(manifest: EnvironmentManifest) -> str:
    """First 16 hex characters of the sha256 of the :data:`FINGERPRINT_FIELDS` values (reasons ignored)."""
    payload = {name: getattr(manifest, name).value for name in FINGERPRINT_FIELDS}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(("streambench-fingerprint-v1" + text).encode()).hexdigest()[:16]


def _torch_flags(torch: Any) -> dict[str, JsonValue]:
    reads: dict[str, Callable[[], Any]] = {
        "matmul_allow_tf32": lambda: torch.backends.cuda.matmul.allow_tf32,
        "cudnn_allow_tf32": lambda: torch.backends.cudnn.allow_tf32,
        "float32_matmul_precision": torch.get_float32_matmul_precision,
        "matmul_fp32_precision": lambda: torch.backends.cuda.matmul.fp32_precision,
        "cudnn_conv_fp32_precision": lambda: torch.backends.cudnn.conv.fp32_precision,
        "cudnn_benchmark": lambda: torch.backends.cudnn.benchmark,
        "cudnn_deterministic": lambda: torch.backends.cudnn.deterministic,
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled,
        "deterministic_warn_only": torch.is_deterministic_algorithms_warn_only_enabled,
    }
    flags: dict[str, JsonValue] = {}
    for name, read in reads.items():
        try:
            value = read()
        except Exception:  # a flag this version of torch does not have: left out
            continue
        flags[name] = value if isinstance(value, (bool, int, str)) else str(value)
    return flags


def _gpu_devices(torch: Any) -> dict[str, JsonValue]:
    devices: dict[str, JsonValue] = {}
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        devices[str(index)] = {
            "name": str(props.name),
            "uuid": str(getattr(props, "uuid", "")) or None,
            "total_memory_bytes": int(props.total_memory),
            "compute_capability": f"{props.major}.{props.minor}",
            "multi_processor_count": int(props.multi_processor_count),
            "max_clock_khz": getattr(props, "clock_rate", None),
            "max_memory_clock_khz": getattr(props, "memory_clock_rate", None),
        }
    return devices


def _gpu_items(torch: Any) -> dict[str, Item]:
    """CUDA, cuDNN and the devices as torch sees them."""
    cuda = torch.version.cuda
    if cuda is None or not torch.cuda.is_available():
        cause = "torch is built without CUDA" if cuda is None else "torch.cuda.is_available() is False"
        why = f"no CUDA device ({cause})"
        built = value_item(str(cuda)) if cuda else missing_item(why)
        return {"cuda_torch": built, **{name: missing_item(why) for name in _GPU_FIELDS}}
    try:
        devices = _gpu_devices(torch)
    except Exception as exc:  # e.g. a broken driver: the run goes on, the items say why
        why = f"reading the GPUs through torch.cuda failed: {type(exc).__name__}: {exc}"
        return {"cuda_torch": value_item(str(cuda)), **{name: missing_item(why) for name in _GPU_FIELDS}}
    names = [str(d["name"]) for d in devices.values() if isinstance(d, dict)]
    model = " + ".join(f"{names.count(n)}x {n}" for n in dict.fromkeys(names))
    runtime = getattr(torch.cuda.cudart(), "cudaRuntimeGetVersion", None)
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    no_device = missing_item("torch.cuda.device_count() is 0")
    return {
        "cuda_torch": value_item(str(cuda)),
        "cuda_runtime": guarded(lambda: value_item(int(runtime())), "cudaRuntimeGetVersion")
        if runtime is not None
        else missing_item("torch exposes no CUDA runtime version; it ships the runtime of cuda_torch"),
        "cudnn": value_item(int(cudnn)) if cudnn else missing_item("cuDNN is not available to torch"),
        "gpu_count": value_item(len(devices)),
        "gpu_model": value_item(model) if model else no_device,
        "gpu_devices": value_item(devices) if devices else no_device,
    }


def collect_manifest(
    seeds: Mapping[str, int | None],
    data_hash: str | None = None,
    adapter_module: str | None = None,
    *,
    adapter_options: Mapping[str, Any] | None = None,
    nvml: Mapping[str, Item] | None = None,
    root: Path = Path("/"),
    adapter_modules: tuple[Sequence[str], Sequence[str]] | None = None,
    adapter_threads: AdapterThreads | None = None,
    data_sources: Mapping[str, JsonValue] | None = None,
    requested_threads: ThreadConfig | None = None,
) -> EnvironmentManifest:
    """Read the environment now: after threads are applied and the model is built (CUDA initialised).

    ``adapter_module``: the module of the adapter class (``type(adapter).__module__``; ``module:Class``
    is accepted); its checkout's commit is recorded when it lies in a git repository. ``adapter_options``:
    the files they name are hashed (:mod:`streambench.harness.instruments.model_files`). ``nvml``: items of
    :data:`NVML_FIELDS` read by the NVML module, replacing the ``None`` placeholders. ``root``: the root of
    ``/proc``, ``/sys`` and ``/etc`` (tests inject a fake one). ``adapter_modules``: the modules loaded in
    the adapter's process once built and those its build loaded (``adapter_packages``);
    ``adapter_threads``: torch's threads there, which replace this process's in the thread items when that
    process imported torch; ``data_sources``: the data's files as read; ``requested_threads``: the run's
    thread setting, fingerprinted where the adapter's process did not report torch's (a model without
    torch, a protocol that does not read it), so that every run of one setting on one machine shares a
    fingerprint whatever this process's own pool is. Never raises for an unreadable item.
    """
    import numpy
    import torch

    import streambench.harness

    unknown = set(nvml or {}) - set(NVML_FIELDS)
    if unknown:
        raise ValueError(f"nvml may only fill {NVML_FIELDS}, got {sorted(unknown)}")
    if nvml is None:
        from streambench.harness.instruments.nvml import read_lock_items

        nvml = {name: Item(value=value, reason=reason) for name, (value, reason) in read_lock_items().items()}
    gpu_nvml = {name: missing_item(NEEDS_NVML) for name in NVML_FIELDS} | dict(nvml)
    affinity = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    ort = version("onnxruntime") or version("onnxruntime-gpu")
    cpus = os.cpu_count()
    seen = adapter_threads if adapter_threads is not None and adapter_threads.torch_imported else None
    asked = requested_threads
    fallback_intra = asked.intra_op if asked is not None and asked.intra_op is not None else None
    fallback_inter = asked.inter_op if asked is not None and asked.inter_op is not None else None
    intra = seen.intra_op if seen is not None and seen.intra_op is not None else fallback_intra
    inter = seen.inter_op if seen is not None and seen.inter_op is not None else fallback_inter
    intra = torch.get_num_threads() if intra is None else intra
    inter = torch.get_num_interop_threads() if inter is None else inter
    return EnvironmentManifest(
        collected_at=datetime.now(timezone.utc),
        **gpu_nvml,
        **_gpu_items(torch),
        torch_version=value_item(str(torch.__version__)),
        numpy_version=value_item(str(numpy.__version__)),
        onnxruntime_version=value_item(ort) if ort else missing_item("onnxruntime is not installed"),
        packages=guarded(lambda: value_item(package_versions()), "package versions"),
        thread_env=value_item(dict(read_thread_env())),
        torch_intra_op_threads=value_item(int(intra)),  # the adapter's process's, where it imported torch
        torch_inter_op_threads=value_item(int(inter)),
        cpu_affinity=value_item(len(affinity))
        if affinity
        else missing_item("os.sched_getaffinity is not available"),
        torch_flags=guarded(lambda: value_item(_torch_flags(torch)), "torch flags"),
        decoder=guarded(read_decoder, "ffmpeg"),
        cpu_model=guarded(lambda: read_cpu_model(root), "CPU model"),
        cpu_count=value_item(cpus) if cpus else missing_item("os.cpu_count() is None"),
        cpu_governor=guarded(lambda: read_governor(root), "CPU governor"),
        clocksource=guarded(lambda: read_clocksource(root), "clock source"),
        kernel=value_item(f"{platform.system()} {platform.release()}"),
        os=guarded(lambda: read_os(root), "OS"),
        machine=value_item(platform.machine())
        if platform.machine()
        else missing_item("platform.machine() is empty"),
        python_version=value_item(platform.python_version()),
        python_implementation=value_item(platform.python_implementation()),
        seeds=value_item(dict(seeds)),
        harness_git=guarded(
            lambda: git_state(Path(streambench.harness.__file__).resolve().parent), "harness git"
        ),
        adapter_git=guarded(lambda: read_adapter_git(adapter_module), "adapter git"),
        data_hash=value_item(data_hash) if data_hash else missing_item("no data hash given"),
        model_files=guarded(lambda: _model_files_item(adapter_options), "model files"),
        adapter_packages=guarded(
            lambda: value_item(adapter_distributions(*adapter_modules)), "adapter packages"
        )
        if adapter_modules is not None
        else missing_item("the adapter's process did not report its modules"),
        data_sources=value_item(dict(data_sources))
        if data_sources
        else missing_item("no stream was read from an audio file"),
    )


def _model_files_item(adapter_options: Mapping[str, Any] | None) -> Item:
    if adapter_options is None:
        return missing_item("no adapter options given")
    files = model_files(adapter_options)
    if not files:
        return missing_item("the adapter's options name no file")
    return value_item({option: dict(entry) for option, entry in files.items()})
