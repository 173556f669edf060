"""EER (nearest) and ROC AUC on 10 million scores: ``protocols.metrics.detection`` against scikit-learn.

Opt-in (not collected by ``pytest`` alone): ``python -m pytest benchmarks -k detection -s``.
The scikit-learn route is what a user would write without us: ``roc_curve(drop_intermediate=False)``
then the seed-000 §6 rule (argmin |FAR - FRR|, EER = (FAR + FRR) / 2) on its points, and
``roc_auc_score``. Both routes run on the same inputs, interleaved, ``REPEATS`` times; the best time of
each is compared (target: ours no slower than scikit-learn) and the results must agree.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from protocols.metrics.detection import eer, roc_auc

pytestmark = pytest.mark.benchmark

N = 10_000_000
REPEATS = 3
Metric = Callable[[np.ndarray, np.ndarray], float]


def sklearn_eer(labels: np.ndarray, scores: np.ndarray) -> float:
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    frr = 1.0 - tpr
    i = int(np.argmin(np.abs(fpr - frr)))
    return float((fpr[i] + frr[i]) / 2)


def ours_eer(labels: np.ndarray, scores: np.ndarray) -> float:
    return eer(labels, scores, method="nearest").eer


@pytest.fixture(scope="module", params=["continuous", "ties"])
def data(request: pytest.FixtureRequest) -> tuple[str, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(2024)
    labels = (rng.random(N) < 0.3).astype(np.int8)  # 30 % real
    scores = rng.normal(size=N) + 1.5 * labels
    if request.param == "ties":
        scores = np.round(scores, 3)  # ~10^4 distinct values
    return request.param, labels, scores


def time_once(func: Metric, labels: np.ndarray, scores: np.ndarray) -> float:
    start = time.perf_counter()
    func(labels, scores)
    return time.perf_counter() - start


def compare(
    name: str,
    ours: Metric,
    theirs: Metric,
    data: tuple[str, np.ndarray, np.ndarray],
) -> None:
    kind, labels, scores = data
    assert ours(labels, scores) == pytest.approx(theirs(labels, scores), abs=1e-12)
    t_ours, t_theirs = [], []
    for _ in range(REPEATS):
        t_ours.append(time_once(ours, labels, scores))
        t_theirs.append(time_once(theirs, labels, scores))
    ratio = min(t_ours) / min(t_theirs)
    print(
        f"\n{name} on {N:,} scores ({kind}): streambench {min(t_ours):.3f} s, "
        f"scikit-learn {min(t_theirs):.3f} s, ratio {ratio:.3f} (best of {REPEATS})"
    )
    assert ratio <= 1.0


def test_detection_eer_nearest_vs_sklearn(data: tuple[str, np.ndarray, np.ndarray]) -> None:
    compare("EER (nearest)", ours_eer, sklearn_eer, data)


def test_detection_auc_vs_sklearn(data: tuple[str, np.ndarray, np.ndarray]) -> None:
    compare("ROC AUC", roc_auc, roc_auc_score, data)
