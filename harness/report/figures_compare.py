"""The pictures across runs: overlaid latency distributions and the Pareto front of accuracy against a
cost, on logarithmic axes whose ticks cover the whole range drawn.

Log ticks follow the 1-2-5 series of chart scales (a mantissa set per decade, the densest that keeps
at most ``max_ticks`` labels: 1-1.5-2-2.5-3…9, 1-2-3-5-7, 1-2-5, 1-3, 1) on an axis at least a factor
of 2 wide (so two ticks always fall inside it), labelled in plain numbers or, for latencies, in the
time unit that suits each tick (:mod:`streambench.harness.report.numbers`), never as ``5×10⁻²``. The Pareto
front is :func:`streambench.harness.report.analysis.pareto_front` (seed 004 §6.3.3). The accuracy axis spans
the points and their intervals (:func:`share_limits`), not 0–100 %. Labels of points go on the side that
faces the middle of the plot, so they stay inside it, and further out, with a leader line, where they
would cover another label or point (:func:`place_labels`: labels of close runs would overlap).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from markupsafe import Markup

from streambench.harness.report.analysis import pareto_front
from streambench.harness.report.figures import figure, plain, to_svg
from streambench.harness.report.numbers import human, latency_ms

__all__ = [
    "LatencyCurve",
    "ParetoPoint",
    "latency_cdf_figure",
    "log_limits",
    "log_ticks",
    "pareto_figure",
    "place_labels",
    "share_limits",
]

_MANTISSAS = ((1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 5, 7), (1, 2, 5), (1, 3), (1,))
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_STYLES = ("-", "--", "-.", ":")


def log_limits(low: float, high: float, pad: float = 0.08, min_decades: float = 0.35) -> tuple[float, float]:
    """Axis limits around [low, high] (both > 0), padded by ``pad`` of the span in log space and widened
    about the middle to at least ``min_decades`` (a factor of 2.2), so the extreme points and their
    labels are off the frame and at least two ticks fall inside."""
    lo, hi = math.log10(low), math.log10(high)
    span = max(hi - lo, 0.0)
    lo, hi = lo - pad * span, hi + pad * span
    if hi - lo < min_decades:
        middle = (lo + hi) / 2
        lo, hi = middle - min_decades / 2, middle + min_decades / 2
    return 10**lo, 10**hi


def _series(low: float, high: float, mantissas: Sequence[float]) -> list[float]:
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    values = (float(f"{m * 10.0**e:.12g}") for e in range(first, last + 1) for m in mantissas)
    return [v for v in values if low <= v <= high]


def log_ticks(low: float, high: float, max_ticks: int = 8) -> list[float]:
    """Tick positions across [low, high] (both > 0) on a log axis: the densest mantissa series with at
    least two and at most ``max_ticks`` ticks in the range; over many decades, every k-th decade. Never
    a tick outside the range (it would widen the axis). An axis from :func:`log_limits` always gets two."""
    if not 0 < low < high:
        raise ValueError(f"log ticks need 0 < low < high, got {low}, {high}")
    for mantissas in _MANTISSAS:
        ticks = _series(low, high, mantissas)
        if 2 <= len(ticks) <= max_ticks:
            return ticks
    decades = _series(low, high, (1,))
    if len(decades) < 2:
        return [low, high]
    return decades[:: math.ceil(len(decades) / max_ticks)]


def _set_log_x(ax: Any, low: float, high: float, label: Callable[[float], str]) -> None:
    """A log x axis over [low, high] with :func:`log_ticks`, labelled by ``label``, no minor labels."""
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ticks = log_ticks(low, high)
    ax.set_xticks(ticks, [label(t) for t in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


@dataclass(frozen=True)
class LatencyCurve:
    """One run's measured per-frame latencies (ms) and its result's p50 and p99."""

    label: str
    latency_ms: np.ndarray
    p50_ms: float
    p99_ms: float


def latency_cdf_figure(curves: Sequence[LatencyCurve]) -> Markup:
    """Every run's empirical CDF of per-frame latency on one log axis (left), and the share of frames
    slower than each latency on log-log axes (right: the tail, where p99 lives); p50 and p99 marked."""
    shown = [c for c in curves if np.any(c.latency_ms > 0)]
    values = np.concatenate([c.latency_ms[c.latency_ms > 0] for c in shown])
    low, high = log_limits(float(values.min()), float(values.max()), pad=0.04)
    with figure(1, 2, figsize=(10, 4.2)) as (fig, (cdf, tail)):
        for k, curve in enumerate(shown):
            ordered = np.sort(curve.latency_ms[curve.latency_ms > 0])
            share = np.arange(1, ordered.size + 1) / ordered.size
            style = {"ls": _STYLES[k // 10 % len(_STYLES)], "lw": 1.4, "color": f"C{k % 10}"}
            text = f"{plain(curve.label)}: p50 {latency_ms(curve.p50_ms)}, p99 {latency_ms(curve.p99_ms)}"
            cdf.step(ordered, share, where="post", label=text, **style)
            tail.step(ordered, 1.0 - share + 1.0 / ordered.size, where="post", **style)
            for ax, y50, y99 in ((cdf, 0.5, 0.99), (tail, 0.5, 0.01)):
                ax.plot(
                    [curve.p50_ms, curve.p99_ms],
                    [y50, y99],
                    _MARKERS[k % len(_MARKERS)],
                    color=style["color"],
                    ms=5,
                )
        for ax in (cdf, tail):
            _set_log_x(ax, low, high, latency_ms)
            ax.set_xlabel("latency of predict() per frame (log scale)")
            ax.grid(True, which="major", alpha=0.3)
        cdf.set_ylim(0, 1.02)
        cdf.set_ylabel("share of frames at most this slow")
        cdf.set_title("cumulative distribution (markers: p50 at 0.5, p99 at 0.99)")
        tail.set_yscale("log")
        tail.set_ylabel("share of frames slower (log scale)")
        tail.set_title("the slow tail (markers: p50 at 0.5, p99 at 0.01)")
        fig.legend(loc="lower center", ncol=min(2, len(shown)), fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.06 + 0.045 * math.ceil(len(shown) / 2), 1, 1))
        return to_svg(fig, layout=False)


@dataclass(frozen=True)
class ParetoPoint:
    """A run (or a configuration's runs) at its cost and F1; ``cost_range`` / ``f1_range``: an interval
    or range drawn as error bars (``None``: none)."""

    label: str
    cost: float
    f1: float
    cost_range: tuple[float, float] | None = None
    f1_range: tuple[float, float] | None = None
    excluded: bool = False
    """Drawn hollow and left out of the front (a run whose measurement is INVALID)."""


_DIRECTIONS = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
_RADII = (7, 14, 24, 36, 52)
"""Offsets (points) tried for a label, nearest first: beyond the first ring a thin line leads back."""
_LEADER = {"arrowstyle": "-", "color": "grey", "lw": 0.5}


def _overlap(a: Any, b: Any) -> float:
    """The area two display boxes share (0 when apart)."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)


def _label(ax: Any, point: ParetoPoint, direction: tuple[int, int], radius: float) -> Any:
    dx, dy = direction
    return ax.annotate(
        plain(point.label),
        (point.cost, point.f1),
        textcoords="offset points",
        xytext=(dx * radius, dy * radius),
        ha={1: "left", -1: "right", 0: "center"}[dx],
        va={1: "bottom", -1: "top", 0: "center"}[dy],
        fontsize=8,
        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.7},
        arrowprops=None if radius == _RADII[0] else _LEADER,
        zorder=4,
    )


