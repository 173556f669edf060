"""EER (nearest) and ROC AUC on 10 million scores: ``streambench.protocols.metrics.detection`` against
scikit-learn.

Opt-in (not collected by ``pytest`` alone): ``python -m pytest benchmarks -k detection -s``.
The scikit-learn route is what a user would write without us: ``roc_curve(drop_intermediate=False)``
then the seed-000 §6 rule (argmin |FAR - FRR|, EER = (FAR + FRR) / 2) on its points, and
``roc_auc_score``. The argmin follows the tie rule documented in
``streambench.protocols.metrics.detection.eer`` (two thresholds equally near FAR = FRR: the lower one),
compared exactly on the counts; a plain first ``np.argmin`` over scikit-learn's descending thresholds would
take the higher one. Both routes run on the same inputs, interleaved, ``REPEATS`` times; the best time of each
is compared (target: ours no slower than scikit-learn) and the results must agree.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from streambench.protocols.metrics.detection import eer, roc_auc

pytestmark = pytest.mark.benchmark

N = 10_000_000
REPEATS = 3
Metric = Callable[[np.ndarray, np.ndarray], float]


def sklearn_eer_point(labels: np.ndarray, scores: np.ndarray) -> tuple[float, float]:
    """``(EER, threshold)`` from scikit-learn's ROC points under the documented rule of ``eer``.

    The reject-everything point (``roc_curve``'s first, threshold ``inf``) is not a score value and is
    left out. ``|FAR - FRR|`` is compared as ``|FP·n_real - FN·n_fake|`` in integers (the counts come
    back exactly from the rates: ``n < 2**53``), so that an exact tie is seen as one; among the
    minima the lowest threshold wins, the last one in scikit-learn's descending order.
    """
    fpr, tpr, thresholds = roc_curve(labels, scores, drop_intermediate=False)
    n_real = int(np.count_nonzero(labels))
    n_fake = labels.size - n_real
    fp = np.rint(fpr[1:] * n_fake).astype(np.int64)
    fn = n_real - np.rint(tpr[1:] * n_real).astype(np.int64)
    gap = np.abs(fp * n_real - fn * n_fake)  # n_real · n_fake · |FAR - FRR|
    i = gap.size - 1 - int(np.argmin(gap[::-1]))
    far, frr = int(fp[i]) / n_fake, int(fn[i]) / n_real
    return (far + frr) / 2, float(thresholds[1:][i])


def sklearn_eer(labels: np.ndarray, scores: np.ndarray) -> float:
    return sklearn_eer_point(labels, scores)[0]


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


def test_reference_follows_the_tie_rule() -> None:
    """The reference against ``eer`` on small two-class cases with ties, some of them exact ties of
    ``|FAR - FRR|`` between two thresholds (where a first ``np.argmin`` picks the other one)."""
    rng = np.random.default_rng(7)
    naive_differs = 0
    for _ in range(216):
        n = int(rng.integers(2, 40))
        labels = rng.integers(0, 2, n)
        labels[:2] = [0, 1]  # both classes
        scores = rng.integers(0, int(rng.integers(2, 12)), n).astype(np.float64)
        ours = eer(labels, scores, method="nearest")
        assert sklearn_eer_point(labels, scores) == (ours.eer, ours.threshold)
        fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
        i = int(np.argmin(np.abs(fpr - (1.0 - tpr))))
        naive_differs += float((fpr[i] + 1.0 - tpr[i]) / 2) != pytest.approx(ours.eer, abs=1e-12)
    assert naive_differs > 0  # the cases include exact ties: the rule is exercised


def test_detection_eer_nearest_vs_sklearn(data: tuple[str, np.ndarray, np.ndarray]) -> None:
    compare("EER (nearest)", ours_eer, sklearn_eer, data)


def test_detection_auc_vs_sklearn(data: tuple[str, np.ndarray, np.ndarray]) -> None:
    compare("ROC AUC", roc_auc, roc_auc_score, data)
