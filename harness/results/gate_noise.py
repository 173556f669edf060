"""Where an A/B job's noise comes from, to size its rounds (harness/execution/rounds.py ``size``).

A pair's log ratio varies for two reasons: the two worker processes differ in speed for their whole life
(memory layout, placement: a fresh pair of processes draws anew), and the frames of one round sample the
figure (a p95 of 100 frames is rougher than one of 1,000). More frames per round shrink only the second.
Split each pair's frames in halves (its streams, or the frames of its one stream) and the difference of
the halves' log ratios measures the second alone: half its standard deviation is the within-pair noise
of the whole pair's ratio. When it is a large part of the pair-to-pair variance, rounds with twice the
streams cut it in half; otherwise more frames would buy nothing and more pairs are what decides.

Pure: numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["GROWN_SHARE", "noise_split", "streams_for"]

GROWN_SHARE = 0.5
"""Rounds grow when the within-pair variance exceeds this share of the pair-to-pair variance."""

_FIGURE = {"p50": 50.0, "p95": 95.0, "p99": 99.0}

Rounds = Sequence[Sequence[npt.ArrayLike]]
"""Per pair, per stream of its round, the per-frame values."""


def _figure(values: npt.NDArray[np.float64], key: str) -> float:
    return float(values.mean()) if key == "mean" else float(np.percentile(values, _FIGURE[key]))


def _halves(streams: Sequence[npt.ArrayLike]) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    arrays = [np.asarray(s, dtype=np.float64) for s in streams]
    if len(arrays) >= 2:
        cut = len(arrays) // 2
        return np.concatenate(arrays[:cut]), np.concatenate(arrays[cut:])
    whole = arrays[0]
    return whole[: whole.size // 2], whole[whole.size // 2 :]


def noise_split(base: Rounds, head: Rounds, key: str) -> tuple[float, float] | None:
    """(pair-to-pair standard deviation, within-pair standard deviation) of the log ratio head / base of
    figure ``key`` over the pairs; None with fewer than 3 pairs or a round too small to halve."""
    if len(base) < 3 or len(base) != len(head):
        return None
    whole, split = [], []
    for b_streams, h_streams in zip(base, head, strict=True):
        b1, b2 = _halves(b_streams)
        h1, h2 = _halves(h_streams)
        if min(b1.size, b2.size, h1.size, h2.size) < 2:
            return None
        b_all, h_all = np.concatenate([b1, b2]), np.concatenate([h1, h2])
        figures = [_figure(x, key) for x in (b_all, h_all, b1, h1, b2, h2)]
        if min(figures) <= 0:
            return None
        whole.append(np.log(figures[1] / figures[0]))
        split.append(np.log(figures[3] / figures[2]) - np.log(figures[5] / figures[4]))
    return float(np.std(whole, ddof=1)), float(np.std(split, ddof=1) / 2.0)


def streams_for(
    base: Rounds, head: Rounds, keys: Sequence[str], streams: int, most: int
) -> tuple[int, str] | None:
    """Twice ``streams`` per round (at most ``most``) when, for a figure of ``keys``, the within-pair
    variance exceeds :data:`GROWN_SHARE` of the pair-to-pair variance; the reason; None otherwise."""
    if streams * 2 > most:
        return None
    for key in keys:
        split = noise_split(base, head, key)
        if split is None:
            continue
        between, within = split
        if between > 0 and within**2 > GROWN_SHARE * between**2:
            return streams * 2, (
                f"{key}: within-pair noise ±{within:.1%} of the pair-to-pair ±{between:.1%} (more frames "
                "per round shrink the first)"
            )
    return None