def _text_box(label: Any, renderer: Any) -> Any:
    """The display box of a label's text (with its padding), without its leader line."""
    from matplotlib.text import Text

    label.get_window_extent(renderer)  # lays the annotation out
    return Text.get_window_extent(label, renderer).padded(2.0)


def place_labels(fig: Any, ax: Any, points: Sequence[ParetoPoint]) -> list[Any]:
    """Each point's label where it overlaps no other label and no point, inside the plot: the nearest of
    :data:`_RADII` × :data:`_DIRECTIONS`, towards the middle of the plot first, clear of the legend; where
    every place collides, the one that overlaps least. Measured on the figure as laid out (call after
    ``tight_layout``). Returns the labels' text boxes in display units, in ``points``' order."""
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    centre = ((frame.x0 + frame.x1) / 2, (frame.y0 + frame.y1) / 2)
    marks = [ax.transData.transform((p.cost, p.f1)) for p in points]
    half = 5.0 * fig.dpi / 72  # a marker's half-size, in display units
    mark_boxes = [Bbox.from_extents(x - half, y - half, x + half, y + half) for x, y in marks]
    legend = ax.get_legend()
    placed: list[Any] = [] if legend is None else [legend.get_window_extent(renderer)]
    for k, (point, (x, y)) in enumerate(zip(points, marks, strict=True)):
        toward = (1 if x < centre[0] else -1, 1 if y < centre[1] else -1)
        directions = sorted(_DIRECTIONS, key=lambda d: (d[0] != toward[0]) + (d[1] != toward[1]))
        others = [m for j, m in enumerate(mark_boxes) if j != k]
        best: tuple[float, Any, Any] | None = None
        for radius in _RADII:
            for direction in directions:
                label = _label(ax, point, direction, radius)
                box = _text_box(label, renderer)
                clash = sum(_overlap(box, b) for b in [*placed, *others])
                score = clash + 4 * (box.width * box.height - _overlap(box, frame))
                if best is not None and score >= best[0]:
                    label.remove()
                    continue
                if best is not None:
                    best[1].remove()
                best = (score, label, box)
                if score == 0:
                    break
            if best is not None and best[0] == 0:
                break
        assert best is not None
        placed.append(best[2])
    return placed[len(placed) - len(points) :]


