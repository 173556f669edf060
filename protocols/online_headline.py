"""The online protocol's headline (protocols/online.py): F1@Δt, mean latency and RTF with bootstrap
intervals over streams (DESIGN.md "Results"), and the warnings about the measurement, the failed streams
included (a failed test stream is in every F1 as answered wrongly, never left out)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from streambench.protocols.metrics.bootstrap import Interval, bootstrap_micro_f1, bootstrap_ratio, spread
from streambench.protocols.online_speed import measured_latency
from streambench.protocols.online_units import Tally
from streambench.protocols.recording import FailedStream, StreamRecording

__all__ = ["Headline", "failure_warnings", "make_headline"]


class Headline(BaseModel):
    """The headline figures with bootstrap intervals over streams, and warnings about the measurement."""

    f1_strict: list[Interval] = Field(
        description="frame-level micro F1@Δt (Strict) over the scored classes (OnlineScore.scored_classes), "
        "one per Δt, over every test stream (a failed one as answered wrongly)"
    )
    mean_latency_ms: Interval
    rtf: Interval
    latency_spread: float = Field(description="IQR / median of the per-frame latencies")
    warnings: list[str]


def make_headline(
    recs: Sequence[StreamRecording],
    tallies: Sequence[Tally],
    failed: Sequence[Tally],
    deltas_ms: Sequence[float],
    decision_kind: str,
    scored: np.ndarray,
    *,
    resamples: int,
    confidence: float,
    spread_warning: float,
) -> Headline:
    """Intervals over streams: the F1's over the measured test streams (``recs``, their ``tallies``)
    and the failed ones (``failed``, tallies of :func:`streambench.protocols.online_units.failed_tally`), the
    latency's and the RTF's over the measured ones; a warning when latencies spread widely. The F1 counts
    the ``scored`` columns of the tallies (every class but the data's background); whether the model
    predicted anything, every column."""
    n, level = resamples, confidence
    f1 = []
    predicted = 0
    for delta in deltas_ms:
        counts = [t.counts[("frame", "strict", delta)] for t in [*tallies, *failed]]
        tp, fp, fn = (
            np.array([getattr(c, name)[scored].sum() for c in counts]) for name in ("tp", "fp", "fn")
        )
        measured = counts[: len(tallies)]
        predicted += int(sum(c.tp.sum() + c.fp.sum() for c in measured))  # what the model predicted
        f1.append(bootstrap_micro_f1(tp, fp, fn, n_resamples=n, confidence=level))
    processing = np.array([r.latency_ns.sum() for r in recs], dtype=np.float64)
    frames = np.array([measured_latency(r).size for r in recs], dtype=np.float64)
    durations = np.array([r.duration_ns for r in recs], dtype=np.float64)
    mean_latency = bootstrap_ratio(processing / 1e6, frames, n_resamples=n, confidence=level)
    latency_spread = spread(np.concatenate([measured_latency(r) for r in recs]))
    warnings = []
    if latency_spread > spread_warning:
        warnings.append(
            f"latency spread IQR/median = {latency_spread:.0%} exceeds {spread_warning:.0%}: "
            "the machine may be busy or the model's cost varies; repeat the run before comparing"
        )
    if len(recs) + len(failed) < 10:
        warnings.append(f"only {len(recs) + len(failed)} test streams: the intervals over streams are rough")
    if predicted == 0 and any(r.num_predictions for r in recs):
        warnings.append(
            f"the model never predicted a label: no score passed the decision rule ({decision_kind}), "
            "so F1 is 0; check the scores' scale (probabilities for a threshold), the --threshold or "
            "--decision, and that the model's classes are the data's"
        )
    return Headline(
        f1_strict=f1,
        mean_latency_ms=mean_latency,
        rtf=bootstrap_ratio(processing, durations, n_resamples=n, confidence=level),
        latency_spread=latency_spread,
        warnings=warnings,
    )


def failure_warnings(
    failed: Sequence[FailedStream], fitted_on: int, decision_kind: str, threshold: float
) -> list[str]:
    """What the failed streams did to the figures: the test ones were scored as answered wrongly; the
    validation ones (per-class rule) fitted no threshold (``fitted_on``: the validation streams that
    finished; with none, the fixed ``threshold`` stood in)."""
    warnings = []
    test = [f for f in failed if f.role == "test"]
    if test:
        frames = sum(f.num_frames for f in test)
        warnings.append(
            f"{len(test)} test stream(s) failed ({frames} frames): scored as answered wrongly on every "
            "frame and segment (every class flipped), not left out; see the failures"
        )
    failed_validation = len(failed) - len(test)
    if failed_validation and decision_kind == "per_class":
        fitted = "the others" if fitted_on else f"none: the fixed threshold {threshold:g} stands in"
        warnings.append(
            f"{failed_validation} validation stream(s) failed: the per-class thresholds were fitted on "
            + fitted
        )
    return warnings
