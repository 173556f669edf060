"""The per-run sections about the quality of the scores and the robustness / causality protocols:
reliability diagram (seed 003 "Calibration"), DET / ROC (seed 002 "Core Metrics"), robustness curves
(seed 004 §6.2.2 (3)) and the causality checks (seed 004 §6.2.3)."""

from __future__ import annotations

from harness.report.analysis import ScorePairs, detection_curves, reliability, score_pairs
from harness.report.figures_quality import det_roc_figure, reliability_figure, robustness_figure
from harness.report.html import absent, esc, figure_block, num, table
from harness.report.loading import RunBundle

__all__ = ["causality_section", "detection_section", "reliability_section", "robustness_section"]

_PAIRS_CAPTION = (
    "Frame level, one-vs-rest pooled over the scored classes (micro): every prediction on a test stream "
    "gives one sample per class, its score for the class against whether the class is in the reference "
    "of the frame the prediction refers to. "
)


def _pairs(bundle: RunBundle) -> ScorePairs | str:
    if bundle.result is None:
        return bundle.missing.get("result", "no online result")
    if bundle.recordings is None:
        return bundle.missing.get("arrays", "no recorded arrays")
    r = bundle.result
    return score_pairs(bundle.recordings, r.adapter_info.classes, r.metrics.classes)


def reliability_section(bundle: RunBundle) -> str:
    pairs = _pairs(bundle)
    if isinstance(pairs, str):
        return absent(pairs)
    rel = reliability(pairs)
    if rel.bins is None:
        return absent(rel.reason or "no reliability bins")
    caption = (
        _PAIRS_CAPTION
        + f"{pairs.predictions} predictions × {pairs.classes} classes. Ten equal-width bins (lo, hi], "
        "the first closed (protocols/metrics/calibration.py); bars: how often the class was present; "
        "dots: at the bin's mean score. Counts below on a log scale: with many classes most samples "
        "are absent classes scored near 0."
    )
    return figure_block(reliability_figure(rel.bins), caption)


def detection_section(bundle: RunBundle) -> str:
    pairs = _pairs(bundle)
    if isinstance(pairs, str):
        return absent(pairs)
    curves = detection_curves(pairs)
    if curves.det is None:
        return absent(curves.reason or "no curve")
    caption = (
        _PAIRS_CAPTION
        + "Positive = the class is present; a sample is called present when its score ≥ the threshold, "
        "swept over every distinct score (protocols/metrics/detection.py). EER by the nearest operating "
        f"point; AUC by Mann–Whitney. {pairs.scores.size} samples, "
        f"{int(pairs.labels.sum())} positive."
    )
    return figure_block(det_roc_figure(curves), caption)


def robustness_section(bundle: RunBundle) -> str:
    rob = bundle.robustness
    if rob is None:
        return absent(
            bundle.missing.get("robustness", "no robustness.json")
            + " — run `streambench run --protocol robustness --run-id <this run>` to add one"
        )
    report = rob.report
    caption = (
        f"F1@{report.report_delta_ms:g} ms (Strict, frame, micro) under each perturbation of the sweep, "
        f"adapter {esc(rob.adapter)}; dashed: the clean run. A failed point (the adapter raised) has "
        "no F1 and is marked as failed, not as 0."
    )
    rows = []
    for point in [report.clean, *report.points]:
        failure = point.failure
        rows.append(
            (
                esc(point.variant.name),
                num(point.f1, reason="failed" if failure else None),
                num(point.abs_drop, reason="failed" if failure else "the clean run"),
                num(point.rel_drop, reason="failed" if failure else "the clean run, or clean F1 = 0"),
                esc(f"stream {failure.stream_id}, frame {failure.frame}: {failure.error}") if failure else "",
            )
        )
    return figure_block(robustness_figure(report), caption) + table(
        ["point", "F1", "drop", "relative drop", "failure"], rows
    )


def causality_section(bundle: RunBundle) -> str:
    causal = bundle.causality
    if causal is None:
        return absent(bundle.missing.get("causality", "no causality.json"))
    report = causal.report
    verdict = '<span class="pass">passed</span>' if report.passed else '<span class="fail">FAILED</span>'
    rows = []
    for check in report.checks:
        where = ""
        if check.first_stream is not None:
            where = f"stream {check.first_stream}, frame {check.first_frame}"
            if check.first_source is not None:
                where += f", input {check.first_source}"
        rows.append(
            (
                esc(check.name),
                '<span class="pass">pass</span>' if check.passed else '<span class="fail">fail</span>',
                esc(where),
                esc(f"{check.max_difference:.3g}"),
                esc(check.detail),
            )
        )
    skipped = "".join(f"<li>{esc(name)}: {esc(why)}</li>" for name, why in causal.skipped.items())
    return (
        f"<p>Causality checks of adapter {esc(causal.adapter)}: {verdict}.</p>"
        + table(["check", "result", "first offence", "max |Δscore|", "detail"], rows)
        + (f"<p>Skipped:</p><ul>{skipped}</ul>" if skipped else "")
    )


def protocols_section(bundle: RunBundle) -> str:
    """The other protocols' headline figures (detection, stability, hysteresis), as the run store has them."""
    if not bundle.protocols:
        reasons = [f"{kind}: {why}" for kind, why in bundle.missing.items() if kind in _OTHER_KINDS]
        return absent("; ".join(reasons) or "no detection.json, stability.json or hysteresis.json here")
    parts = []
    for kind, figures in bundle.protocols.items():
        rows = [
            (esc(f.label), num(f.value, reason=f.reason), f"<code>{esc(f.key)}</code>") for f in figures
        ]
        parts.append(f"<h4>{esc(kind)}</h4>" + table(["figure", "value", "key (compare --fail-on)"], rows))
    return "".join(parts)


_OTHER_KINDS = ("detection", "stability", "hysteresis")
