"""The capacity search's progress (harness/execution/capacity_search.py: "the progress bar
names the point being measured"): before each point the hook gets its name, N and the search's phase
(``N = 8 streams (step up)``, ``N = 6 streams (bisect 4..8)``); during it, a hook that follows frames
(:class:`~streambench.harness.execution.executor.StreamProgress`) gets the frames that have arrived of the
point's planned ones, at most every :data:`PROGRESS_EVERY_NS` of the loop's clock, from the loop's wait
(:class:`ProgressClock`): nothing is added per frame, and per pass of the loop one comparison."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from streambench.harness.execution.executor import StreamProgress
from streambench.harness.execution.load_generator import LEAD_NS, Lane, LoopClock
from streambench.protocols.capacity import CapacitySearch

__all__ = ["PROGRESS_EVERY_NS", "PointProgress", "ProgressClock", "frames_of", "point_name"]

PointProgress = Callable[[int, int, str], None]
"""(points done, points planned so far, what is being measured), before and after each point; a
:class:`~streambench.harness.execution.executor.StreamProgress` also gets ``frames(point name, frames
arrived, frames planned)`` during each point."""

PROGRESS_EVERY_NS = 100_000_000
"""Progress within a point is reported at most this often (0.1 s of the loop's clock)."""


def point_name(n: int, search: CapacitySearch, again: bool = False) -> str:
    """What the progress display calls the next point: its N and the search's phase, e.g. ``N = 8
    streams (step up)``, ``N = 12 streams (bisect 8..16)``; ``again``: measured again, longer."""
    if search.fixed is not None:
        phase = "one stream first" if n == 1 and n != search.fixed else "fixed N"
    elif search.high is None:
        phase = "step up"
    else:
        phase = f"bisect {search.low}..{search.high}"
    return f"N = {n} stream{'' if n == 1 else 's'} ({phase}{', again, longer' if again else ''})"


class ProgressClock:
    """The loop's clock, reporting the frames that have arrived of the point's ``arrival_ns`` (sorted, ns
    from the point's start) to ``report`` at most every :data:`PROGRESS_EVERY_NS`. Only ``wait`` is
    wrapped (once per pass of the loop, not per frame): ``now`` is the clock's own bound method. A pass
    costs one comparison: the clock is read only after a wait the next report cut short, one whose limit
    (the next arrival, a batcher's due time, a timeout, or none) lay beyond the report's time. Once that
    time has passed every limit the loop sets lies beyond it (whatever has arrived is released first), so
    the report comes within a pass of its time; before it, only the passes between the last arrival before
    it and it read the clock. A wait never outlasts the next report, so the display moves while a worker
    is busy or nothing arrives."""

    def __init__(self, clock: LoopClock, arrival_ns: np.ndarray, report: Callable[[int, int], None]) -> None:
        self.now = clock.now  # the loop binds it: no extra call per frame
        self._wait = clock.wait
        self._arrival = arrival_ns
        self._report = report
        self._base = clock.now() + LEAD_NS  # where the loop's point starts, to within its set-up
        self._next = self._base - LEAD_NS + PROGRESS_EVERY_NS

    def wait(self, busy: Sequence[Lane], until: int | None) -> list[Lane]:
        due = self._next
        if until is not None and until <= due:  # the report is not due before the loop's next event
            return self._wait(busy, until)
        ready = self._wait(busy, due)
        now = self.now()
        if now >= due:
            self._next = now + PROGRESS_EVERY_NS
            arrived = int(np.searchsorted(self._arrival, now - self._base, side="right"))
            self._report(arrived, len(self._arrival))
        return ready


def frames_of(follows: StreamProgress | None, name: str) -> Callable[[int, int], None] | None:
    """``(frames arrived, frames planned)`` of the point called ``name``, for a hook that follows frames."""
    if follows is None:
        return None
    hook = follows
    return lambda done, total: hook.frames(name, done, total)
