"""The measurement-quality verdict on the page: wherever the report shows a run's timings,
its VALID / INVALID verdict (:mod:`streambench.harness.results.quality`, after MLPerf LoadGen) is shown
beside them, INVALID with its reasons and what it means: the latencies include time that was not the
model's, so they are not a measurement of it."""

from __future__ import annotations

from streambench.harness.report.html import esc
from streambench.harness.results.quality import NOT_RECORDED, MeasurementQuality, short_reasons

__all__ = ["INVALID_MEANS", "verdict_badge", "verdict_banner"]

INVALID_MEANS = "its latency figures include time that was not the model's: they are not a measurement of it"


def verdict_badge(quality: MeasurementQuality | None, short: bool = True) -> str:
    """A table cell: VALID (with any note, small), INVALID with its reasons (short ones by default), or
    not recorded."""
    if quality is None:
        return f'<span class="null">{esc(NOT_RECORDED)}</span>'
    if quality.verdict == "INVALID":
        why = short_reasons(quality) if short else "; ".join(quality.reasons)
        return f'<span class="fail">INVALID</span><br><span class="small">{esc(why)}</span>'
    notes = "".join(f'<br><span class="small">{esc(n)}</span>' for n in quality.notes)
    return f'<span class="pass">VALID</span>{notes}'


def verdict_banner(quality: MeasurementQuality | None) -> str:
    """A paragraph above a run's timings: the verdict, the reasons and notes in full."""
    if quality is None:
        return f'<p class="small">{esc(NOT_RECORDED.capitalize())}.</p>'
    if quality.verdict == "INVALID":
        reasons = "; ".join(quality.reasons)
        return (
            f'<p class="verdict-invalid"><span class="fail">Measurement INVALID</span>: {esc(reasons)}. '
            f"{esc(INVALID_MEANS.capitalize())}.</p>"
        )
    notes = f" ({esc('; '.join(quality.notes))})" if quality.notes else ""
    return f'<p class="small">Measurement <span class="pass">VALID</span>{notes}.</p>'
