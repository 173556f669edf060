"""Executes a protocol's plan with the engine and writes the run (DESIGN.md "Layout", floor 3).

``execute_run`` is what ``streambench run`` does: build the data set and the adapter, hand the online
protocol an executor backed by the engine, and write ``result.json`` with the per-frame arrays.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from adapters.contract import Adapter, Stream
from adapters.registry import create_adapter
from harness.datasets.synthetic import SyntheticConfig, make_streams, make_warmup_stream
from harness.engine import Engine, EngineConfig, clock_info
from harness.instruments.data_hash import hash_streams
from harness.instruments.manifest import collect_manifest, fingerprint
from harness.instruments.memory import MemoryProbe, MemoryReport
from harness.instruments.power import EnergyReport, PowerConfig, PowerMeter
from harness.instruments.rapl import RaplMeter, RaplReport
from harness.instruments.threads import ThreadConfig
from harness.instruments.threads import apply as apply_threads
from harness.results import (
    NormalisationRecord,
    ResourceRecord,
    RunResult,
    SeedRecord,
    WarmupRecord,
    load_result,
    package_version,
    write_run,
)
from protocols import online
from protocols.base import Plan
from protocols.metrics import flops_normalised_latency, speedup
from protocols.recording import StreamRecording

__all__ = ["ProgressHook", "RunConfig", "execute_run"]

ProgressHook = Callable[[int, int, str], None]
"""Called after each stream: (streams done, streams planned, id of the stream just finished)."""


class RunConfig(BaseModel):
    """One run: which adapter, on which data, under which protocol and engine settings."""

    model_config = ConfigDict(extra="forbid")

    adapter: str = Field("reference", description="registry name or importable module:Class")
    adapter_options: dict[str, Any] = Field(
        default_factory=dict, description="validated by the adapter's own Options model"
    )
    dataset: Literal["synthetic"] = "synthetic"
    data: SyntheticConfig = Field(default_factory=SyntheticConfig)
    protocol: online.OnlineConfig = Field(default_factory=online.OnlineConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    threads: ThreadConfig = Field(default_factory=ThreadConfig)
    power: PowerConfig = Field(default_factory=PowerConfig)
    torch_seed: int = 0
    output_dir: Path = Path("results")
    run_id: str | None = None
    baseline: Path | None = Field(
        None, description="a baseline run directory for speed-up and FLOPs normalisation"
    )


class EngineExecutor:
    """The harness side of a protocol: warms up once, then runs each planned stream through the engine."""

    def __init__(
        self,
        engine: Engine,
        streams: Mapping[str, Stream],
        warmup: Stream | None,
        progress: ProgressHook | None = None,
    ) -> None:
        self.engine = engine
        self.streams = streams
        self.warmup = warmup
        self.progress = progress
        self.warmup_record: WarmupRecord | None = None

    def warm_up(self) -> None:
        """Warm the model up once (also done by the first ``execute`` if not called before)."""
        if self.warmup is not None and self.warmup_record is None:
            frames = self.engine.warm_up(self.warmup)
            self.warmup_record = WarmupRecord(stream_id=self.warmup.stream_id, frames=frames)

    def execute(self, plan: Plan) -> Sequence[StreamRecording]:
        missing = [s.stream_id for s in plan.streams if s.stream_id not in self.streams]
        if missing:
            raise KeyError(f"plan names unknown streams: {missing[:5]}")
        self.warm_up()
        recordings = []
        for done, planned in enumerate(plan.streams, start=1):
            recordings.append(self.engine.run_stream(self.streams[planned.stream_id], planned.role))
            if self.progress is not None:
                self.progress(done, len(plan.streams), planned.stream_id)
        return recordings


def run_id_for(adapter: str, protocol: str = "") -> str:
    """A new run id: UTC time, the adapter's name, the protocol (if not online), a random suffix."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", adapter.rsplit(":", 1)[-1]).strip("-").lower() or "adapter"
    middle = f"{slug}-{protocol}" if protocol else slug
    return f"{datetime.now(timezone.utc):%Y%m%d-%H%M%S}-{middle}-{secrets.token_hex(3)}"


def build_adapter(config: RunConfig, sample: Stream) -> Adapter:
    """The adapter, with its data-bound options filled from the data set."""
    first = next(iter(sample.frames()))
    input_dims = {m: int(getattr(v, "size", 0)) for m, v in first.inputs.items() if v is not None}
    adapter = create_adapter(
        config.adapter,
        config.adapter_options,
        data_bound={"classes": sample.classes, "input_dims": input_dims},
    )
    declared = tuple(adapter.info.classes)
    if declared != tuple(sample.classes):
        raise ValueError(
            f"adapter {config.adapter!r} declares classes {list(declared)[:6]}..., the data set has "
            f"{list(sample.classes)[:6]}... ({len(declared)} vs {len(sample.classes)} classes); "
            "they must match in name and order"
        )
    return adapter


