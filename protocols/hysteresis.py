"""The router hysteresis protocol (seed 001): switch-lag, return-gap, loop area, mix entropy.

Seed 001 (``seeds/001_261c0fd2b5e89637.txt``) measures how a router's per-step domain weights
``w(t)`` (``[T, M]``) keep the memory of a trajectory A→B→A:

* §1 switch-lag: steps after a segment boundary until the new domain's weight is ``≥ threshold``
  (0.9) for ``K`` (3) steps in a row, for A→B (from the start of B) and B→A (from the start of the
  second A), and their asymmetry ``lag(B→A) − lag(A→B)``;
* §2 return-gap between the first and the second A segment: cosine, Euclidean (mean over the aligned
  prefix) and DTW;
* §3 hysteresis loop area ``Σ_t |w_A(t) − w_A_ctrl(t)|`` against the control A→A: the forward
  stream without its middle segment (A1 then A2) against the control stream, which carries exactly
  the same A frames without B (``harness/datasets/domains.py``). Where the router forgets B at once the
  area is 0; the area over A1 is 0 for any causal router, so the area measures A2;
* §4 the entropy of the weights over a mix segment (mean of the per-step entropies).

The metrics are :mod:`streambench.protocols.metrics.router`. This module plans the four follow-up experiments
of the seed (:mod:`streambench.protocols.hysteresis_experiments`) and scores their recordings: pure, no model,
no clock. The weights of a stream are ``StreamRecording.weights`` when the run recorded them, otherwise
its scores (the class probabilities, for an adapter that gives no weights); per frame, the latest
row emitted at or before that frame (a uniform row before the first one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from streambench.protocols.hysteresis_config import (
    ARMS,
    EXPERIMENTS,
    Arm,
    Experiment,
    HysteresisConfig,
    StreamSettings,
)
from streambench.protocols.hysteresis_experiments import PlannedStream, Row, plan, summarise
from streambench.protocols.metrics.router import (
    hysteresis_area,
    return_gap,
    switch_lag,
    weight_entropy,
)
from streambench.protocols.recording import StreamRecording

__all__ = [
    "ARMS",
    "EXPERIMENTS",
    "NAME",
    "Arm",
    "Experiment",
    "HysteresisConfig",
    "HysteresisReport",
    "PlannedStream",
    "Row",
    "StreamMeasures",
    "StreamSettings",
    "frame_weights",
    "measure",
    "plan",
    "score",
]

NAME = "hysteresis"


class StreamMeasures(BaseModel):
    """Seed 001's metrics of one forward stream (and its control)."""

    lag_ab: int | None = Field(description="§1 switch-lag to B from the start of B (None: no stable switch)")
    lag_ba: int | None = Field(description="§1 switch-lag to A from the start of A2")
    asymmetry: int | None = Field(description="lag_ba − lag_ab")
    gap_cosine: float
    gap_euclidean: float
    gap_dtw: float
    loop_area: float = Field(description="§3 Σ_t |w_A − w_A_ctrl| over A1 then A2")
    control_gap_cosine: float = Field(description="§2 cosine return-gap of the control A→A (the floor)")
    mix_entropy: float | None = Field(description="§4 mean entropy (nats) over the mix segment")


class HysteresisReport(BaseModel):
    protocol: Literal["hysteresis"] = "hysteresis"
    weights_source: Literal["weights", "scores"]
    rows: list[Row]


def frame_weights(rec: StreamRecording) -> np.ndarray:
    """``[T, M]`` float64: per frame, the latest weights row emitted at or before it (uniform before any).

    The rows are ``rec.weights`` when recorded, otherwise ``rec.scores`` (class probabilities).
    """
    rows = rec.weights if rec.weights is not None else rec.scores
    rows = np.asarray(rows, dtype=np.float64)
    m = rows.shape[1] if rows.ndim == 2 and rows.shape[1] else rec.labels.shape[1]
    out = np.full((rec.num_frames, m), 1.0 / m)
    if rows.shape[0] == 0:
        return out
    # index of the last prediction emitted at or before each frame (emission order is non-decreasing)
    last = np.searchsorted(rec.emitted_at, np.arange(rec.num_frames), side="right") - 1
    seen = last >= 0
    out[seen] = rows[last[seen]]
    return out


