"""The capacity search's progress (issue 28, item 4: "the progress bar names the point being measured";
harness/execution/capacity_search.py) on a simulated clock: each point is named with its N and the
search's phase before it runs, in the order the search visits them, and its frames are reported while it
runs, at most every 0.1 s of the loop's clock."""

from __future__ import annotations

import numpy as np

from streambench.harness.execution.capacity_search import (
    PROGRESS_EVERY_NS,
    PointProgress,
    ServingPool,
    SourceStreams,
    run_search,
)
from streambench.protocols.capacity import CapacityConfig
from streambench.protocols.capacity_score import CapacityScore
from tests.harness.execution.capacity_sim import SimClock, SimLane, _core, _stream, reference

QUICK = {"confidence": 0.8, "target_miss_rate": 0.05, "slack_misses": 0, "min_point_s": 1.0}
"""A loose bound: 32 frames pass a point, so each point lasts about a second of the simulated clock."""


class Recorder:
    """A progress hook that follows frames (as the command line's bar does), recording every call with
    the simulated time it came at."""

    def __init__(self, clock: SimClock) -> None:
        self.clock = clock
        self.points: list[tuple[int, int, str]] = []
        self.frames_seen: list[tuple[str, int, int, int]] = []

    def __call__(self, done: int, total: int, what: str) -> None:
        self.points.append((done, total, what))

    def frames(self, stream_id: str, done: int, total: int | None) -> None:
        assert total is not None
        self.frames_seen.append((stream_id, done, total, self.clock.t))


def _search(
    clock: SimClock, hook: PointProgress | None, service_ms: int = 9, **settings: object
) -> CapacityScore:
    """The whole search of one simulated replica of ``service_ms`` per frame, 40 ms deadline."""
    lane = SimLane(clock, _core("replicas", 1, adapter="null"), service_ms * 1_000_000)
    config = CapacityConfig.model_validate({**QUICK, "budget_s": 10_000, "deadline_ms": 40, **settings})
    pool = ServingPool([lane], lambda k, m: lane.request(m), reference=reference(adapter="null"))
    return run_search(SourceStreams.of([_stream("a", 40.0, 250, 0)]), config, pool, clock, hook)


def _recorded(**settings: object) -> tuple[CapacityScore, Recorder]:
    clock = SimClock()
    hook = Recorder(clock)
    return _search(clock, hook, **settings), hook


def test_each_point_is_named_with_its_n_and_phase_in_the_order_the_search_visits_them() -> None:
    """One replica of 9 ms per frame at 25 frames/s holds floor(40 / 9) = 4 streams: the search steps up
    1, 2, 4, 8 (fails), then bisects 4..8 to 6 (fails) and 4..6 to 5 (fails)."""
    score, hook = _recorded()
    assert score.capacity == 4
    started = [what for done, total, what in hook.points if total == done + 1]
    assert started == [
        "N = 1 stream (step up)",
        "N = 2 streams (step up)",
        "N = 4 streams (step up)",
        "N = 8 streams (step up)",
        "N = 6 streams (bisect 4..8)",
        "N = 5 streams (bisect 4..6)",
    ]
    visited = [p.streams for p in score.curve]
    assert sorted(visited) == [1, 2, 4, 5, 6, 8]
    ended = [what for done, total, what in hook.points if total == done]
    assert ended == [
        "N = 1 stream (step up): passes",
        "N = 2 streams (step up): passes",
        "N = 4 streams (step up): passes",
        "N = 8 streams (step up): fails",
        "N = 6 streams (bisect 4..8): fails",
        "N = 5 streams (bisect 4..6): fails",
    ]
    assert [(d, t) for d, t, _ in hook.points[:4]] == [(0, 1), (1, 1), (1, 2), (2, 2)]  # done, planned


def test_frames_are_reported_within_each_point_at_most_every_tenth_of_a_second() -> None:
    score, hook = _recorded()
    names = [what for done, total, what in hook.points if total == done + 1]
    by_point = {name: [f for f in hook.frames_seen if f[0] == name] for name in names}
    assert set(f[0] for f in hook.frames_seen) == set(names)  # every report names a point being measured
    order = list(dict.fromkeys(f[0] for f in hook.frames_seen))
    assert order == names  # in the order the points run
    passed = {p.streams for p in score.curve if p.passed}
    for name, seen in by_point.items():
        n = int(name.split()[2])
        # a passing point lasts at least a second of the simulated clock; a failing one is cut short
        assert len(seen) >= (5 if n in passed else 1), name
        done = [d for _, d, _, _ in seen]
        totals = {t for _, _, t, _ in seen}
        total = totals.pop()
        assert done == sorted(done) and not totals and done[0] >= 0 and done[-1] <= total
        if n in passed:  # reported up to its last tenth of a second
            assert done[-1] >= total - n * 0.1 * 25, name
        times = np.diff([t for _, _, _, t in seen])
        assert (times >= PROGRESS_EVERY_NS).all(), name  # rate-limited on the loop's clock
    # the planned frames of a point: N streams x its duration at 25 frames/s (the curve's passing points
    # served every frame they planned)
    one = by_point["N = 1 stream (step up)"]
    point = next(p for p in score.curve if p.streams == 1)
    assert one[0][2] == point.frames


def test_progress_changes_nothing_the_search_measures() -> None:
    with_hook, _ = _recorded()
    without = _search(SimClock(), None)
    a = [(p.streams, p.frames, p.misses, p.passed) for p in with_hook.curve]
    b = [(p.streams, p.frames, p.misses, p.passed) for p in without.curve]
    assert a == b


def test_a_fixed_n_names_the_one_stream_point_first_and_a_plain_hook_gets_the_names_only() -> None:
    calls: list[tuple[int, int, str]] = []
    score = _search(SimClock(), lambda d, t, w: calls.append((d, t, w)), streams=3)
    assert score.status == "fixed"
    assert [w for d, t, w in calls if t == d + 1] == [
        "N = 1 stream (one stream first)",
        "N = 3 streams (fixed N)",
    ]


class CountingClock(SimClock):
    """The simulated clock, counting its reads and the loop's waits (its passes)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = self.waits = 0

    def now(self) -> int:
        self.reads += 1
        return self.t

    def wait(self, busy: list[SimLane], until: int | None) -> list[SimLane]:  # type: ignore[override]
        self.waits += 1
        return super().wait(busy, until)


def test_progress_reads_the_clock_a_few_times_a_report_not_once_a_pass() -> None:
    """The load generator's loop already reads its clock; what the progress adds must not scale with its
    passes (a read per pass was 1.5-3 % of the loop's cost per frame), only with its reports, one every
    0.1 s: a read when the point starts, and per report a read at its time and one after each reply that
    comes between the last arrival before it and it. Two points, N = 1 then N = 16 streams of 25 frames/s
    served in 1 ms: hundreds of passes, about 20 reports."""
    plain_clock, clock = CountingClock(), CountingClock()
    plain = _search(plain_clock, None, service_ms=1, streams=16)
    hook = Recorder(clock)
    followed = _search(clock, hook, service_ms=1, streams=16)
    assert [p.frames for p in followed.curve] == [p.frames for p in plain.curve] == [32, 384]
    added, reports, points = clock.reads - plain_clock.reads, len(hook.frames_seen), len(followed.curve)
    assert reports >= 20 and clock.waits > 30 * reports  # many passes a report: a read per pass would show
    assert added <= 4 * reports + points, (added, reports, clock.waits)