def execute_run(
    config: RunConfig, progress: ProgressHook | None = None
) -> tuple[RunResult, list[StreamRecording], Path]:
    """Run the online protocol end to end and write ``<output_dir>/<run_id>/``."""
    import torch

    thread_record = apply_threads(config.threads)  # before the model exists (seed 004: 线程绑定)
    torch.manual_seed(config.torch_seed)
    streams = make_streams(config.data)
    warmup = (
        make_warmup_stream(config.data, config.engine.warmup_frames) if config.engine.warmup_frames else None
    )
    adapter = build_adapter(config, streams[0])
    engine = Engine(adapter, config.engine)
    executor = EngineExecutor(engine, {s.stream_id: s for s in streams}, warmup, progress)
    run_plan = online.plan(config.protocol, [s.stream_id for s in streams])
    seeds = SeedRecord(dataset=config.data.seed, torch=config.torch_seed, split=config.protocol.split_seed)
    manifest = collect_manifest(seeds.model_dump(), hash_streams(streams), type(adapter).__module__)

    gpu_meter = PowerMeter.open(config.power)
    cpu_meter = RaplMeter.open()
    try:
        gpu_meter.measure_idle()  # before warm-up, while the device is idle
        executor.warm_up()
        memory, gpu_energy, cpu_energy, recordings = _measured(executor, run_plan, gpu_meter, cpu_meter)
    finally:
        gpu_meter.close()
        cpu_meter.close()
    flops, flops_reason = engine.count_flops(streams[0])
    metrics = online.score(recordings, config.protocol, streams[0].classes)
    frames = sum(r.num_frames for r in recordings)
    per_frame = gpu_energy.energy_per_frame_j(frames)

    run_id = config.run_id or run_id_for(config.adapter)
    result = RunResult(
        run_id=run_id,
        created_at=datetime.now(timezone.utc),
        streambench_version=package_version("streambench") or "unknown",
        adapter=config.adapter,
        adapter_options=config.adapter_options,
        adapter_info=adapter.info,
        dataset=config.dataset,
        dataset_config=config.data.model_dump(mode="json"),
        protocol_config=config.protocol,
        engine=config.engine,
        seeds=seeds,
        clock=clock_info(adapter.info.device),
        threads=thread_record,
        environment=manifest,
        fingerprint=fingerprint(manifest),
        resources=ResourceRecord(
            memory=memory,
            gpu_energy=gpu_energy,
            cpu_energy=cpu_energy,
            energy_per_frame_j=per_frame,
            energy_per_frame_reason=None
            if per_frame is not None
            else gpu_energy.reason or "no energy measured",
            power_at_rtf1_w=gpu_energy.mean_power_w if config.engine.pacing == "paced" else None,
            power_at_rtf1_reason=_rtf1_reason(config, gpu_energy),
            frames_measured=frames,
            flops_per_frame=flops,
            flops_reason=flops_reason,
        ),
        warmup=executor.warmup_record,
        streams={role: run_plan.ids(role) for role in ("test", "validation")},
        metrics=metrics,
    )
    if config.baseline is not None:
        result.normalisation = normalise(result, config.baseline)
    path = write_run(config.output_dir / run_id, result, recordings)
    return result, recordings, path.parent


def _measured(
    executor: EngineExecutor, run_plan: Plan, gpu_meter: PowerMeter, cpu_meter: RaplMeter
) -> tuple[MemoryReport, EnergyReport, RaplReport, list[StreamRecording]]:
    """Run the plan inside the memory and energy window; the meters are read only at its edges and on
    their own sampling threads, never inside the timed frame loop."""
    probe = MemoryProbe()
    probe.start()
    gpu_meter.start()
    cpu_meter.start()
    try:
        recordings = list(executor.execute(run_plan))
    finally:
        cpu_energy = cpu_meter.stop()
        gpu_energy = gpu_meter.stop()
        memory = probe.stop()
    return memory, gpu_energy, cpu_energy, recordings


def normalise(result: RunResult, baseline_dir: Path) -> NormalisationRecord:
    """Speed-up and FLOPs-normalised latency against a baseline run on the same environment fingerprint."""
    base = load_result(baseline_dir)
    record = {"baseline_run": base.run_id, "baseline_path": str(baseline_dir)}
    if base.fingerprint != result.fingerprint:
        return NormalisationRecord(
            **record,
            speedup=None,
            flops_normalised_latency_ms=None,
            reason=f"environment fingerprints differ ({base.fingerprint} vs {result.fingerprint}): "
            "latencies from different environments are not compared",
        )
    mean_ms = result.metrics.overall.speed.latency.mean_ms
    base_ms = base.metrics.overall.speed.latency.mean_ms
    flops, base_flops = result.resources.flops_per_frame, base.resources.flops_per_frame
    normalised = (
        None if flops is None or base_flops is None else flops_normalised_latency(mean_ms, flops, base_flops)
    )
    return NormalisationRecord(
        **record,
        speedup=speedup(base_ms, mean_ms) if mean_ms > 0 and base_ms > 0 else None,
        flops_normalised_latency_ms=normalised,
        reason=None if normalised is not None else "FLOPs per frame unknown for this run or the baseline",
    )


def _rtf1_reason(config: RunConfig, gpu_energy: EnergyReport) -> str | None:
    if config.engine.pacing != "paced":
        return "needs a paced run (--pacing paced): unpaced frames do not arrive in real time"
    return None if gpu_energy.mean_power_w is not None else gpu_energy.reason or "no power measured"
