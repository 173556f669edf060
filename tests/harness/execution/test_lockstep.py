"""Two sides fed frame by frame in turn (harness/execution/lockstep.py): strict alternation, a side that
leaves releases the other, a stuck side times out."""

from __future__ import annotations

import threading

import pytest

from streambench.harness.execution.lockstep import Lockstep, LockstepTimeout


def _side(lockstep: Lockstep, label: str, frames: int, log: list[str], stop_early: int | None = None) -> None:
    turn = lockstep.turn(label)
    try:
        for i in range(frames):
            turn.ended()  # the worker asks for a frame: its last one (if any) has ended
            turn.wait()
            log.append(f"{label}{i}")
            if stop_early is not None and i + 1 == stop_early:
                return
        turn.ended()  # the stream is done
    finally:
        turn.leave()


def test_the_two_sides_frames_alternate_one_by_one() -> None:
    lockstep, log = Lockstep(("base", "head"), first="head"), []
    threads = [threading.Thread(target=_side, args=(lockstep, label, 5, log)) for label in ("base", "head")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert log == [f"{label}{i}" for i in range(5) for label in ("head", "base")]


def test_a_side_that_leaves_no_longer_holds_the_other() -> None:
    lockstep, log = Lockstep(("base", "head"), first="base"), []
    threads = [
        threading.Thread(target=_side, args=(lockstep, "base", 2, log, 2)),  # fails after 2 frames
        threading.Thread(target=_side, args=(lockstep, "head", 5, log)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)
    assert log[:4] == ["base0", "head0", "base1", "head1"] and log[4:] == ["head2", "head3", "head4"]


def test_a_side_waits_only_as_long_as_its_limit() -> None:
    lockstep = Lockstep(("base", "head"), first="base")
    turn = lockstep.turn("head")
    turn.limit_s = 0.05
    with pytest.raises(LockstepTimeout, match=r"head waited 0\.05 s for base's frame"):
        turn.wait()


def test_two_sides_and_one_of_them_first() -> None:
    with pytest.raises(ValueError, match="two sides"):
        Lockstep(("base", "base"), first="base")
    with pytest.raises(ValueError, match="not a side"):
        Lockstep(("base", "head"), first="base").turn("other")