def _error_bars(ax: Any, points: Sequence[ParetoPoint]) -> None:
    for p in points:
        xerr = None if p.cost_range is None else [[p.cost - p.cost_range[0]], [p.cost_range[1] - p.cost]]
        yerr = None if p.f1_range is None else [[p.f1 - p.f1_range[0]], [p.f1_range[1] - p.f1]]
        if xerr is not None or yerr is not None:
            ax.errorbar([p.cost], [p.f1], xerr=xerr, yerr=yerr, fmt="none", ecolor="grey", lw=0.8, capsize=2)


def share_limits(values: Sequence[float], pad: float = 0.12, min_span: float = 0.02) -> tuple[float, float]:
    """Limits of an accuracy axis (shares in [0, 1]) around ``values`` (the points and their intervals):
    padded by ``pad`` of their span, at least ``min_span`` (2 percentage points) wide about the middle,
    never further out than −2 % and 102 % (a fixed 0–100 % axis would squeeze 93–96.5 % into one
    line)."""
    low, high = min(values), max(values)
    span = high - low
    low, high = low - pad * span, high + pad * span
    if high - low < min_span:
        middle = (low + high) / 2
        low, high = middle - min_span / 2, middle + min_span / 2
    return max(low, -0.02), min(high, 1.02)


def pareto_figure(
    points: Sequence[ParetoPoint],
    cost_label: str,
    f1_label: str,
    cost_format: Callable[[float], str] = human,
) -> Markup:
    """Every run as a point (cost right on a log axis, F1 up, both axes spanning the data and its
    intervals); the front (red) joined by a step line, over the points not ``excluded`` (drawn hollow);
    error bars where a point carries an interval or range; labels inside the plot, none overlapping
    another (:func:`place_labels`)."""
    from matplotlib.ticker import PercentFormatter

    cost = np.array([p.cost for p in points])
    f1 = np.array([p.f1 for p in points])
    judged = np.array([not p.excluded for p in points])
    front = np.zeros(len(points), dtype=bool)
    if judged.any():
        front[judged] = pareto_front(cost[judged], f1[judged])
    span = [v for p in points for v in (p.cost, *(p.cost_range or ())) if v > 0]
    low, high = log_limits(min(span), max(span), pad=0.12)
    with figure(figsize=(8, 4.6)) as (fig, ax):
        _error_bars(ax, points)
        dominated = judged & ~front
        ax.scatter(cost[dominated], f1[dominated], color="grey", zorder=3, label="dominated")
        ax.scatter(cost[front], f1[front], color="tab:red", zorder=3, label="Pareto front")
        if (~judged).any():
            hollow = {"facecolors": "none", "edgecolors": "grey", "zorder": 3}
            ax.scatter(cost[~judged], f1[~judged], label="measurement INVALID", **hollow)
        order = np.argsort(cost[front])
        ax.step(cost[front][order], f1[front][order], where="post", color="tab:red", lw=1, alpha=0.7)
        _set_log_x(ax, low, high, cost_format)
        shares = [v for p in points for v in (p.f1, *(p.f1_range or ()))]
        ax.set_ylim(*share_limits(shares))
        ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0))
        ax.set_xlabel(cost_label)
        ax.set_ylabel(f1_label)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="best", fontsize=7)
        fig.tight_layout()
        place_labels(fig, ax, points)
        return to_svg(fig, layout=False)
