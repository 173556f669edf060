"""Runs the robustness protocol's sweep: every variant's perturbed streams through one engine.

The model is built and warmed up once; each variant's streams are the clean streams wrapped by
harness/perturb.py. An adapter error on a variant is recorded as that point's failure (stream, frame,
error) and the sweep goes on (seed 004 §6.2.2 (3): "模型需处理缺失，不应崩溃").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from adapters.contract import Stream
from harness.adapter_errors import AdapterError
from harness.datasets.catalog import make_streams, make_warmup_stream
from harness.engine import Engine
from harness.perturb import perturb
from harness.results import EnvironmentRecord, write_protocol_result
from harness.runner import ProgressHook, RunConfig, build_adapter, environment_for, run_id_for
from protocols import robustness
from protocols.recording import StreamRecording

__all__ = ["RobustnessResult", "execute_robustness"]

RESULT_FILE = "robustness.json"


class RobustnessResult(EnvironmentRecord):
    """``results/<run_id>/robustness.json``."""

    schema_version: int = 1
    run_id: str
    created_at: datetime
    adapter: str
    config: robustness.RobustnessConfig
    run: RunConfig
    report: robustness.RobustnessReport


def execute_robustness(
    config: RunConfig, sweep: robustness.RobustnessConfig, progress: ProgressHook | None = None
) -> tuple[RobustnessResult, Path]:
    import torch

    torch.manual_seed(config.torch_seed)
    streams = make_streams(config.data)
    adapter = build_adapter(config, streams[0])
    engine = Engine(adapter, config.engine)
    if config.engine.warmup_frames:
        engine.warm_up(make_warmup_stream(config.data, config.engine.warmup_frames))
    variants = robustness.plan(sweep)
    outcomes: dict[str, Sequence[StreamRecording] | robustness.Failure] = {}
    for done, variant in enumerate(variants, start=1):
        outcomes[variant.name] = _run_variant(engine, streams, variant)
        if progress is not None:
            progress(done, len(variants), variant.name)
    report = robustness.score(outcomes, variants, sweep, streams[0].classes)
    environment, fingerprint = environment_for(config, streams, type(adapter).__module__)
    run_id = config.run_id or run_id_for(config.adapter, "robustness")
    result = RobustnessResult(
        run_id=run_id,
        created_at=datetime.now(timezone.utc),
        adapter=config.adapter,
        config=sweep,
        run=config,
        report=report,
        environment=environment,
        fingerprint=fingerprint,
    )
    return result, write_protocol_result(config.output_dir, run_id, RESULT_FILE, result)


def _run_variant(
    engine: Engine,
    streams: Sequence[Stream],
    variant: robustness.Variant,
) -> list[StreamRecording] | robustness.Failure:
    recordings = []
    for index, stream in enumerate(streams):
        perturbed = perturb(stream, list(variant.perturbations), stream_index=index)
        try:
            recordings.append(engine.run_stream(perturbed))
        except AdapterError as exc:
            return robustness.Failure(stream_id=exc.stream_id, frame=exc.frame, error=exc.problem)
    return recordings
