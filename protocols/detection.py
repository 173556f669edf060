"""Detection protocol: utterance-level deepfake (spoof) detection scored from streaming outputs.

Seed 002 (``seeds/002_b79c7f066c0f6558.txt``) and seed 000 §6 define the batch evaluation: one score per
utterance (higher = more likely real), labels 1 = real / 0 = fake, and EER (with its threshold), FAR and
FRR at a threshold, AUC, F1 and balanced accuracy (:func:`streambench.protocols.metrics.detection_metrics`). A
streaming detector answers frame by frame, so this protocol adds two steps in front of the seed's metrics
and one view after them:

1. **score extraction** (seed 002 "BEATs Score Extraction"): each prediction's ``[C]`` output becomes one
   "real" score — ``softmax`` over the classes taking the positive (real) class, ``sigmoid`` of the
   positive class's single logit, or ``probability`` (the positive class's output taken as it is);
2. **aggregation** per utterance of the extracted per-frame scores: ``last`` (the decision after the
   whole utterance), ``mean`` or ``max``; named in the report;
3. **EER versus heard time**: the same aggregation restricted to the predictions emitted once at most
   ``h`` seconds of the utterance had arrived (``t_emit - t0 <= h``, on the stream clock), for each
   checkpoint ``h`` of :attr:`DetectionConfig.heard_s` ("all" = the whole utterance). It shows how early
   a decision is reliable — a figure no batch evaluation has.

Pure: nothing here calls a model, reads a clock or touches a file; the harness (harness/runs/detection.py)
runs the utterances through the engine and writes the seed's score file.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, field_validator

from streambench.protocols.metrics.detection import EERMethod, detection_metrics
from streambench.protocols.recording import StreamRecording

__all__ = [
    "NAME",
    "Aggregation",
    "DetectionConfig",
    "DetectionReport",
    "Extraction",
    "HeardPoint",
    "OperatingPoint",
    "UtteranceScore",
    "aggregate",
    "extract_scores",
    "score",
    "sigmoid",
    "softmax_positive",
    "utterance_labels",
    "utterance_scores",
]

NAME = "detection"
Aggregation = Literal["last", "mean", "max"]
Extraction = Literal["softmax", "sigmoid", "probability"]
Checkpoint = float | Literal["all"]


class DetectionConfig(BaseModel):
    """How per-frame outputs become utterance scores, and where the operating point lies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    aggregation: Aggregation = Field(
        "last", description="utterance score from its per-frame scores: last, mean or max"
    )
    extraction: Extraction = Field(
        "softmax",
        description="softmax over classes (seed 002 multi-class), sigmoid of one logit, or probability as is",
    )
    positive_class: str = Field("real", min_length=1, description="the class whose score means 'real'")
    threshold: float | None = Field(
        None, allow_inf_nan=False, description="operating threshold on the score; None: the EER threshold"
    )
    eer_method: EERMethod = Field("nearest", description="nearest (the seeds' rule) or interpolated")
    heard_s: tuple[Checkpoint, ...] = Field(
        (0.5, 1.0, 2.0, 4.0, "all"),
        min_length=1,
        description="seconds of the utterance heard at each EER checkpoint, increasing; 'all' last",
    )

    @field_validator("heard_s")
    @classmethod
    def _increasing(cls, value: tuple[Checkpoint, ...]) -> tuple[Checkpoint, ...]:
        seconds = [h for h in value if h != "all"]
        if "all" in value and (value.count("all") > 1 or value[-1] != "all"):
            raise ValueError("heard_s: 'all' may appear once, as the last checkpoint")
        if any(not (isinstance(h, float) and np.isfinite(h) and h > 0) for h in seconds):
            raise ValueError(f"heard_s: checkpoints must be finite seconds > 0 or 'all', got {list(value)}")
        if any(b <= a for a, b in itertools.pairwise(seconds)):
            raise ValueError(f"heard_s must be strictly increasing, got {list(value)}")
        return value


