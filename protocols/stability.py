"""The stability protocol: temporal stability of a model's sparse features (seed 000 §1-5).

Plan: the online protocol's plan (every stream once, batch 1, state reset per stream); the harness runs
it with ``Prediction.features`` recorded (``StreamRecording.features`` ``[P, K]``). Score (pure, from
the recordings), per test stream and over all of them:

* a stream's feature sequence is one row per frame: the features of the *latest* prediction that refers
  to the frame, frames in order (a frame no prediction refers to is left out and counted in
  ``frames_without_features``). For a model that labels each frame once as it arrives this is simply the
  emitted rows in order;
* ``feature_kind="indices"``: each row holds the ``K`` active feature indices (a TopK code), turned into
  the boolean activity by :func:`streambench.protocols.metrics.stability.topk_to_active`; ``K`` is the row
  length; ``"active"``: each row is an activation vector over the dictionary (bool, or numbers: active where
  ``> threshold``, the seed's ``sparse_features > 0``), ``K`` is ``k`` when given, else the largest
  number of active features of any frame;
* the metrics are :func:`streambench.protocols.metrics.stability.temporal_stability` — §1 Jaccard of adjacent
  frames,
  §2 lifetime in both conventions (``runs``: mean over activation runs, the seed's code, and
  ``per_feature``: mean over features of their mean run, the seed's worked steps), §3 transient ratio,
  §4 turnover (new features / K), §5 flips;
* "overall" pools every adjacent pair and every activation run of all test streams into one mean, as
  the seed's loops pool every ``(b, t)`` (runs never cross from one stream to the next; per-feature
  lifetime pools a feature's runs over the streams);
* the relation of "指标之间的关系 / 数学关系" 1, ``Flips ≈ 2K(1 − Jaccard)``, per stream and overall:
  the measured flips against ``2K(1 − J)`` (an upper bound for frames of at most ``K`` features,
  :func:`~streambench.protocols.metrics.stability.flips_jaccard_bound`) and against ``2K(1 − J)/(1 + J)``
  (exact per step when every frame has exactly ``K``,
  :func:`~streambench.protocols.metrics.stability.flips_from_jaccard`).

Streams with fewer than two feature rows have no adjacent pair: listed in ``skipped``, not scored.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.protocols.metrics.stability import (
    EmptyJaccard,
    activation_runs,
    flips_from_jaccard,
    flips_jaccard_bound,
    temporal_stability,
    topk_to_active,
)
from streambench.protocols.recording import StreamRecording

NAME = "stability"
FeatureKind = Literal["indices", "active"]


class StabilityConfig(BaseModel):
    """What the features are and how the seed's conventions are applied."""

    model_config = ConfigDict(extra="forbid")

    feature_kind: FeatureKind = Field(
        "indices",
        description="indices: each row holds the K active feature indices; active: an activation vector",
    )
    k: int | None = Field(
        None,
        ge=1,
        description="K of turnover and 2K(1-J); None: the row length (indices) or the largest frame",
    )
    num_features: int | None = Field(
        None, ge=1, description="indices: dictionary size; None: the largest index seen + 1"
    )
    threshold: float = Field(0.0, description="active: a feature is active where its value > threshold")
    empty_jaccard: EmptyJaccard = Field("one", description="Jaccard of two empty frames: 1.0, or skipped")
    per_stream: bool = Field(True, description="also report every stream's figures")


class FlipsRelation(BaseModel):
    """Seed 000 "数学关系" 1: measured flips against ``2K(1 − J)`` from the mean Jaccard ``J``."""

    k: int
    flips: float = Field(description="measured mean flips per step")
    bound: float | None = Field(description="2K(1 - J): the seed's formula, an upper bound")
    exact_k: float | None = Field(
        description="2K(1 - J)/(1 + J): exact per step when every frame has K (at the mean J: a lower bound)"
    )
    ratio: float | None = Field(description="flips / 2K(1 - J)")


