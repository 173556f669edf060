"""The speed side of the online protocol: latency, RTF, the stage breakdown, paced or replayed
timelines, the CUDA device share (seed 004 §6.2.2 (2), §6.3.1 (3); DESIGN.md "The engine") and, for a
served model, the server's own model-only figure beside the end-to-end one (docs/serving.md).

Pure: computed from recordings, like the rest of the protocol.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from streambench.protocols.metrics import LatencySummary, latency_summary, rtf
from streambench.protocols.pacing import PacingPolicy, recording_timeline
from streambench.protocols.recording import StreamRecording


class StageRow(BaseModel):
    """One row of the latency breakdown (seed 004 §6.3.1 (3)): a named stage inside ``predict()``."""

    stage: str
    ms_per_frame: float
    share: float = Field(description="fraction of the total predict() time")
    method: str = "host perf_counter_ns"


class ReplayFigures(BaseModel):
    """Frames arriving on time: the recorded latencies replayed in virtual time, or, for a paced run,
    what the pacer measured (DESIGN.md "The engine": paced and replay)."""

    policy: PacingPolicy
    measured: bool = Field(description="true: measured on the wall clock by a paced run; false: replayed")
    deadline_miss_rate: float = Field(description="frames finished after the next frame arrived, or dropped")
    drop_rate: float
    mean_wait_ms: float = Field(description="mean time a frame waited for the worker")
    p50_response_ms: float | None = Field(description="median latency counted from the frame's arrival")
    p95_response_ms: float | None = Field(description="95th percentile latency counted from arrival")
    p95_staleness_ms: float | None = Field(description="95th percentile age of the newest output at arrival")


class DeviceFigures(BaseModel):
    """The device share of ``predict()`` from CUDA event pairs (seed 004 §6.2.2), beside the host time."""

    latency: LatencySummary
    divergent_frames: int = Field(
        description="frames with device time above host time (the adapter did not synchronise) or host "
        "time above divergence_factor x device time"
    )
    first_divergent: list[str] = Field(description="up to five 'stream:frame' of divergent frames")


class ServedFigures(BaseModel):
    """A served model (docs/serving.md): ``predict()`` is a frame's round trip to the server on the
    client's clock (end to end); where the reply carried the server's own time of its model (model-only),
    the difference per frame is the serving overhead (network, (de)serialisation, the server's framework
    and queue). Over the frames whose reply carried a figure; the figures are the server's word."""

    frames: int = Field(description="frames measured (end to end)")
    frames_with_figure: int = Field(description="frames whose reply carried the server's figure")
    end_to_end: LatencySummary | None = Field(
        None, description="send -> reply on the client's clock, over the frames with a figure"
    )
    model_only: LatencySummary | None = Field(None, description="the server's figure (its word)")
    overhead_mean_ms: float | None = None
    overhead_p50_ms: float | None = Field(None, description="50th percentile of end to end - model-only")
    overhead_p95_ms: float | None = None
    overhead_p99_ms: float | None = None
    model_above_end_to_end: int = Field(
        0, description="frames whose server figure exceeds the client's round trip (it cannot be right)"
    )
    reason: str | None = Field(None, description="why there is no model-only figure")


class SpeedFigures(BaseModel):
    """The speed side: per-frame latency of ``predict()``, FPS, RTF and the stage breakdown."""

    latency: LatencySummary
    rtf: float
    processing_s: float
    duration_s: float
    replay: ReplayFigures
    device: DeviceFigures | None = Field(None, description="CUDA adapters only")
    served: ServedFigures | None = Field(None, description="adapters of a served model only")
    breakdown: list[StageRow] = Field(
        default_factory=list,
        description="named stages, then the time outside any stage; empty without stages",
    )


def speed_figures(
    recs: Sequence[StreamRecording], policy: PacingPolicy, divergence_factor: float
) -> SpeedFigures:
    """Latency, FPS, RTF, breakdown, replay and device figures of the given streams."""
    # a frame the pacer dropped has no latency: only frames whose predict() ran are measurements
    latency_ns = np.concatenate([measured_latency(r) for r in recs])
    summary = latency_summary(latency_ns)
    processing_s = float(latency_ns.sum()) / 1e9
    duration_s = sum(r.duration_ns for r in recs) / 1e9
    return SpeedFigures(
        replay=_replay(recs, policy),
        device=_device(recs, divergence_factor),
        served=served_figures(recs),
        breakdown=_breakdown(recs, int(latency_ns.sum()), latency_ns.size),
        latency=summary,
        rtf=rtf(processing_s, duration_s),
        processing_s=processing_s,
        duration_s=duration_s,
    )


