"""The capacity protocol's section of the run report: the curve N -> deadline-miss rate (with
its upper bound) and F1@deadline, the capacity and the knee marked, and the table of every point."""

from __future__ import annotations

from typing import Any

from streambench.harness.report.bundle import RunBundle
from streambench.harness.report.figures import figure, to_svg
from streambench.harness.report.html import Markup, absent, concat, figure_block, markup, num, table
from streambench.protocols.capacity_score import CapacityScore

__all__ = ["F1_AXIS", "capacity_section", "knee"]

F1_AXIS = (0.0, 1.02)
"""The F1 axis spans F1's whole range: a point-to-point wobble of 0.001 is drawn as what it is."""


def knee(score: CapacityScore) -> int | None:
    """The smallest N whose p99 response exceeds half the deadline: where queueing starts to show (None:
    no point reached it)."""
    for point in score.curve:
        if point.response_p99_ms is not None and point.response_p99_ms > score.deadline_ms / 2:
            return point.streams
    return None


def _curve_figure(score: CapacityScore, target: float) -> Markup:
    points = score.curve
    n = [p.streams for p in points]
    with figure(1, 2, figsize=(11, 3.6)) as (fig, (left, right)):
        left.plot(n, [100 * p.miss_rate for p in points], "o-", label="miss rate")
        left.plot(n, [100 * p.miss_rate_bound for p in points], "v:", label="upper bound (LoadGen)")
        left.axhline(100 * target, color="grey", ls="--", lw=1, label="allowed")
        left.set_ylabel("deadline misses (%)")
        right.plot(n, [p.f1 if p.f1 is not None else float("nan") for p in points], "o-", label="F1@deadline")
        if any(p.f1_compared is not None for p in points):  # what the verdict compares: the same frames
            compared = [p.f1_compared if p.f1_compared is not None else float("nan") for p in points]
            right.plot(n, compared, "s--", ms=3, label="F1@deadline, replayed frames")
        right.plot(
            n,
            [p.f1_reference if p.f1_reference is not None else float("nan") for p in points],
            ":",
            label="unloaded reference" if score.f1_reference == "unloaded" else "reference",
        )
        right.set_ylabel(f"F1@{score.deadline_ms:g} ms (computation-aware)")
        # axes that do not magnify noise: F1 on its whole range, miss rates from 0
        right.set_ylim(*F1_AXIS)
        left.set_ylim(bottom=0)
        bend = knee(score)
        for ax in (left, right):
            ax.axvline(score.capacity, color="tab:green", lw=1.5, label=f"capacity {score.capacity}")
            if bend is not None:
                ax.axvline(bend, color="tab:orange", ls="-.", lw=1, label=f"knee {bend}")
            ax.set_xscale("log", base=2)
            ax.set_xlabel("live streams N")
            ax.grid(True, alpha=0.3)
            ax.legend(loc="best", fontsize=7)
        return to_svg(fig)


def capacity_section(bundle: RunBundle) -> Markup:
    typed: Any = bundle.results.get("capacity")  # a CapacityResult (harness/runs/capacity.py imports this)
    if typed is None or not isinstance(getattr(typed, "score", None), CapacityScore):
        return absent(bundle.missing.get("capacity", "no capacity.json"))
    score, config = typed.score, typed.config
    if not score.curve:
        failure = score.failure
        why = f"the adapter failed at {failure.where()}" if failure is not None else "the budget ended first"
        return absent(f"no point was measured ({why})")
    low, high = score.interval
    caption = (
        f"{typed.adapter} served {config.serving} at a {score.deadline_ms:g} ms deadline: capacity "
        f"{score.capacity} streams (interval [{low}, {'?' if high is None else high}], {score.status}). "
        f"Left: deadline-miss rate and its {100 * config.confidence:g} % upper bound (LoadGen's "
        f"early-stopping rule), allowed {100 * config.target_miss_rate:g} %. Right: F1@deadline on the "
        f"computation-aware clock against its reference ({score.f1_reference}; unloaded: the "
        "model's own F1 on the frames replayed unloaded), on an axis from 0 to 1. Knee: the first N whose "
        "p99 response exceeds half the deadline."
    )
    rows = [
        (
            str(p.streams),
            p.verdict,
            num(p.miss_rate_bound),
            num(p.response_p50_ms, unit=" ms"),
            num(p.response_p99_ms, unit=" ms"),
            num(p.f1, reason="cut short"),
            num(p.served_fps),
        )
        for p in score.curve
    ]
    headers = ["N", "verdict", "miss bound", "p50", "p99", "F1@deadline", "frames/s"]
    notes = concat(markup("<p>{}</p>", note) for note in score.notes)
    return figure_block(_curve_figure(score, config.target_miss_rate), caption) + table(headers, rows) + notes
