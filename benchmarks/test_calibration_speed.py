"""ECE with 1000 bins on a million predictions: ``streambench.protocols.metrics.calibration.ece`` against
torchmetrics.

Opt-in (not collected by ``pytest`` alone): ``python -m pytest benchmarks -k calibration -s``.
torchmetrics is what a user of torch would call (a test and benchmark dependency only, in the ``dev``
extra), on tensors that are already there (float32, its usual dtype, and float64): its public
``binary_calibration_error(..., validate_args=False)`` and the computation alone behind it
(``_ce_compute``, without the input formatting; skipped if that private function moves), each with
torch's default thread count and with one thread (numpy's ``ece`` uses one). Ours starts from the
numpy arrays and validates them. All run interleaved, ``REPEATS`` times; ours is compared with the
fastest of torchmetrics' (issue 25: 1.1× before; target: no slower). The float64 values must agree
to rounding; float32's differ (``docs/metrics.md``, calibration).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torchmetrics.functional.classification import binary_calibration_error

try:  # the computation behind binary_calibration_error, without its input handling (private)
    from torchmetrics.functional.classification.calibration_error import _ce_compute
except ImportError:  # pragma: no cover - moved in another torchmetrics version
    _ce_compute = None

from benchmarks.interleaved import best_of
from streambench.protocols.metrics.calibration import ece

pytestmark = pytest.mark.benchmark

N = 1_000_000
BINS = 1000
REPEATS = 7


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_ece_vs_torchmetrics(dtype: torch.dtype) -> None:
    rng = np.random.default_rng(0)
    conf = rng.random(N)
    correct = rng.random(N) < conf**1.2
    preds, target = torch.from_numpy(conf).to(dtype), torch.from_numpy(correct.astype(np.int64))

    def ours() -> float:
        return ece(conf, correct, BINS)

    def theirs() -> float:
        return float(binary_calibration_error(preds, target, n_bins=BINS, validate_args=False))

    def core() -> float:
        return float(_ce_compute(preds, target, BINS)) if _ce_compute is not None else math.nan

    if dtype == torch.float64:
        assert ours() == pytest.approx(theirs(), abs=1e-13)
        assert _ce_compute is None or ours() == pytest.approx(core(), abs=1e-13)
    threads = torch.get_num_threads()
    t_ours, t_theirs, t_core = best_of([ours, theirs, core], REPEATS)
    torch.set_num_threads(1)
    try:
        t_ours_1, t_theirs_1, t_core_1 = best_of([ours, theirs, core], REPEATS)
    finally:
        torch.set_num_threads(threads)
    mine = min(t_ours, t_ours_1)
    candidates = [t_theirs, t_theirs_1] + ([t_core, t_core_1] if _ce_compute is not None else [])
    ratio = mine / min(candidates)
    print(
        f"\nECE, {N:,} predictions, {BINS} bins, torchmetrics in {dtype}: streambench {mine * 1e3:.1f} ms; "
        f"torchmetrics {t_theirs * 1e3:.1f} ms ({threads} threads) / {t_theirs_1 * 1e3:.1f} ms (1 thread), "
        f"its computation alone {t_core * 1e3:.1f} / {t_core_1 * 1e3:.1f} ms; ratio ours / the fastest "
        f"{ratio:.2f} (best of {REPEATS}); ECE {ours():.9f}, theirs − ours {theirs() - ours():.1e}"
    )
    assert ratio <= 1.0