def _breakdown(recs: Sequence[StreamRecording], total_ns: int, frames: int) -> list[StageRow]:
    totals: dict[str, int] = {}
    for rec in recs:
        for name, ns in rec.stage_ns.items():
            totals[name] = totals.get(name, 0) + ns
    if not totals or total_ns <= 0:
        return []
    totals["(outside stages)"] = max(total_ns - sum(totals.values()), 0)
    return [
        StageRow(stage=name, ms_per_frame=ns / frames / 1e6, share=ns / total_ns)
        for name, ns in totals.items()
    ]


def _replay(recs: Sequence[StreamRecording], policy: PacingPolicy) -> ReplayFigures:
    timelines = [recording_timeline(rec, policy) for rec in recs]
    frames = sum(t.num_frames for t in timelines)
    misses = sum(int(t.deadline_misses().sum()) for t in timelines)
    dropped = sum(int((~t.processed).sum()) for t in timelines)
    waits = np.concatenate([t.wait_ns[t.processed] for t in timelines])
    response = np.concatenate([t.response_ns[t.processed] for t in timelines]) / 1e6
    stale = np.concatenate([t.staleness_ns() for t in timelines])
    stale = stale[stale >= 0]
    return ReplayFigures(
        policy=timelines[0].policy,
        measured=recs[0].paced_start_ns is not None,
        deadline_miss_rate=misses / frames,
        drop_rate=dropped / frames,
        mean_wait_ms=float(waits.mean()) / 1e6 if waits.size else 0.0,
        p50_response_ms=float(np.percentile(response, 50)) if response.size else None,
        p95_response_ms=float(np.percentile(response, 95)) if response.size else None,
        p95_staleness_ms=float(np.percentile(stale, 95)) / 1e6 if stale.size else None,
    )


def measured_latency(rec: StreamRecording) -> np.ndarray:
    return rec.latency_ns if rec.paced_start_ns is None else rec.latency_ns[rec.paced_start_ns >= 0]


def _device(recs: Sequence[StreamRecording], factor: float) -> DeviceFigures | None:
    if any(r.device_ns is None for r in recs):
        return None
    device: list[np.ndarray] = []
    flagged: list[str] = []
    for rec in recs:
        assert rec.device_ns is not None
        fed = (
            np.arange(rec.num_frames)
            if rec.paced_start_ns is None
            else np.flatnonzero(rec.paced_start_ns >= 0)
        )
        host, dev = rec.latency_ns[fed].astype(np.float64), rec.device_ns[fed].astype(np.float64)
        bad = (dev > host + 1_000) | (host > factor * np.maximum(dev, 1.0))  # 1 µs of event resolution
        device.append(rec.device_ns[fed])
        flagged.extend(f"{rec.stream_id}:{int(i)}" for i in fed[bad])
    return DeviceFigures(
        latency=latency_summary(np.concatenate(device)),
        divergent_frames=len(flagged),
        first_divergent=flagged[:5],
    )


def served_figures(recs: Sequence[StreamRecording]) -> ServedFigures | None:
    """End to end, model-only and their difference over the measured frames whose reply carried the
    server's figure (:class:`ServedFigures`); None when no stream was recorded from a served model."""
    if all(r.server_ns is None for r in recs):
        return None
    client: list[np.ndarray] = []
    server: list[np.ndarray] = []
    frames = 0
    for rec in recs:
        measured = (
            np.ones(rec.num_frames, dtype=bool) if rec.paced_start_ns is None else rec.paced_start_ns >= 0
        )
        frames += int(measured.sum())
        if rec.server_ns is None:
            continue
        kept = measured & (rec.server_ns >= 0)
        client.append(rec.latency_ns[kept])
        server.append(rec.server_ns[kept])
    end_to_end = np.concatenate(client) if client else np.zeros(0, dtype=np.int64)
    model = np.concatenate(server) if server else np.zeros(0, dtype=np.int64)
    if model.size == 0:
        return ServedFigures(
            frames=frames, frames_with_figure=0, reason="no reply carried the server's own figure (model_ns)"
        )
    overhead = (end_to_end - model).astype(np.float64) / 1e6
    p50, p95, p99 = np.percentile(overhead, [50.0, 95.0, 99.0])
    return ServedFigures(
        frames=frames,
        frames_with_figure=int(model.size),
        end_to_end=latency_summary(end_to_end),
        model_only=latency_summary(model),
        overhead_mean_ms=float(overhead.mean()),
        overhead_p50_ms=float(p50),
        overhead_p95_ms=float(p95),
        overhead_p99_ms=float(p99),
        model_above_end_to_end=int((overhead < 0).sum()),
    )
