"""One line for each figure of an online score that, read alone, looks broken (protocols/online.py): the
console of ``streambench run`` and the report print them beside the figures they explain.

- **Compute-aware F1 at 0 ms is 0 by construction.** On the computation-aware clock a prediction exists
  once ``predict()`` has finished, after its frame arrived (a latency is never 0), so no prediction lies in
  a 0 ms window (DESIGN.md "Time and delay"). Said when no unit was answered inside that window.
- **Frame F1 and event F1 far apart** (:data:`WIDE_GAP`, 20 points): frame F1 counts each frame alone,
  event F1 (sed_eval's event-based matching) counts an event only when a detection starts within the onset
  collar. The line gives what the event figures show of why: how many events the model flagged at all and
  how late (``flagged``, ``flag_delay``), and whether the detections break up (more than 1.5 detections
  per event).
- **The segment unit**: the length of the segment F1's segments, in frames (``OnlineScore.segment_unit``), and
  where the length came from (the caller's words on the data's setting): a 1 s segment of 10 ms frames says
  why it is 1 s.

Pure: each function reads a score (older results lack some fields: the line then says less, or nothing).
"""

from __future__ import annotations

from streambench.protocols.online import OnlineScore

__all__ = ["WIDE_GAP", "compute_aware_note", "figure_notes", "frame_event_note", "segment_note"]

WIDE_GAP = 0.20
"""Frame F1 and event F1 this far apart (absolute) get a line of explanation."""
BREAKS_UP = 1.5
"""Detections per reference event above which the runs of detected frames are said to break up."""


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def compute_aware_note(score: OnlineScore) -> str | None:
    """Why the compute-aware F1 at Δt = 0 is 0, when no prediction was inside that window; None otherwise."""
    points = score.overall.accuracy.curves.get("frame_replay", {}).get("strict", [])
    if not points or points[0].delta_ms != 0 or points[0].answered > 0:
        return None
    later = next((p for p in points if p.answered > 0), None)
    tail = f"; at {later.delta_ms:g} ms it is {_pct(later.f1_micro)}" if later is not None else ""
    return (
        "F1 compute-aware at 0 ms is 0 by construction: a prediction exists only once predict() has "
        "finished, after its frame arrived (latency > 0), so none lies in a 0 ms window" + tail
    )


def frame_event_note(score: OnlineScore) -> str | None:
    """Why frame F1 and event F1 disagree by :data:`WIDE_GAP` or more; None when they do not."""
    events = score.events
    points = score.overall.accuracy.curves["frame"]["strict"]
    if events is None or events.overall.f1 is None or not points:
        return None
    frame, event, o = points[-1].f1_micro, events.overall.f1, events.overall
    if abs(frame - event) < WIDE_GAP:
        return None
    collar = f"±{1e3 * events.settings.t_collar_s:g} ms"
    line = (
        f"frame F1 {_pct(frame)} (Strict, {points[-1].delta_ms:g} ms) vs event F1 {_pct(event)}: frame F1 "
        f"counts each frame alone, an event counts only when a detection starts within {collar} of its onset"
    )
    if o.flagged is not None and o.reference_events:
        line += f"; {o.flagged} of {o.reference_events} events were flagged"
        if o.flag_delay is not None:
            line += f", a median {o.flag_delay.median_ms:.0f} ms after their onset"
    if o.detected_events > BREAKS_UP * max(o.reference_events, 1):
        line += (
            f"; {o.detected_events} detections for {o.reference_events} events: the runs of frames decided "
            "active break up (events.min_gap_s merges them)"
        )
    return line


def segment_note(score: OnlineScore, origin: str | None = None) -> str | None:
    """The segment F1's unit, where its length came from (``origin``: the data's setting, in words, unless
    the protocol set it) and how a segment is scored; None in results written before the unit."""
    unit = score.segment_unit
    if not unit:
        return None
    where = f" ({origin})" if origin and not unit.endswith(")") else ""
    return (
        f"segment F1: {unit}{where}: a segment's labels are its frames' together, its answer the last "
        "prediction for one of its frames"
    )


def figure_notes(score: OnlineScore, segment_origin: str | None = None) -> list[str]:
    """Every line that applies, in the order the figures are shown: curves, events, segments."""
    notes = (compute_aware_note(score), frame_event_note(score), segment_note(score, segment_origin))
    return [n for n in notes if n]
