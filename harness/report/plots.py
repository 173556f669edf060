"""Static pictures for the ``streambench score`` commands (PNG or SVG, by the file's suffix).

matplotlib is imported here only, with the non-interactive Agg backend, so no display is needed.
"""

from __future__ import annotations

from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

_PROBIT_TICKS = np.array([0.001, 0.01, 0.05, 0.1, 0.2, 0.4])
_DET_LIMITS = np.array([0.0005, 0.6])


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _probit(p: np.ndarray) -> np.ndarray:
    """Normal deviate of each rate, clipped away from 0 and 1 (the DET convention, Martin et al. 1997)."""
    inv = NormalDist().inv_cdf
    clipped = np.clip(p, 1e-4, 1 - 1e-4)
    return np.array([inv(float(x)) for x in clipped])


def probit(p: np.ndarray) -> np.ndarray:
    """Normal deviate of each rate, clipped away from 0 and 1 (the DET convention, Martin et al. 1997)."""
    return _probit(p)


def draw_det(
    ax: Any,
    far: np.ndarray,
    frr: np.ndarray,
    eer: float,
    *,
    ticks: np.ndarray = _PROBIT_TICKS,
    limits: np.ndarray = _DET_LIMITS,
    xlabel: str = "false acceptance rate (%)",
    ylabel: str = "false rejection rate (%)",
) -> None:
    """A DET curve on normal-deviate axes with the EER point marked (Martin et al. 1997)."""
    ax.plot(_probit(far), _probit(frr), lw=1.5)
    e = _probit(np.array([eer]))
    ax.plot(e, e, "o", label=f"EER {100 * eer:.2f} %")
    positions, labels = _probit(ticks), [f"{100 * t:g}" for t in ticks]
    ax.set_xticks(positions, labels)
    ax.set_yticks(positions, labels)
    ax.set_xlim(*_probit(limits))
    ax.set_ylim(*_probit(limits))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title("DET")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right")


def plot_det_roc(far: np.ndarray, frr: np.ndarray, eer: float, path: Path, title: str = "") -> Path:
    """DET curve (FRR against FAR on normal-deviate axes) beside the ROC curve (TPR = 1 − FRR)."""
    plt = _pyplot()
    fig, (det, roc) = plt.subplots(1, 2, figsize=(10, 4.5))
    draw_det(det, far, frr, eer)
    # the ROC starts at "reject everything" (FAR 0, TPR 0), which has no score of its own
    roc.plot(np.r_[0.0, far[::-1]], np.r_[0.0, 1 - frr[::-1]], lw=1.5, drawstyle="steps-post")
    roc.plot([0, 1], [0, 1], ":", color="grey")
    roc.set_xlabel("false acceptance rate")
    roc.set_ylabel("true acceptance rate (1 − FRR)")
    roc.set_title("ROC")
    roc.grid(True, alpha=0.3)
    if title:
        fig.suptitle(title)
    return _save(plt, fig, path)


def plot_reliability(
    edges: np.ndarray,
    confidence: np.ndarray,
    accuracy: np.ndarray,
    count: np.ndarray,
    path: Path,
    title: str = "",
) -> Path:
    """Reliability diagram: accuracy per confidence bin against the diagonal, bin counts below."""
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(5.5, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]}
    )
    widths = np.diff(edges)
    filled = count > 0
    top.bar(
        edges[:-1][filled], accuracy[filled], width=widths[filled], align="edge", edgecolor="black", alpha=0.7
    )
    top.plot(confidence[filled], accuracy[filled], "o", color="black", ms=3, label="mean confidence")
    top.plot([0, 1], [0, 1], ":", color="grey", label="perfect calibration")
    top.set_ylabel("accuracy")
    top.set_ylim(0, 1)
    top.legend(loc="upper left")
    bottom.bar(edges[:-1], count, width=widths, align="edge", edgecolor="black", color="grey")
    bottom.set_xlabel("confidence")
    bottom.set_ylabel("samples")
    bottom.set_xlim(float(edges[0]), float(edges[-1]))
    if title:
        top.set_title(title)
    return _save(plt, fig, path)
