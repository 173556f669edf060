"""The comparison's figures (harness/report/figures_compare.py, issues 17 and 27): log ticks over the
whole axis, an accuracy axis that spans the data, labels of close points that do not overlap."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.harness.report.figures import figure
from streambench.harness.report.figures_compare import ParetoPoint, place_labels, share_limits


def test_log_ticks_cover_the_whole_range_and_stay_inside_it() -> None:
    """Issue 17: the Pareto plot's log axis showed ticks only below 0.1 ms. Ticks span the axis from end to
    end, at least two and at most eight, never outside (a tick outside would widen the axis)."""
    from streambench.harness.report.figures_compare import log_limits, log_ticks

    for low, high in [(0.03, 0.2), (7e-5, 4.2), (30.6, 38.5), (9.1, 19.9), (1e-9, 1e9), (0.0466, 0.0717)]:
        lo, hi = log_limits(low, high)
        ticks = log_ticks(lo, hi)
        assert 2 <= len(ticks) <= 8 and all(lo <= t <= hi for t in ticks), (low, high, ticks)
        # the ticks reach both halves of the axis (in log space), not one corner of it
        middle = (np.log10(lo) + np.log10(hi)) / 2
        assert min(np.log10(ticks)) < middle < max(np.log10(ticks)), (low, high, ticks)


def test_the_accuracy_axis_spans_the_data() -> None:
    """Issue 27: 93–96.5 % on a 0–100 % axis was one line; the axis now spans the points and intervals."""
    low, high = share_limits([0.93, 0.965, 0.94])
    assert 0.92 < low < 0.93 and 0.965 < high < 0.98
    assert share_limits([0.5, 0.5]) == pytest.approx((0.49, 0.51))  # at least 2 percentage points
    assert share_limits([0.0, 1.0]) == (-0.02, 1.02)


def test_labels_of_close_points_do_not_overlap() -> None:
    """Four runs within a hair of each other: placed labels overlap no other label and stay in the plot,
    where the old placement (every label at the same offset) put them on top of one another."""
    points = [
        ParetoPoint(f"#{k + 1} run-with-a-long-name", 1.0 + 0.01 * k, 0.95 + 0.001 * k) for k in range(4)
    ]
    with figure(figsize=(8, 4.6)) as (fig, ax):
        ax.set_xscale("log")
        ax.set_xlim(0.5, 2.0)
        ax.set_ylim(0.9, 1.0)
        ax.scatter([p.cost for p in points], [p.f1 for p in points])
        fig.tight_layout()
        boxes = place_labels(fig, ax, points)
        frame = ax.get_window_extent(fig.canvas.get_renderer())
        naive = [
            ax.annotate(
                p.label, (p.cost, p.f1), textcoords="offset points", xytext=(7, 7), fontsize=8
            ).get_window_extent(fig.canvas.get_renderer())
            for p in points
        ]
    assert any(a.overlaps(b) for i, a in enumerate(naive) for b in naive[i + 1 :])  # the check can fail
    assert len(boxes) == 4
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for b in boxes)
