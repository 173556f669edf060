"""Where an A/B job's noise comes from (harness/results/gate_noise.py), checked on simulated pairs whose
two sources of noise are known."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.harness.results.gate_noise import noise_split, streams_for


def _pairs(process_sd: float, frames: int, frame_sd: float, pairs: int = 40, seed: int = 0):  # type: ignore[no-untyped-def]
    """Per pair, two streams a side: each side's processes draw a speed (log-normal, ``process_sd``), each
    frame a log-normal spread (``frame_sd``) around it."""
    rng = np.random.default_rng(seed)
    base, head = [], []
    for _ in range(pairs):
        sides = []
        for _side in range(2):
            speed = np.exp(rng.normal(0, process_sd))
            sides.append([speed * np.exp(rng.normal(0, frame_sd, frames)) for _ in range(2)])
        base.append(sides[0])
        head.append(sides[1])
    return base, head


def test_the_within_pair_part_is_measured_from_the_halves() -> None:
    base, head = _pairs(process_sd=0.0, frames=50, frame_sd=0.2)
    split = noise_split(base, head, "p50")
    assert split is not None
    between, within = split
    assert within == pytest.approx(between, rel=0.35)  # no process effect: all of the noise is within
    base, head = _pairs(process_sd=0.05, frames=2000, frame_sd=0.05)
    between, within = noise_split(base, head, "p50") or (0.0, 0.0)
    assert within < 0.2 * between  # processes dominate: more frames would not help


def test_rounds_grow_only_where_frames_are_the_noise() -> None:
    base, head = _pairs(process_sd=0.0, frames=30, frame_sd=0.3)
    grown = streams_for(base, head, ["p95"], streams=2, most=8)
    assert grown is not None and grown[0] == 4 and grown[1].startswith("p95: within-pair noise")
    assert streams_for(base, head, ["p95"], streams=8, most=8) is None  # at the cap
    base, head = _pairs(process_sd=0.05, frames=2000, frame_sd=0.02)
    assert streams_for(base, head, ["p50"], streams=2, most=8) is None


def test_too_few_pairs_say_nothing() -> None:
    base, head = _pairs(process_sd=0.0, frames=50, frame_sd=0.2, pairs=2)
    assert noise_split(base, head, "p50") is None
