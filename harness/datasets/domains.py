"""Seeded domain-labelled frames and the stream layouts of the router hysteresis protocol (seed 001).

A *domain* is a feature distribution: a frame of domain ``d`` carries, in the modality ``"signal"``,
``amplitude · s_d + noise_std · N(0, I)``, where ``s_d`` is the domain's unit signature
(:func:`streambench.adapters.router.domain_signature`, which the reference router uses as its matched
filters). Streams are built from *segments* (seed 001: "A→B→A", its control "A→A" without B, and "микс"
segments of A and B frames in a given proportion):

* :func:`aba_stream` — ``A1 (len_a) → B (len_b) → A2 (len_a2)``;
* :func:`control_stream` — ``A1 → A2`` with exactly the frames of :func:`aba_stream`'s A segments
  (same repeat), B left out, so the control differs from the forward stream only by B (the pairing
  the hysteresis loop area, seed 001 §3, compares);
* :func:`mix_stream` — ``A1 → MIX (len_mix, a_share) → A2``: the mix holds ``round(a_share · len_mix)``
  A frames (Python's ``round``: half to even) and the rest B, in a seeded random order.

A segment's frames depend only on ``(seed, segment key, frame position in the segment)``: segment
``A1`` of repeat ``r`` is the same in every layout of that repeat, and a longer B segment extends a
shorter one (its first frames are the same), so layouts of one repeat are paired. Every stream records
its layout in ``meta["segments"]`` (label, start, end, A share) and ``meta["boundaries"]`` (label ->
start frame), and is labelled one-hot with the domain of each frame.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.router import DOMAIN_MODALITY, domain_signature

__all__ = [
    "DomainSource",
    "Segment",
    "aba_stream",
    "control_stream",
    "mix_stream",
    "segment_stream",
    "warmup_stream",
]


class DomainSource(BaseModel):
    """The frame source: domain names (A, B, ...), feature size, signal and noise, frame rate, seed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    domains: tuple[str, ...] = Field(
        ("A", "B"), min_length=2, description="domain names; A and B are the first two"
    )
    dim: int = Field(32, ge=2, description="features per frame")
    amplitude: float = Field(1.0, gt=0.0, description="length of the domain signature in a frame")
    noise_std: float = Field(0.2, ge=0.0, description="standard deviation of the per-feature noise")
    fps: float = Field(25.0, gt=0.0, description="frames per second (one frame = one token)")
    seed: int = Field(0, ge=0)


@dataclass(frozen=True, slots=True)
class Segment:
    """``length`` frames labelled ``label``: ``a_share`` of them from domain 0 (A), the rest from domain 1.

    ``key`` names the segment's noise and order: segments with the same key share frames (prefix).
    """

    label: str
    length: int
    a_share: float
    key: str


def _rng(source: DomainSource, key: str, *extra: int) -> np.random.Generator:
    return np.random.default_rng([source.seed, zlib.crc32(key.encode("utf-8")), *extra])


def _segment_domains(source: DomainSource, seg: Segment) -> np.ndarray:
    n_a = round(seg.a_share * seg.length)
    domains = np.ones(seg.length, dtype=np.int64)
    domains[:n_a] = 0
    if 0 < n_a < seg.length:
        share_code = round(seg.a_share * 1_000_000)
        domains = _rng(source, seg.key, 1, share_code, seg.length).permutation(domains)
    return domains


def segment_stream(source: DomainSource, stream_id: str, segments: Sequence[Segment]) -> Stream:
    """A stream laid out as ``segments`` (in order); see the module doc for the frames and ``meta``."""
    if not segments or any(s.length < 1 for s in segments):
        raise ValueError(f"stream {stream_id!r}: every segment needs at least one frame")
    if any(not 0.0 <= s.a_share <= 1.0 for s in segments):
        raise ValueError(f"stream {stream_id!r}: a_share must lie in [0, 1]")
    signatures = source.amplitude * np.stack([domain_signature(d, source.dim) for d in source.domains])
    domains = np.concatenate([_segment_domains(source, s) for s in segments])
    payload = np.concatenate(
        [_rng(source, s.key, 0).standard_normal((s.length, source.dim)) for s in segments]
    )
    payload = (signatures[domains] + source.noise_std * payload).astype(np.float32)
    n = int(domains.size)
    labels = np.zeros((n, len(source.domains)), dtype=bool)
    labels[np.arange(n), domains] = True
    times = (np.arange(n) + 1) / source.fps
    starts = np.concatenate(([0], np.cumsum([s.length for s in segments])))
    meta = {
        "segments": [
            {"label": s.label, "start": int(a), "end": int(b), "a_share": s.a_share}
            for s, a, b in zip(segments, starts[:-1], starts[1:], strict=True)
        ],
        "boundaries": {s.label: int(a) for s, a in zip(segments, starts[:-1], strict=True)},
        "domains": domains,
    }

    def frames() -> list[Frame]:
        return [Frame(index=i, t=float(times[i]), inputs={DOMAIN_MODALITY: payload[i]}) for i in range(n)]

    return Stream(
        stream_id=stream_id,
        classes=source.domains,
        labels=labels,
        frame_times=times,
        frame_source=frames,
        modalities=(DOMAIN_MODALITY,),
        meta=meta,
    )


def aba_stream(
    source: DomainSource, stream_id: str, len_a: int, len_b: int, len_a2: int | None = None, repeat: int = 0
) -> Stream:
    """``A1 (len_a) → B (len_b) → A2 (len_a2, default len_a)`` — seed 001's forward trajectory."""
    return segment_stream(
        source,
        stream_id,
        [
            Segment("A1", len_a, 1.0, f"A1/{repeat}"),
            Segment("B", len_b, 0.0, f"B/{repeat}"),
            Segment("A2", len_a if len_a2 is None else len_a2, 1.0, f"A2/{repeat}"),
        ],
    )


def control_stream(
    source: DomainSource, stream_id: str, len_a: int, len_a2: int | None = None, repeat: int = 0
) -> Stream:
    """``A1 → A2`` without B: the same frames as :func:`aba_stream`'s A segments — seed 001 §3's control."""
    return segment_stream(
        source,
        stream_id,
        [
            Segment("A1", len_a, 1.0, f"A1/{repeat}"),
            Segment("A2", len_a if len_a2 is None else len_a2, 1.0, f"A2/{repeat}"),
        ],
    )


def mix_stream(
    source: DomainSource,
    stream_id: str,
    len_a: int,
    len_mix: int,
    a_share: float,
    len_a2: int | None = None,
    repeat: int = 0,
) -> Stream:
    """``A1 → MIX → A2``: the mix has ``round(a_share · len_mix)`` A frames, the rest B (seed 001 §4)."""
    return segment_stream(
        source,
        stream_id,
        [
            Segment("A1", len_a, 1.0, f"A1/{repeat}"),
            Segment("MIX", len_mix, a_share, f"MIX/{repeat}"),
            Segment("A2", len_a if len_a2 is None else len_a2, 1.0, f"A2/{repeat}"),
        ],
    )


def warmup_stream(source: DomainSource, num_frames: int, block: int = 10) -> Stream:
    """An unscored stream of ``num_frames`` frames: blocks of ``block`` frames alternating A and B."""
    n_blocks = max(1, -(-num_frames // block))
    segments = [
        Segment(f"W{i}", min(block, num_frames - i * block) or block, 1.0 - (i % 2), f"warmup/{i}")
        for i in range(n_blocks)
    ]
    return segment_stream(source, "warmup", segments)
