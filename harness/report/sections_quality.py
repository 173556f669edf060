"""The per-run sections about the quality of the scores and the robustness / causality protocols:
reliability diagram (seed 003 "Calibration"), DET / ROC (seed 002 "Core Metrics"), robustness curves
(seed 004 §6.2.2 (3)) and the causality checks (seed 004 §6.2.3)."""

from __future__ import annotations

from streambench.harness.report.analysis import ScorePairs, detection_curves, reliability, score_pairs
from streambench.harness.report.bundle import RunBundle
from streambench.harness.report.figures_quality import det_roc_figure, reliability_figure
from streambench.harness.report.html import Markup, absent, concat, figure_block, markup, num, table

__all__ = ["detection_section", "protocols_section", "reliability_section"]

_PAIRS_CAPTION = (
    "Frame level, one-vs-rest pooled over the scored classes (micro): every prediction on a test stream "
    "gives one sample per class, its score for the class against whether the class is in the reference "
    "of the frame the prediction refers to. "
)


def _pairs(bundle: RunBundle) -> ScorePairs | str:
    if bundle.result is None:
        return bundle.result_reason
    if bundle.recordings is None:
        return bundle.missing.get("arrays", "no recorded arrays")
    r = bundle.result
    return score_pairs(bundle.recordings, r.adapter_info.classes, r.metrics.classes)


def reliability_section(bundle: RunBundle) -> Markup:
    pairs = _pairs(bundle)
    if isinstance(pairs, str):
        return absent(pairs)
    rel = reliability(pairs)
    if rel.bins is None:
        return absent(rel.reason or "no reliability bins")
    caption = (
        _PAIRS_CAPTION
        + f"{pairs.predictions} predictions × {pairs.classes} classes, in ten equal-width score bins. "
        "A calibrated model's bars follow the dotted diagonal: of the samples scored 0.8, 80 % have the "
        "class present. Bars below the diagonal: over-confident; above: under-confident. Dots: the mean "
        "score of each bin. Counts below on a log scale: with many classes most samples are absent "
        "classes scored near 0."
    )
    return figure_block(reliability_figure(rel.bins), caption)


def detection_section(bundle: RunBundle) -> Markup:
    pairs = _pairs(bundle)
    if isinstance(pairs, str):
        return absent(pairs)
    curves = detection_curves(pairs)
    if curves.det is None:
        return absent(curves.reason or "no curve")
    caption = (
        _PAIRS_CAPTION
        + "A sample is called present when its score reaches a threshold; each point of a curve is one "
        "threshold. Left (DET): misses against false alarms on normal-deviate axes, lower-left is "
        "better; the dot is the equal error rate (EER), where both rates are equal. Right (ROC): hits "
        "against false alarms; the area under it (AUC) is the chance that a present class outscores an "
        f"absent one. {pairs.scores.size} samples, {int(pairs.labels.sum())} positive."
    )
    return figure_block(det_roc_figure(curves), caption)


def protocols_section(bundle: RunBundle) -> Markup:
    """The headline figures of the protocols that draw no section of their own (detection, stability,
    hysteresis, ...), as the run store has them."""
    if not bundle.headlines:
        reasons = [
            f"{name}: {why}"
            for name, why in bundle.missing.items()
            if name in bundle.others and not why.startswith("no ")
        ]
        files = list(bundle.others.values())
        listed = ", ".join(files[:-1]) + f" or {files[-1]}" if len(files) > 1 else "".join(files)
        return absent("; ".join(reasons) or f"no {listed} here")
    parts = []
    for kind, figures in bundle.headlines.items():
        rows = [(f.label, num(f.value, reason=f.reason), markup("<code>{}</code>", f.key)) for f in figures]
        parts.append(
            markup("<h4>{}</h4>", kind) + table(["figure", "value", "key (compare --fail-on)"], rows)
        )
    return concat(parts)
