"""How the online protocol (protocols/online.py) turns scores into labels (seed 004 §6.2.1 "阈值与校准"):
a fixed threshold, per-class thresholds fitted on the validation streams and frozen, or top-k. The
rule as applied is recorded with its thresholds and the streams they were fitted on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.protocols.metrics import (
    apply_thresholds,
    apply_top_k,
    select_in_window,
    tune_class_thresholds,
)
from streambench.protocols.recording import StreamRecording

__all__ = ["DecisionRecord", "DecisionRule", "apply_decision", "fit_decision", "frame_delays"]


class DecisionRule(BaseModel):
    """How scores become labels (seed 004 §6.2.1): fixed threshold, per-class thresholds, or top-k."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["threshold", "per_class", "top_k"] = Field(
        "threshold",
        description="threshold: one fixed threshold; per_class: thresholds fitted on a validation split, "
        "then frozen; top_k: the k highest scores",
    )
    threshold: float = Field(0.5, description="fixed threshold; a class is predicted when score >= it")
    k: int = Field(1, ge=1, description="labels per unit for kind='top_k'")
    validation_fraction: float = Field(
        0.2, gt=0.0, lt=1.0, description="share of streams set aside to fit per-class thresholds"
    )


class DecisionRecord(BaseModel):
    """The decision rule as applied, with its frozen thresholds and where they were fitted."""

    kind: str
    thresholds: list[float] | None
    k: int | None
    fitted_on: list[str]


def apply_decision(scores: np.ndarray, decision: DecisionRecord, keep: np.ndarray) -> np.ndarray:
    """The labels ``[P, kept classes]`` of the scores ``[P, C]`` under the recorded rule."""
    scores = scores[:, keep]
    if decision.kind == "top_k":
        assert decision.k is not None
        return apply_top_k(scores, decision.k)
    assert decision.thresholds is not None
    return apply_thresholds(scores, np.asarray(decision.thresholds))


def fit_decision(
    rule: DecisionRule, validation: Sequence[StreamRecording], keep: np.ndarray, failed_validation: bool
) -> DecisionRecord:
    """The rule as applied to the ``keep`` classes; per-class thresholds fitted on ``validation`` (the
    fixed threshold stands in when every validation stream failed)."""
    n_classes = int(keep.sum())
    if rule.kind == "top_k":
        if rule.k > n_classes:
            raise ValueError(f"decision.k = {rule.k} is more than the {n_classes} classes scored")
        return DecisionRecord(kind="top_k", thresholds=None, k=rule.k, fitted_on=[])
    if rule.kind == "threshold":
        return DecisionRecord(kind="threshold", thresholds=[rule.threshold] * n_classes, k=None, fitted_on=[])
    if not validation and failed_validation:  # every validation stream failed: nothing to fit on
        return DecisionRecord(kind="per_class", thresholds=[rule.threshold] * n_classes, k=None, fitted_on=[])
    if not validation:
        raise ValueError("decision kind 'per_class' needs validation streams in the recording")
    return _tuned(rule, validation, keep)


def _tuned(rule: DecisionRule, validation: Sequence[StreamRecording], keep: np.ndarray) -> DecisionRecord:
    gts, scores = [], []
    for rec in validation:
        chosen = select_in_window(rec.refers_to, frame_delays(rec), rec.num_frames, None, "strict")
        have = chosen >= 0
        gts.append(rec.labels[have][:, keep])
        scores.append(rec.scores[chosen[have]][:, keep])
    thresholds = tune_class_thresholds(np.concatenate(gts), np.concatenate(scores), fallback=rule.threshold)
    return DecisionRecord(
        kind="per_class",
        thresholds=[float(t) for t in thresholds],
        k=None,
        fitted_on=[r.stream_id for r in validation],
    )


def frame_delays(rec: StreamRecording) -> np.ndarray:
    """Algorithmic delay (ns) of each prediction: its emission frame's arrival minus its frame's."""
    times = rec.frame_times_ns
    return times[rec.emitted_at] - times[rec.refers_to]
