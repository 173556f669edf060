"""The report's figures (harness/report/figures.py): latency axes."""

from __future__ import annotations

import numpy as np


def test_latency_axes_go_logarithmic_when_a_few_slow_frames_would_squeeze_the_typical_range() -> None:
    """Issue 17: 0.03-0.2 ms typical frames and a few 4 ms ones: on a linear axis p50 and p95 share one
    bar; log-spaced bins separate them. A narrow spread keeps the linear axis."""
    from streambench.harness.report.figures import latency_bins

    rng = np.random.default_rng(0)
    typical = rng.uniform(0.03, 0.2, 2000)
    wide = np.concatenate([typical, [4.0, 4.2, 3.9]])
    bins, log_axis = latency_bins(wide)
    assert log_axis and isinstance(bins, np.ndarray)
    p50, p95 = np.percentile(wide, [50, 95])
    assert np.searchsorted(bins, p50) != np.searchsorted(bins, p95)  # in different bars
    narrow_bins, narrow_log = latency_bins(typical[typical < 0.1])
    assert not narrow_log and isinstance(narrow_bins, int)
