"""The measurement-quality verdict on the page: wherever the report shows a run's timings,
its VALID / INVALID verdict (:mod:`streambench.harness.results.quality`, after MLPerf LoadGen) is shown
beside them, INVALID with its reasons and what it means: the latencies include time that was not the
model's, so they are not a measurement of it."""

from __future__ import annotations

from streambench.harness.report.html import Markup, concat, markup
from streambench.harness.results.quality import NOT_RECORDED, MeasurementQuality, short_reasons

__all__ = ["INVALID_MEANS", "verdict_badge", "verdict_banner"]

INVALID_MEANS = "its latency figures include time that was not the model's: they are not a measurement of it"


def verdict_badge(quality: MeasurementQuality | None, short: bool = True) -> Markup:
    """A table cell: VALID (with any note, small), INVALID with its reasons (short ones by default), or
    not recorded."""
    if quality is None:
        return markup('<span class="null">{}</span>', NOT_RECORDED)
    if quality.verdict == "INVALID":
        why = short_reasons(quality) if short else "; ".join(quality.reasons)
        return markup('<span class="fail">INVALID</span><br><span class="small">{}</span>', why)
    notes = concat(markup('<br><span class="small">{}</span>', n) for n in quality.notes)
    return markup('<span class="pass">VALID</span>{}', notes)


def verdict_banner(quality: MeasurementQuality | None) -> Markup:
    """A paragraph above a run's timings: the verdict, the reasons and notes in full."""
    if quality is None:
        return markup('<p class="small">{}.</p>', NOT_RECORDED.capitalize())
    if quality.verdict == "INVALID":
        return markup(
            '<p class="verdict-invalid"><span class="fail">Measurement INVALID</span>: {}. {}.</p>',
            "; ".join(quality.reasons),
            INVALID_MEANS.capitalize(),
        )
    notes = f" ({'; '.join(quality.notes)})" if quality.notes else ""
    return markup('<p class="small">Measurement <span class="pass">VALID</span>{}.</p>', notes)
