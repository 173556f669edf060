"""The per-run section about event detection: when after an event starts the model flags it,
what it misses and how often it raises a false alarm, per event class (protocols/online_events.py;
docs/metrics.md "Event detection")."""

from __future__ import annotations

from streambench.harness.report.bundle import RunBundle
from streambench.harness.report.html import Markup, absent, markup, missing, num, table
from streambench.harness.report.numbers import duration_s, percent
from streambench.protocols.online_events import ClassEventFigures, DelayFigures
from streambench.protocols.online_notes import frame_event_note

__all__ = ["events_section"]

_HEADERS = (
    "class",
    "reference events",
    "detected",
    "missed",
    "false alarms per hour",
    "event F1",
    "onset delay median (ms)",
    "onset delay p90 (ms)",
    "onset delay max (ms)",
    "offset delay median (ms)",
)


def _delay(delay: DelayFigures | None, field: str) -> Markup:
    return missing("no match") if delay is None else num(getattr(delay, field), 4)


def _row(label: str, c: ClassEventFigures) -> list[str]:
    return [
        label,
        num(c.reference_events),
        num(c.detected_events),
        num(c.missed),
        num(c.false_alarms_per_hour, 4, reason="no stream time"),
        percent(c.f1) if c.f1 is not None else missing("no event at all"),
        _delay(c.onset_delay, "median_ms"),
        _delay(c.onset_delay, "p90_ms"),
        _delay(c.onset_delay, "max_ms"),
        _delay(c.offset_delay, "median_ms"),
    ]


def events_section(bundle: RunBundle) -> Markup:
    """One plain sentence of what the figures mean, then the table: every event class pooled, then each."""
    result = bundle.result
    if result is None:
        return absent(bundle.result_reason)
    events = result.metrics.events
    if events is None:
        return absent(result.metrics.events_reason or "a result written before event figures")
    settings = events.settings
    offset = (
        f" and its offset within max({1e3 * settings.t_collar_s:g} ms, "
        f"{100 * settings.percentage_of_length:g} % of the event's length)"
        if settings.evaluate_offset
        else ""
    )
    sentence = (
        "How long after an event starts the model flags it (onset delay), which events it misses, and how "
        "often it flags an event that is not there (false alarms per hour)."
    )
    detail = (
        f"A reference event is a run of frames labelled with a class other than the background "
        f"({events.background_class!r}); a detection, a run of frames the model decided active. Each event "
        f"is matched to at most one detection whose onset lies within ±{1e3 * settings.t_collar_s:g} ms of "
        f"its own{offset} (sed_eval's event-based matching). The onset delay is when the prediction that "
        "flagged the detection finished minus when the event started (computation-aware clock: the recorded "
        "latencies replayed with frames arriving on time); negative when flagged before the labelled start. "
        f"False alarms: per hour of the {duration_s(3600 * events.hours)} of test streams "
        f"({events.streams} streams"
        + (f", {events.failed_streams} failed: their events missed" if events.failed_streams else "")
        + ")."
    )
    rows = [_row("all event classes", events.overall)]
    if len(events.classes) > 1:
        rows += [_row(c.name, c) for c in events.classes]
    if len(events.classes) > 1 and events.macro_f1 is not None:
        detail += f" Mean of the classes' event F1: {percent(events.macro_f1)}."
    gap = frame_event_note(result.metrics)  # frame and event F1 far apart: why, in one line
    why = markup('<p class="why">Why: {}.</p>', gap) if gap else Markup()
    return markup("<p>{}</p>{}{}<p>{}</p>", sentence, table(_HEADERS, rows), why, detail)
