"""The event-detection lines of the online summary that ``streambench run`` and ``streambench score``
print: which classes the F1 counts, then when after an event starts the model flags it, its
misses and false alarms per hour, per event class (protocols/online_events.py; docs/metrics.md)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from streambench.harness.io.safe_text import safe
from streambench.protocols.online import OnlineScore
from streambench.protocols.online_events import ClassEventFigures, DelayFigures

__all__ = ["print_events"]

MAX_CLASS_ROWS = 12
"""Event classes listed one by one; more are summed up in the pooled row only (the report lists all)."""


def _ms(delay: DelayFigures | None, field: str) -> str:
    return "–" if delay is None else f"{getattr(delay, field):.1f}"


def _row(label: str, c: ClassEventFigures) -> list[str]:
    fa = "–" if c.false_alarms_per_hour is None else f"{c.false_alarms_per_hour:.3g}"
    return [
        safe(label),
        str(c.reference_events),
        str(c.missed),
        f"{c.false_alarms} ({fa}/h)",
        "–" if c.f1 is None else f"{100 * c.f1:.1f}",
        _ms(c.onset_delay, "median_ms"),
        _ms(c.onset_delay, "p90_ms"),
        _ms(c.onset_delay, "max_ms"),
        _ms(c.offset_delay, "median_ms"),
    ]


def print_events(console: Console, metrics: OnlineScore) -> None:
    """The scored classes' rule, then the event table with one plain sentence (or why there is none)."""
    if metrics.scored_rule is not None:
        console.print(f"F1 counts: {safe(metrics.scored_rule)}", highlight=False)
    events = metrics.events
    if events is None:
        if metrics.events_reason is not None:
            console.print(f"event detection: none ({safe(metrics.events_reason)})", highlight=False)
        return
    collar = f"±{1e3 * events.settings.t_collar_s:g} ms"
    table = Table(
        title=f"Event detection: how long after an event starts the model flags it (onset within {collar})",
        caption="delay = when the prediction that flagged the event finished minus when the event started "
        "(computation-aware clock, latencies replayed); missed: events nothing matched; false alarms: "
        f"detections that matched nothing, per hour of the {events.hours * 3600:.4g} s of test streams",
        title_justify="left",
    )
    for name in ("class", "events", "missed", "false alarms", "event F1 %", "onset p50 ms", "p90 ms"):
        table.add_column(name, justify="left" if name == "class" else "right")
    table.add_column("max ms", justify="right")
    table.add_column("offset p50 ms", justify="right")
    table.add_row(*_row("all event classes", events.overall))
    if 1 < len(events.classes) <= MAX_CLASS_ROWS:
        for c in events.classes:
            table.add_row(*_row(c.name, c))
    console.print(table)