def measure(
    config: HysteresisConfig,
    forward: np.ndarray,
    control: np.ndarray,
    entry: PlannedStream,
    hybrid: np.ndarray | None = None,
    hybrid_entry: PlannedStream | None = None,
) -> StreamMeasures:
    """The metrics of one forward stream's frame weights ``[T, M]`` and its control's (seed 001 §1-4).

    Domain A is column 0, B column 1. ``hybrid`` (experiment C) is a mix stream whose mix entropy is
    reported; for a forward stream whose middle segment is itself a mix, that segment's is.
    """
    a1, mid, a2 = entry.bounds()
    thr, k, strict = config.threshold, config.k, config.strict
    lag_ab = switch_lag(forward, 1, mid, thr, k, strict=strict) if entry.layout == "aba" else None
    lag_ba = switch_lag(forward, 0, a2, thr, k, strict=strict)
    first, second = forward[:a1], forward[a2:]
    gaps = {m: return_gap(first, second, m, dtw_cost=config.dtw_cost) for m in ("cosine", "euclidean", "dtw")}
    area = hysteresis_area(np.concatenate([first, second]), control, domain=0)
    control_gap = return_gap(control[: entry.len_a], control[entry.len_a :], "cosine")
    if entry.layout == "mix":
        mix_w: np.ndarray | None = forward[mid:a2]
    elif hybrid is not None and hybrid_entry is not None:
        _, h_mid, h_a2 = hybrid_entry.bounds()
        mix_w = hybrid[h_mid:h_a2]
    else:
        mix_w = None
    return StreamMeasures(
        lag_ab=lag_ab,
        lag_ba=lag_ba,
        asymmetry=lag_ba - lag_ab if lag_ab is not None and lag_ba is not None else None,
        gap_cosine=gaps["cosine"],
        gap_euclidean=gaps["euclidean"],
        gap_dtw=gaps["dtw"],
        loop_area=area,
        control_gap_cosine=control_gap,
        mix_entropy=weight_entropy(mix_w).mean if mix_w is not None else None,
    )


def score(
    config: HysteresisConfig,
    planned: Sequence[PlannedStream],
    recordings: Mapping[str, StreamRecording],
    weights_source: Literal["weights", "scores"] | None = None,
) -> HysteresisReport:
    """Every row of the planned experiments from the recorded streams (keyed by stream id).

    ``weights_source`` names where the run's adapter took its weights from (default: ``"weights"`` when
    every recording holds weights, else ``"scores"``).
    """
    missing = [p.stream_id for p in planned if p.stream_id not in recordings]
    if missing:
        raise ValueError(f"no recording for planned stream(s) {missing[:5]}")
    weights = {p.stream_id: frame_weights(recordings[p.stream_id]) for p in planned}
    by_key = {(p.row_key, p.repeat, p.part): p for p in planned}
    measures: dict[tuple[str, str, str], list[StreamMeasures]] = {}
    for p in planned:
        if p.part != "forward":
            continue
        control = by_key[(p.row_key, p.repeat, "control")]
        hybrid = by_key.get((p.row_key, p.repeat, "hybrid"))
        measures.setdefault(p.row_key, []).append(
            measure(
                config,
                weights[p.stream_id],
                weights[control.stream_id],
                p,
                weights[hybrid.stream_id] if hybrid is not None else None,
                hybrid,
            )
        )
    source: Literal["weights", "scores"] = weights_source or (
        "weights" if all(r.weights is not None for r in recordings.values()) else "scores"
    )
    rows = [summarise(key, [m.model_dump() for m in ms]) for key, ms in measures.items()]
    return HysteresisReport(weights_source=source, rows=rows)
