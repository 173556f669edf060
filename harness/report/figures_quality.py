"""The report's accuracy pictures: reliability diagram, DET and ROC, robustness curves.

Reliability: seed 003 "Calibration" (bins from protocols/metrics/calibration.py). DET / ROC: seed 002
"Core Metrics", DET on normal-deviate axes (Martin et al. 1997, as harness/report/plots.py). Robustness: seed
004 §6.2.2 (3), F1 at each sweep point against the clean run.
"""

from __future__ import annotations

import numpy as np
from markupsafe import Markup

from streambench.harness.report.analysis import DetectionCurves, thin_monotone
from streambench.harness.report.figures import figure, to_svg
from streambench.harness.report.plots import draw_det, probit
from streambench.protocols.metrics.calibration import ReliabilityBins
from streambench.protocols.robustness import RobustnessReport

__all__ = ["det_roc_figure", "reliability_figure", "robustness_figure"]

_PROBIT_TICKS = np.array([0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99])
_DET_LIMITS = np.array([0.0005, 0.995])
_AXES = (
    ("missing", "Missing-Rate@p%", "share of steps with the modality missing (%)"),
    ("audio_delay", "Audio-Delay@Δt", "audio delay (ms)"),
    ("jitter", "Jitter@±δ", "timestamp jitter δ (ms)"),
)


def reliability_figure(bins: ReliabilityBins) -> Markup:
    """Observed frequency of the class per score bin against the diagonal; sample counts below (log)."""
    with figure(2, 1, figsize=(5.5, 5.5), sharex=True, gridspec_kw={"height_ratios": [3, 1]}) as (
        fig,
        (top, bottom),
    ):
        edges, count = bins.edges, bins.count
        widths = np.diff(edges)
        full = count > 0
        top.bar(
            edges[:-1][full],
            bins.accuracy[full],
            width=widths[full],
            align="edge",
            edgecolor="black",
            alpha=0.7,
            label="observed frequency",
        )
        top.plot(
            bins.mean_confidence[full],
            bins.accuracy[full],
            "o",
            color="black",
            ms=3,
            label="at the bin's mean score",
        )
        top.plot([0, 1], [0, 1], ":", color="grey", label="perfect calibration")
        top.set_ylabel("frequency of the class")
        top.set_ylim(0, 1)
        top.legend(loc="upper left", fontsize=7)
        top.set_title(f"ECE {bins.ece:.4f}, MCE {bins.mce:.4f}, {bins.n_samples} samples")
        bottom.bar(edges[:-1][full], count[full], width=widths[full], align="edge", edgecolor="black")
        bottom.set_yscale("log")
        bottom.set_xlabel("score")
        bottom.set_ylabel("samples")
        bottom.set_xlim(float(edges[0]), float(edges[-1]))
        return to_svg(fig)


def det_roc_figure(curves: DetectionCurves) -> Markup:
    """DET (miss rate against false-alarm rate, normal-deviate axes) beside ROC, EER marked."""
    assert curves.det is not None and curves.roc is not None and curves.eer is not None
    with figure(1, 2, figsize=(10, 4.2)) as (fig, (det, roc)):
        keep = thin_monotone(probit(curves.det.far), probit(curves.det.frr), resolution=0.01)
        draw_det(
            det,
            curves.det.far[keep],
            curves.det.frr[keep],
            curves.eer,
            ticks=_PROBIT_TICKS,
            limits=_DET_LIMITS,
            xlabel="false alarm rate (%): class scored present when absent",
            ylabel="miss rate (%): class scored absent when present",
        )
        far, tpr = curves.roc.far, 1 - curves.roc.frr
        keep = thin_monotone(far, tpr)
        roc.plot(far[keep], tpr[keep], lw=1.5, drawstyle="steps-post", label=f"AUC {curves.auc:.4f}")
        roc.plot([0, 1], [0, 1], ":", color="grey")
        roc.set_xlabel("false alarm rate")
        roc.set_ylabel("hit rate (1 − miss rate)")
        roc.set_title("ROC")
        roc.grid(True, alpha=0.3)
        roc.legend(loc="lower right")
        return to_svg(fig)


def robustness_figure(report: RobustnessReport) -> Markup:
    """One panel per perturbation axis: F1 at each point, the clean F1 as a line; a point where the
    adapter failed on a stream gets a red x at its F1, which counts that stream as answered wrongly (in
    a file written before that rule such a point has no F1: the x sits on the axis)."""
    with figure(1, 3, figsize=(11, 3.6), sharey=True) as (fig, axes):
        for ax, (axis, title, xlabel) in zip(axes, _AXES, strict=True):
            points = [p for p in report.points if p.variant.axis == axis]
            measured = [p for p in points if p.f1 is not None]
            failed = [p for p in points if p.failure is not None or p.f1 is None]
            if report.clean.f1 is not None:
                ax.axhline(report.clean.f1, color="grey", ls="--", lw=1, label="clean")
            if measured:
                ax.plot([p.variant.value for p in measured], [p.f1 for p in measured], "o-", label="F1")
            if failed:
                ax.plot(
                    [p.variant.value for p in failed],
                    [p.f1 if p.f1 is not None else 0.0 for p in failed],
                    "x",
                    color="tab:red",
                    ms=9,
                    mew=2,
                    clip_on=False,
                    label="stream(s) failed",
                )
            if not points:
                ax.text(0.5, 0.5, "not swept", ha="center", va="center", transform=ax.transAxes)
            ax.set_title(title)
            ax.set_xlabel(xlabel)
            ax.set_ylim(0, 1)
            ax.grid(True, alpha=0.3)
            ax.legend(loc="lower left", fontsize=7)
        axes[0].set_ylabel(f"F1@{report.report_delta_ms:g} ms (Strict, frame)")  # classes: the caption
        return to_svg(fig)