class OperatingPoint(BaseModel):
    """Seed 002's metric set over the utterance scores (fractions in [0, 1])."""

    model_config = ConfigDict(frozen=True)

    eer: float
    eer_threshold: float
    threshold: float = Field(description="where FAR, FRR, F1 and balanced accuracy are taken")
    far: float
    frr: float
    auc: float
    f1: float
    balanced_accuracy: float
    n_real: int
    n_fake: int


class HeardPoint(BaseModel):
    """EER after ``heard_s`` seconds of every utterance (``None``: all of it)."""

    model_config = ConfigDict(frozen=True)

    heard_s: float | None
    n_scored: int = Field(description="utterances with at least one prediction by then")
    eer: float | None = Field(description="None when the scored utterances lack a class")
    eer_threshold: float | None
    auc: float | None


class UtteranceScore(BaseModel):
    """One utterance: its label (1 real, 0 fake) and aggregated score."""

    model_config = ConfigDict(frozen=True)

    stream_id: str
    label: int
    score: float


class DetectionReport(BaseModel):
    """What the detection protocol reports (``detection.json``'s ``report``)."""

    aggregation: Aggregation
    extraction: Extraction
    positive_class: str
    metrics: OperatingPoint
    by_heard: tuple[HeardPoint, ...]
    utterances: tuple[UtteranceScore, ...]


# --------------------------------------------------------------------------------------------------
# score extraction (seed 002 "BEATs Score Extraction")


def softmax_positive(outputs: npt.ArrayLike, positive: int) -> np.ndarray:
    """``softmax(outputs, axis=1)[:, positive]`` in float64 — seed 002 "Multi-class Output".

    ``outputs`` is ``[N, C]`` (logits); the maximum is subtracted per row first, so large logits do not
    overflow. The seed's ``probs = torch.softmax(model_output, dim=1); scores = probs[:, 1]``.
    """
    x = np.asarray(outputs, dtype=np.float64)
    z = np.exp(x - x.max(axis=1, keepdims=True))
    return np.asarray(z[:, positive] / z.sum(axis=1))


def sigmoid(logits: npt.ArrayLike) -> np.ndarray:
    """``1 / (1 + exp(-x))`` in float64 without overflow — seed 002 "Binary Output (single logit)"."""
    x = np.asarray(logits, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.asarray(np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)))


def extract_scores(outputs: npt.ArrayLike, extraction: Extraction, positive: int) -> np.ndarray:
    """One "real" score per row of ``outputs`` ``[N, C]`` (seed 002 "Score Extraction").

    ``softmax``: :func:`softmax_positive`; ``sigmoid``: :func:`sigmoid` of column ``positive`` (the single
    logit of a one-class model); ``probability``: column ``positive`` unchanged.
    """
    x = np.asarray(outputs, dtype=np.float64)
    if x.ndim != 2 or not 0 <= positive < x.shape[1]:
        raise ValueError(f"outputs must be [N, C] with column {positive}, got shape {x.shape}")
    if extraction == "softmax":
        return softmax_positive(x, positive)
    if extraction == "sigmoid":
        return sigmoid(x[:, positive])
    return np.asarray(x[:, positive])


def aggregate(frame_scores: npt.ArrayLike, aggregation: Aggregation) -> float:
    """The utterance score from its per-frame scores in emission order: the last, the mean or the max."""
    s = np.asarray(frame_scores, dtype=np.float64)
    if s.size == 0:
        raise ValueError("no frame scores to aggregate")
    if aggregation == "last":
        return float(s[-1])
    return float(s.mean() if aggregation == "mean" else s.max())


# --------------------------------------------------------------------------------------------------
# recordings -> utterance labels and scores


def _positive_index(classes: Sequence[str], config: DetectionConfig) -> int:
    if config.positive_class not in classes:
        raise ValueError(
            f"positive_class {config.positive_class!r} is not one of the classes {list(classes)}"
        )
    return list(classes).index(config.positive_class)


