"""The report's speed pictures, each a matplotlib figure rendered to an inline SVG string.

matplotlib runs with the Agg backend (no display). SVGs keep their text as ``<text>`` elements
(``svg.fonttype = none``), which matplotlib XML-escapes; every string that comes from a run also goes
through :func:`plain` so that a ``$`` in a name is not read as mathtext. Element ids get a per-figure
prefix so that many SVGs can share one HTML page. The numbers drawn are the recorded ones: latency
percentiles are the result's (numpy's linear method, protocols/metrics/latency.py, seed 004 §6.2.2 (2)),
the breakdown is the result's stage table (seed 004 §6.3.1 (3)).
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from markupsafe import Markup

from streambench.harness.report.analysis import Timeline
from streambench.protocols.metrics.bootstrap import Interval
from streambench.protocols.metrics.latency import LatencySummary
from streambench.protocols.online import Mode, Unit
from streambench.protocols.online_speed import StageRow

__all__ = [
    "UNIT_LABELS",
    "breakdown_figure",
    "f1_curves_figure",
    "figure",
    "latency_figure",
    "plain",
    "timeline_figure",
    "to_svg",
]

_RC: dict[str, Any] = {"svg.fonttype": "none", "svg.hashsalt": "streambench-report", "font.size": 9}
_ids = itertools.count()
_ID = re.compile(r'(\bid="|url\(#|href="#)([^")]+)')

UNIT_LABELS: dict[str, str] = {
    "frame": "frame, algorithmic clock",
    "frame_replay": "frame, compute-aware (replayed latencies)",
    "frame_paced": "frame, compute-aware (paced, wall clock)",
    "segment": "segment, algorithmic clock",
}


def plain(text: str) -> str:
    """A run's string as matplotlib text: ``$`` escaped so it is never parsed as mathtext."""
    return text.replace("$", r"\$")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@contextmanager
def figure(*args: Any, **kwargs: Any) -> Iterator[tuple[Any, Any]]:
    """``plt.subplots`` under the report's rc settings; the figure is closed afterwards."""
    plt = _pyplot()
    import matplotlib

    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]
        fig, axes = plt.subplots(*args, **kwargs)
        try:
            yield fig, axes
        finally:
            plt.close(fig)


def to_svg(fig: Any, layout: bool = True) -> Markup:
    """The figure as an SVG element for inline use: no XML prolog, DOCTYPE or metadata (which name
    external vocabularies), ids prefixed so they are unique on the page. ``layout``: apply
    ``tight_layout`` (False: the caller laid the figure out). ``Markup``: the page takes it as it is,
    matplotlib's SVG writer having escaped every text and attribute it holds."""
    import matplotlib

    with matplotlib.rc_context(_RC):  # type: ignore[arg-type]
        if layout:
            fig.tight_layout()
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = text[text.index("<svg") :]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.DOTALL)
    prefix = f"f{next(_ids)}-"
    text = _ID.sub(lambda m: m.group(1) + prefix + m.group(2), text)
    return Markup(text.replace("<svg ", '<svg class="plot" role="img" ', 1))  # matplotlib escaped its text


_MARKS = (("p50", "p50_ms", "tab:green"), ("p95", "p95_ms", "tab:orange"), ("p99", "p99_ms", "tab:red"))


