"""The detection protocol (protocols/detection.py): seed 002's score extraction, per-utterance aggregation,
the seed's metrics on utterance scores and the EER versus heard time, on hand-computed recordings."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from streambench.protocols.detection import (
    DetectionConfig,
    aggregate,
    extract_scores,
    score,
    sigmoid,
    softmax_positive,
    utterance_labels,
    utterance_scores,
)
from streambench.protocols.recording import StreamRecording

CLASSES = ("fake", "real")
FPS = 10  # frame i arrives at (i + 1) / 10 s


def recording(
    stream_id: str, real: bool, p_real: list[float], emitted_at: list[int] | None = None
) -> StreamRecording:
    """A 10-frame utterance whose predictions carry ``[1 - p, p]`` (probabilities of fake, real)."""
    n = 10
    labels = np.zeros((n, 2), dtype=bool)
    labels[:, 1 if real else 0] = True
    at = np.arange(len(p_real)) if emitted_at is None else np.asarray(emitted_at)
    p = np.asarray(p_real, dtype=np.float32)
    return StreamRecording(
        stream_id=stream_id,
        role="test",
        t0_ns=0,
        segment_length_ns=None,
        frame_times_ns=np.arange(1, n + 1, dtype=np.int64) * (1_000_000_000 // FPS),
        labels=labels,
        latency_ns=np.ones(n, dtype=np.int64),
        emitted_at=at.astype(np.int64),
        refers_to=at.astype(np.int64),
        scores=np.stack([1 - p, p], axis=1),
    )


def four() -> list[StreamRecording]:
    """Two real and two fake utterances whose first and second halves tell different stories."""
    return [
        recording("A", True, [0.4] * 5 + [0.9] * 5),
        recording("B", True, [0.6] * 5 + [0.8] * 5),
        recording("C", False, [0.5] * 5 + [0.1] * 5),
        recording("D", False, [0.7] * 5 + [0.3] * 5),
    ]


PROB = DetectionConfig(extraction="probability", heard_s=(0.05, 0.5, 1.0, "all"))


# ---------------------------------------------------------------------------------------------- extraction


def test_softmax_takes_the_positive_class() -> None:
    # softmax([0, ln 3]) = [1/4, 3/4]: seed 002 ``torch.softmax(output, dim=1)[:, 1]``
    assert softmax_positive([[0.0, math.log(3.0)]], 1) == pytest.approx([0.75])
    assert softmax_positive([[0.0, math.log(3.0)]], 0) == pytest.approx([0.25])
    # three classes, huge logits: no overflow
    out = softmax_positive([[1000.0, 1000.0, 1000.0], [0.0, 0.0, 0.0]], 2)
    assert out == pytest.approx([1 / 3, 1 / 3])


def test_sigmoid_of_a_single_logit() -> None:
    assert sigmoid([0.0, math.log(3.0), -math.log(3.0)]) == pytest.approx([0.5, 0.75, 0.25])
    with np.errstate(over="raise", invalid="raise"):  # no overflow, no inf/inf at the extremes
        assert sigmoid([-1000.0, 1000.0]).tolist() == [0.0, 1.0]


def test_extract_scores_by_method() -> None:
    out = np.array([[0.0, math.log(3.0)], [math.log(3.0), 0.0]])
    assert extract_scores(out, "softmax", 1) == pytest.approx([0.75, 0.25])
    assert extract_scores(out, "sigmoid", 1) == pytest.approx([0.75, 0.5])
    assert extract_scores(out, "probability", 0) == pytest.approx([0.0, math.log(3.0)])
    single = np.array([[0.0], [math.log(3.0)]])  # a one-logit model
    assert extract_scores(single, "sigmoid", 0) == pytest.approx([0.5, 0.75])
    with pytest.raises(ValueError, match="column 2"):
        extract_scores(out, "softmax", 2)


def test_aggregate_last_mean_max() -> None:
    s = [0.2, 0.9, 0.4]
    assert aggregate(s, "last") == 0.4
    assert aggregate(s, "mean") == pytest.approx(0.5)
    assert aggregate(s, "max") == 0.9
    with pytest.raises(ValueError, match="no frame scores"):
        aggregate([], "last")


# ---------------------------------------------------------------------------------------------- utterances


def test_utterance_labels_and_scores() -> None:
    recs = four()
    assert utterance_labels(recs, CLASSES, "real").tolist() == [1, 1, 0, 0]
    assert utterance_scores(recs, PROB, CLASSES).tolist() == pytest.approx([0.9, 0.8, 0.1, 0.3])
    mean = PROB.model_copy(update={"aggregation": "mean"})
    assert utterance_scores(recs, mean, CLASSES).tolist() == pytest.approx([0.65, 0.7, 0.3, 0.5])
    peak = PROB.model_copy(update={"aggregation": "max"})
    assert utterance_scores(recs, peak, CLASSES).tolist() == pytest.approx([0.9, 0.8, 0.5, 0.7])
    # heard 0.5 s: frames 0..4 (frame 4 arrives at exactly 0.5 s)
    assert utterance_scores(recs, PROB, CLASSES, 0.5).tolist() == pytest.approx([0.4, 0.6, 0.5, 0.7])
    # before the first frame arrived: nothing heard, NaN
    assert np.isnan(utterance_scores(recs, PROB, CLASSES, 0.05)).all()


def test_labels_must_be_one_per_utterance() -> None:
    rec = recording("mixed", True, [0.5] * 10)
    rec.labels[3] = [True, False]
    with pytest.raises(ValueError, match=r"'mixed'.*only some frames"):
        utterance_labels([rec], CLASSES, "real")
    with pytest.raises(ValueError, match="'genuine' is not one of the classes"):
        score(four(), PROB.model_copy(update={"positive_class": "genuine"}), CLASSES)


# ---------------------------------------------------------------------------------------------- score


def test_score_hand_computed() -> None:
    report = score(four(), PROB, CLASSES)
    m = report.metrics
    # final (last) scores: reals 0.9, 0.8 above fakes 0.1, 0.3: separable, EER 0 at the lowest real score
    assert (m.eer, m.eer_threshold, m.far, m.frr, m.auc, m.f1, m.balanced_accuracy) == (
        0.0, pytest.approx(0.8), 0.0, 0.0, 1.0, 1.0, 1.0,
    )  # fmt: skip
    assert (m.n_real, m.n_fake) == (2, 2)
    heard = {p.heard_s: p for p in report.by_heard}
    assert set(heard) == {0.05, 0.5, 1.0, None}
    # at 0.05 s no utterance has a prediction: no EER
    assert heard[0.05].n_scored == 0 and heard[0.05].eer is None and heard[0.05].auc is None
    # at 0.5 s: reals 0.4, 0.6, fakes 0.5, 0.7. Thresholds 0.4 / 0.5 / 0.6 / 0.7 give (FAR, FRR) =
    # (1, 0) / (1, .5) / (.5, .5) / (.5, 1): EER 0.5 at 0.6; AUC = 1 of 4 (real, fake) pairs ordered = 0.25
    assert (heard[0.5].eer, heard[0.5].eer_threshold, heard[0.5].auc) == (0.5, pytest.approx(0.6), 0.25)
    assert heard[1.0].eer == heard[None].eer == 0.0 and heard[None].n_scored == 4
    assert [u.stream_id for u in report.utterances] == ["A", "B", "C", "D"]
    assert [u.label for u in report.utterances] == [1, 1, 0, 0]
    assert [u.score for u in report.utterances] == pytest.approx([0.9, 0.8, 0.1, 0.3])
    assert (report.aggregation, report.extraction, report.positive_class) == ("last", "probability", "real")


def test_score_at_a_given_threshold() -> None:
    # threshold 0.85: real A (0.9) accepted, real B (0.8) rejected, both fakes rejected
    m = score(four(), PROB.model_copy(update={"threshold": 0.85}), CLASSES).metrics
    assert (m.threshold, m.far, m.frr) == (0.85, 0.0, 0.5)
    assert m.f1 == pytest.approx(2 / 3)  # 2 TP / (2 TP + FP + FN) = 2 / 3
    assert m.balanced_accuracy == pytest.approx(0.75)
    assert m.eer == 0.0  # the EER does not depend on the operating threshold


def test_late_first_prediction_is_left_out_of_early_checkpoints() -> None:
    recs = four()
    recs[0] = recording("A", True, [0.9] * 4, emitted_at=[6, 7, 8, 9])  # silent until frame 6 (0.7 s)
    report = score(recs, PROB, CLASSES)
    heard = {p.heard_s: p for p in report.by_heard}
    assert heard[0.5].n_scored == 3  # B (real) and C, D (fakes): still both classes
    assert heard[0.5].eer is not None
    assert heard[None].n_scored == 4


def test_an_utterance_without_any_prediction_is_an_error() -> None:
    recs = four()
    recs[2] = recording("C", False, [], emitted_at=[])
    with pytest.raises(ValueError, match="'C': the adapter emitted no prediction"):
        score(recs, PROB, CLASSES)


def test_softmax_extraction_from_logits() -> None:
    # logits [fake, real] = [0, ln(p / (1 - p))]: softmax of real = p
    recs = four()
    for rec in recs:
        p = rec.scores[:, 1].astype(np.float64)
        rec.scores = np.stack([np.zeros_like(p), np.log(p / (1 - p))], axis=1).astype(np.float32)
    got = utterance_scores(recs, DetectionConfig(), CLASSES)
    assert got.tolist() == pytest.approx([0.9, 0.8, 0.1, 0.3], rel=1e-6)


@pytest.mark.parametrize(
    "heard, message",
    [
        ((1.0, 0.5), "strictly increasing"),
        (("all", 1.0), "'all' may appear once, as the last"),
        ((0.5, "all", "all"), "'all' may appear once"),
        ((0.0, 1.0), "seconds > 0"),
        ((), "at least 1"),
    ],
)
def test_config_rejects_bad_checkpoints(heard: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        DetectionConfig.model_validate({"heard_s": heard})


def test_config_defaults_and_coercion() -> None:
    config = DetectionConfig()
    assert config.heard_s == (0.5, 1.0, 2.0, 4.0, "all")
    assert (config.aggregation, config.extraction, config.positive_class, config.threshold) == (
        "last", "softmax", "real", None,
    )  # fmt: skip
    assert DetectionConfig.model_validate({"heard_s": [1, 3, "all"]}).heard_s == (1.0, 3.0, "all")
    with pytest.raises(ValidationError, match="aggregation"):
        DetectionConfig.model_validate({"aggregation": "median"})
