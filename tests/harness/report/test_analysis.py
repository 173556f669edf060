"""What the report computes before it draws (harness/report/analysis.py): reliability and DET from the
metric modules on one-vs-rest pairs, the Pareto front, thinning."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.harness.report.analysis import (
    detection_curves,
    pareto_front,
    reliability,
    score_pairs,
    thin_monotone,
)
from streambench.protocols.metrics.calibration import ece
from streambench.protocols.metrics.detection import roc_auc
from streambench.protocols.recording import StreamRecording


def _recording(scores: np.ndarray, labels: np.ndarray) -> StreamRecording:
    n = labels.shape[0]
    return StreamRecording(
        stream_id="s",
        role="test",
        t0_ns=0,
        segment_length_ns=None,
        frame_times_ns=np.arange(1, n + 1, dtype=np.int64) * 40_000_000,
        labels=labels,
        latency_ns=np.full(n, 1000, dtype=np.int64),
        emitted_at=np.arange(n, dtype=np.int64),
        refers_to=np.arange(n, dtype=np.int64),
        scores=scores,
    )


def test_reliability_and_det_are_the_metric_modules_on_one_vs_rest_pairs() -> None:
    rng = np.random.default_rng(3)
    labels = rng.random((40, 3)) < 0.3
    scores = np.clip(labels * 0.6 + rng.random((40, 3)) * 0.5, 0, 1).astype(np.float32)
    rec = _recording(scores, labels)
    pairs = score_pairs([rec], ("a", "b", "c"), ("a", "c"))  # "b" excluded from the metrics
    assert pairs.predictions == 40 and pairs.classes == 2 and pairs.scores.size == 80
    flat_scores = scores[:, [0, 2]].astype(np.float64).ravel()
    flat_labels = labels[:, [0, 2]].ravel()
    np.testing.assert_array_equal(pairs.scores, flat_scores)
    bins = reliability(pairs).bins
    assert bins is not None and bins.ece == pytest.approx(ece(flat_scores, flat_labels))
    curves = detection_curves(pairs)
    assert curves.auc == pytest.approx(roc_auc(flat_labels, flat_scores))
    # logits are not probabilities: no reliability diagram, and the reason names the range
    logits = _recording(scores * 4 - 2, labels)
    result = reliability(score_pairs([logits], ("a", "b", "c"), ("a", "b", "c")))
    assert result.bins is None and result.reason and "not probabilities" in result.reason
    # one label value only: no DET
    none = _recording(scores, np.zeros_like(labels))
    assert detection_curves(score_pairs([none], ("a", "b", "c"), ("a",))).reason


def test_pareto_front_and_thinning() -> None:
    front = pareto_front([1.0, 2.0, 3.0, 2.0, 0.5], [0.5, 0.7, 0.6, 0.7, 0.1])
    assert front.tolist() == [True, True, False, True, True]
    x = np.linspace(0, 1, 100_001)
    keep = thin_monotone(x, x**2, resolution=0.01)
    assert keep[0] == 0 and keep[-1] == x.size - 1 and 50 < keep.size < 200