class StabilityFigures(BaseModel):
    """Seed 000 §1-5 over one stream or all test streams (``None`` where undefined, e.g. no run at all)."""

    num_frames: int = Field(description="frames with features")
    num_steps: int = Field(description="adjacent pairs the step means are over")
    jaccard: float | None
    lifetime_runs: float | None = Field(description="mean over activation runs (the seed's code; default)")
    lifetime_per_feature: float | None = Field(description="mean over features of their mean run")
    transient_ratio: float | None
    turnover: float | None = Field(
        description="mean over the steps whose next frame has features (seed 000 §4); None: no such step"
    )
    flips: float
    num_runs: int
    num_transient_runs: int
    relation: FlipsRelation


class StreamStability(BaseModel):
    stream_id: str
    frames_without_features: int
    figures: StabilityFigures


class StabilityReport(BaseModel):
    protocol: Literal["stability"] = "stability"
    feature_kind: FeatureKind
    k: int
    num_features: int
    overall: StabilityFigures
    streams: list[StreamStability]
    skipped: dict[str, str] = Field(default_factory=dict, description="streams not scored, and why")


def _opt(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _defined_mean(values: np.ndarray) -> float:
    """The mean over the defined (non-NaN) values; NaN when none is."""
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if defined.size else float("nan")


def frame_features(recording: StreamRecording) -> tuple[np.ndarray, int]:
    """The stream's features, one row per frame (the latest prediction referring to it), and the number
    of frames that no prediction refers to."""
    if recording.features is None:
        raise ValueError(
            f"stream {recording.stream_id!r}: no features were recorded (the run must record "
            "Prediction.features; the adapter must emit them)"
        )
    refers = np.asarray(recording.refers_to, dtype=np.int64)
    # the latest prediction per frame: the first occurrence in the reversed emission order
    frames, first_rev = np.unique(refers[::-1], return_index=True)
    rows = refers.size - 1 - first_rev
    return np.asarray(recording.features)[rows], recording.num_frames - int(frames.size)


def to_active(rows: np.ndarray, config: StabilityConfig, num_features: int) -> np.ndarray:
    """Boolean activity ``[T, D]`` of one stream's rows."""
    if config.feature_kind == "indices":
        return topk_to_active(rows, num_features)
    if rows.dtype == np.bool_:
        return rows
    return np.asarray(rows > config.threshold)


def _k_and_size(rows: Sequence[np.ndarray], config: StabilityConfig) -> tuple[int, int]:
    """``(K, dictionary size)`` for the whole run."""
    if config.feature_kind == "indices":
        widths = {r.shape[1] for r in rows}
        if len(widths) > 1:
            raise ValueError(f"indices features have different K across streams: {sorted(widths)}")
        width = widths.pop()
        for r in rows:
            if not np.issubdtype(r.dtype, np.integer):
                raise ValueError(f"feature_kind 'indices' needs integer features, got {r.dtype}")
        largest = max(int(r.max()) for r in rows if r.size) if any(r.size for r in rows) else 0
        size = config.num_features if config.num_features is not None else largest + 1
        if largest >= size:
            raise ValueError(f"feature index {largest} is outside num_features={size}")
        return (config.k if config.k is not None else width), size
    sizes = {r.shape[1] for r in rows}
    if len(sizes) > 1:
        raise ValueError(f"activation vectors have different lengths across streams: {sorted(sizes)}")
    size = sizes.pop()
    if config.k is not None:
        return config.k, size
    largest = max(int(np.count_nonzero(to_active(r, config, size), axis=1).max()) for r in rows)
    return max(largest, 1), size


def _figures(
    actives: Sequence[np.ndarray], k: int, num_features: int, empty_jaccard: EmptyJaccard
) -> StabilityFigures:
    """Pooled figures over one or more streams' ``[T, D]`` activity (every stream ``T >= 2``)."""
    jaccards, turnovers, flips, lengths, features = [], [], [], [], []
    for active in actives:
        res = temporal_stability(active, k=k, empty_jaccard=empty_jaccard)
        runs = activation_runs(active)
        jaccards.append(res.jaccard_per_step.ravel())
        turnovers.append(res.turnover_per_step.ravel())
        flips.append(res.flips_per_step.ravel())
        lengths.append(runs.length)
        features.append(runs.feature)
    j = np.concatenate(jaccards)
    kept = j[~np.isnan(j)]
    jaccard = float(kept.mean()) if kept.size else float("nan")
    length = np.concatenate(lengths)
    feature = np.concatenate(features)
    if length.size:
        total = np.bincount(feature, weights=length, minlength=num_features)
        count = np.bincount(feature, minlength=num_features)
        per_feature = float(np.mean(total[count > 0] / count[count > 0]))
        lifetime = float(length.mean())
        transient = float(np.count_nonzero(length == 1) / length.size)
    else:
        per_feature = lifetime = transient = float("nan")
    mean_flips = float(np.concatenate(flips).mean())
    return StabilityFigures(
        num_frames=sum(a.shape[0] for a in actives),
        num_steps=int(j.size),
        jaccard=_opt(jaccard),
        lifetime_runs=_opt(lifetime),
        lifetime_per_feature=_opt(per_feature),
        transient_ratio=_opt(transient),
        turnover=_opt(_defined_mean(np.concatenate(turnovers))),
        flips=mean_flips,
        num_runs=int(length.size),
        num_transient_runs=int(np.count_nonzero(length == 1)),
        relation=relation(mean_flips, jaccard, k),
    )


def relation(flips: float, jaccard: float, k: int) -> FlipsRelation:
    """Measured flips against the seed's ``2K(1 − J)`` and the exact-K ``2K(1 − J)/(1 + J)``."""
    if math.isnan(jaccard):
        return FlipsRelation(k=k, flips=flips, bound=None, exact_k=None, ratio=None)
    bound = float(flips_jaccard_bound(jaccard, k))
    return FlipsRelation(
        k=k,
        flips=flips,
        bound=bound,
        exact_k=float(flips_from_jaccard(jaccard, k)),
        ratio=flips / bound if bound > 0 else None,
    )


def score(recordings: Sequence[StreamRecording], config: StabilityConfig) -> StabilityReport:
    """Stability figures of the test streams' features; pure, so a saved run can be re-scored."""
    test = [r for r in recordings if r.role == "test"]
    if not test:
        raise ValueError("nothing to score: no test stream was recorded")
    gathered = [(rec.stream_id, *frame_features(rec)) for rec in test]
    usable = [(sid, rows, missing) for sid, rows, missing in gathered if rows.shape[0] >= 2]
    skipped = {
        sid: f"{rows.shape[0]} frame(s) with features: no adjacent pair"
        for sid, rows, _ in gathered
        if rows.shape[0] < 2
    }
    if not usable:
        raise ValueError("nothing to score: no test stream has two frames with features")
    k, size = _k_and_size([rows for _, rows, _ in usable], config)
    actives = []
    for sid, rows, _ in usable:
        try:
            actives.append(to_active(rows, config, size))
        except ValueError as exc:
            raise ValueError(f"stream {sid!r}: features: {exc}") from None
    largest = max(int(np.count_nonzero(a, axis=1).max()) for a in actives)
    if largest > k:
        raise ValueError(f"k={k} is smaller than the {largest} active features of a frame")
    streams = []
    if config.per_stream:
        streams = [
            StreamStability(
                stream_id=sid,
                frames_without_features=missing,
                figures=_figures([active], k, size, config.empty_jaccard),
            )
            for (sid, _, missing), active in zip(usable, actives, strict=True)
        ]
    return StabilityReport(
        feature_kind=config.feature_kind,
        k=k,
        num_features=size,
        overall=_figures(actives, k, size, config.empty_jaccard),
        streams=streams,
        skipped=skipped,
    )