def latency_bins(latency_ms: np.ndarray) -> tuple[np.ndarray | int, bool]:
    """Histogram bins for per-frame latencies, and whether the x axis is logarithmic: log-spaced bins on a
    log axis when the latencies span more than a factor of 10 (a few 4 ms frames would otherwise squeeze
    a typical 0.03-0.2 ms range into one bar, p50 and p95 in it), linear otherwise."""
    count = min(80, max(10, latency_ms.size // 20))
    positive = latency_ms[latency_ms > 0]
    if positive.size < 2 or positive.max() <= 10 * positive.min():
        return count, False
    return np.geomspace(positive.min(), positive.max(), count + 1), True


def latency_figure(latency_ms: np.ndarray, summary: LatencySummary) -> Markup:
    """Histogram (log-count) and empirical CDF of the per-frame latencies, with the result's p50, p95
    and p99 drawn as vertical lines labelled with their values; a log latency axis when the latencies
    span more than a factor of 10 (:func:`latency_bins`)."""
    bins, log_axis = latency_bins(latency_ms)
    shown = latency_ms[latency_ms > 0] if log_axis else latency_ms
    with figure(1, 2, figsize=(10, 3.6)) as (fig, (hist, cdf)):
        hist.hist(shown, bins=bins, color="tab:blue", alpha=0.8)
        hist.set_yscale("log")
        if log_axis:
            hist.set_xscale("log")
            cdf.set_xscale("log")
        axis = "latency of predict() (ms, log scale)" if log_axis else "latency of predict() (ms)"
        hist.set_xlabel(axis)
        hist.set_ylabel("frames")
        ordered = np.sort(shown)
        cdf.step(ordered, np.arange(1, ordered.size + 1) / ordered.size, where="post", color="tab:blue")
        cdf.set_xlabel(axis)
        cdf.set_ylabel("share of frames ≤ x")
        cdf.set_ylim(0, 1.02)
        for ax in (hist, cdf):
            for name, attr, colour in _MARKS:
                value = float(getattr(summary, attr))
                ax.axvline(value, color=colour, ls="--", lw=1, label=f"{name} {value:.4g} ms")
            ax.grid(True, alpha=0.3)
        cdf.legend(loc="lower right")
        hist.set_title(f"histogram, n = {summary.n} frames")
        cdf.set_title("cumulative distribution")
        return to_svg(fig)


def timeline_figure(timeline: Timeline, max_boundaries: int = 40) -> Markup:
    """Every measured frame's latency in the order the run fed them, with a rolling median (51 frames);
    stream boundaries are marked when there are few enough to read."""
    with figure(figsize=(10, 3.4)) as (fig, ax):
        lat = timeline.latency_ms
        dense = lat.size > 4000
        ax.plot(
            timeline.position,
            lat,
            ".",
            ms=1.5 if dense else 2.5,
            color="tab:blue",
            alpha=0.5,
            rasterized=dense,
            label="frame",
        )
        window = 51
        if lat.size >= window:
            median = np.median(np.lib.stride_tricks.sliding_window_view(lat, window), axis=1)
            ax.plot(
                np.arange(median.size) + window // 2,
                median,
                color="black",
                lw=1.2,
                label=f"rolling median ({window} frames)",
            )
        if len(timeline.stream_start) <= max_boundaries:
            for start, _, role in timeline.stream_start[1:]:
                ax.axvline(start, color="grey" if role == "test" else "tab:purple", lw=0.5, alpha=0.6)
        ax.set_yscale("log")
        ax.set_xlabel("frame, in the order fed (streams one after another; warm-up not recorded)")
        ax.set_ylabel("latency (ms)")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper right")
        return to_svg(fig)


def f1_curves_figure(
    curves: dict[Unit, dict[Mode, list[Any]]], strict_intervals: Sequence[Interval]
) -> Markup:
    """F1@Δt (micro) against Δt for every unit the result holds, Strict left and Early-ok right; the
    frame-level Strict curve carries its bootstrap interval over streams as error bars. Each curve is
    drawn as the step it is (F1@Δt only changes when Δt passes a delay: it holds from one Δt to the
    next), each unit with its own marker so curves that coincide stay visible; ticks at the Δt points."""
    markers = ("o", "s", "^", "D", "v", "x")
    with figure(1, 2, figsize=(10, 3.8), sharey=True) as (fig, axes):
        modes: tuple[Mode, ...] = ("strict", "early_ok")
        for ax, mode in zip(axes, modes, strict=True):
            ticks: set[float] = set()
            for k, (unit, by_mode) in enumerate(curves.items()):
                points = by_mode[mode]
                x = [p.delta_ms for p in points]
                y = [p.f1_micro for p in points]
                ticks.update(x)
                style = "-" if unit.startswith("frame") else ":"
                ax.step(
                    x,
                    y,
                    style,
                    where="post",
                    marker=markers[k % len(markers)],
                    ms=4,
                    alpha=0.85,
                    label=UNIT_LABELS.get(unit, unit),
                )
                if unit == "frame" and mode == "strict" and len(strict_intervals) == len(points):
                    low = [max(p - i.low, 0.0) for p, i in zip(y, strict_intervals, strict=True)]
                    high = [max(i.high - p, 0.0) for p, i in zip(y, strict_intervals, strict=True)]
                    ax.errorbar(x, y, yerr=[low, high], fmt="none", ecolor="black", capsize=2, lw=0.8)
            ax.set_xscale("symlog", linthresh=50)
            ax.set_xticks(sorted(ticks), [f"{t:g}" for t in sorted(ticks)], fontsize=7, rotation=45)
            ax.set_xlabel("Δt (ms)")
            ax.set_title("Strict: 0 ≤ delay ≤ Δt" if mode == "strict" else "Early-ok: |delay| ≤ Δt")
            ax.set_ylim(0, 1)
            ax.grid(True, alpha=0.3)
        axes[0].set_ylabel("F1@Δt (micro)")
        axes[1].legend(loc="lower right", fontsize=7)
        return to_svg(fig)


def breakdown_figure(rows: Sequence[StageRow]) -> Markup:
    """Horizontal bars of the time per frame of each named stage inside predict(), with its share."""
    with figure(figsize=(8, 0.45 * len(rows) + 1.2)) as (fig, ax):
        names = [plain(r.stage) for r in rows][::-1]
        values = [r.ms_per_frame for r in rows][::-1]
        bars = ax.barh(range(len(rows)), values, color="tab:blue")
        ax.set_yticks(range(len(rows)), names)
        for bar, row in zip(bars, rows[::-1], strict=True):
            ax.text(
                bar.get_width(),
                bar.get_y() + bar.get_height() / 2,
                f" {100 * row.share:.1f} %",
                va="center",
                fontsize=8,
            )
        ax.set_xlabel("host time per frame (ms)")
        ax.margins(x=0.15)
        ax.grid(True, axis="x", alpha=0.3)
        return to_svg(fig)