def utterance_labels(
    recordings: Sequence[StreamRecording], classes: Sequence[str], positive: str
) -> np.ndarray:
    """int8 ``[N]``: 1 where an utterance is labelled ``positive`` (real) on every frame, 0 where on none.

    A stream whose frames disagree is not an utterance with one label: a ``ValueError`` names it.
    """
    if positive not in classes:
        raise ValueError(f"positive_class {positive!r} is not one of the classes {list(classes)}")
    k = list(classes).index(positive)
    labels = np.empty(len(recordings), dtype=np.int8)
    for i, rec in enumerate(recordings):
        column = np.asarray(rec.labels, dtype=bool)[:, k]
        if column.all() != column.any():
            raise ValueError(
                f"stream {rec.stream_id!r}: {positive!r} labels only some frames; a detection utterance "
                "has one label for all its frames"
            )
        labels[i] = 1 if column[0] else 0
    return labels


def utterance_scores(
    recordings: Sequence[StreamRecording],
    config: DetectionConfig,
    classes: Sequence[str],
    heard_s: float | None = None,
) -> np.ndarray:
    """float64 ``[N]``: each utterance's aggregated score from the predictions emitted by ``heard_s``
    seconds after its start (``None``: all of them); NaN where it had none by then."""
    k = _positive_index(classes, config)
    out = np.full(len(recordings), np.nan)
    limit = None if heard_s is None else round(heard_s * 1e9)
    for i, rec in enumerate(recordings):
        if rec.num_predictions == 0:
            continue
        rows = np.arange(rec.num_predictions)
        if limit is not None:
            heard = rec.frame_times_ns[rec.emitted_at] - rec.t0_ns
            rows = rows[heard <= limit]
        if rows.size:
            out[i] = aggregate(extract_scores(rec.scores[rows], config.extraction, k), config.aggregation)
    return out


def score(
    recordings: Sequence[StreamRecording], config: DetectionConfig, classes: Sequence[str]
) -> DetectionReport:
    """Seed 002's metrics over the utterances, and the EER at each heard-time checkpoint.

    Every utterance must have at least one prediction over its whole length (a ``ValueError`` names the
    first that has none); at a checkpoint, utterances without a prediction yet are left out and
    :attr:`HeardPoint.n_scored` says how many remain.
    """
    labels = utterance_labels(recordings, classes, config.positive_class)
    final = utterance_scores(recordings, config, classes)
    if np.isnan(final).any():
        missing = recordings[int(np.flatnonzero(np.isnan(final))[0])].stream_id
        raise ValueError(f"stream {missing!r}: the adapter emitted no prediction, so it has no score")
    m = detection_metrics(labels, final, threshold=config.threshold, method=config.eer_method)
    metrics = OperatingPoint(
        eer=m.eer,
        eer_threshold=m.eer_threshold,
        threshold=m.threshold,
        far=m.far,
        frr=m.frr,
        auc=m.auc,
        f1=m.f1,
        balanced_accuracy=m.balanced_accuracy,
        n_real=m.n_real,
        n_fake=m.n_fake,
    )
    by_heard = []
    for h in config.heard_s:
        seconds = None if h == "all" else float(h)
        s = final if seconds is None else utterance_scores(recordings, config, classes, seconds)
        kept = ~np.isnan(s)
        both = kept.any() and 0 < int(labels[kept].sum()) < int(kept.sum())
        point = detection_metrics(labels[kept], s[kept], method=config.eer_method) if both else None
        by_heard.append(
            HeardPoint(
                heard_s=seconds,
                n_scored=int(kept.sum()),
                eer=point.eer if point else None,
                eer_threshold=point.eer_threshold if point else None,
                auc=point.auc if point else None,
            )
        )
    utterances = tuple(
        UtteranceScore(stream_id=r.stream_id, label=int(y), score=float(v))
        for r, y, v in zip(recordings, labels, final, strict=True)
    )
    return DetectionReport(
        aggregation=config.aggregation,
        extraction=config.extraction,
        positive_class=config.positive_class,
        metrics=metrics,
        by_heard=tuple(by_heard),
        utterances=utterances,
    )
