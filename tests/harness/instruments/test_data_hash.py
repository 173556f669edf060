"""Tests of the data hash (harness/instruments/data_hash.py; seed 004 §6.2.2 环境锁定清单)."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.instruments.data_hash import hash_streams


def tiny_stream(stream_id: str = "a", payload: list[float] | None = None) -> Stream:
    values = payload if payload is not None else [0.5, -1.0]
    times = np.array([0.1, 0.2])
    labels = np.array([[True, False], [False, True]])

    def frames() -> list[Frame]:
        return [
            Frame(index=i, t=float(times[i]), inputs={"x": np.array([values[i]], dtype=np.float32)})
            for i in range(2)
        ]

    return Stream(stream_id, ("bg", "ev"), labels, times, frames, ("x",), segment_length_s=0.1)


def test_same_seed_same_hash_different_seed_different_hash() -> None:
    first = hash_streams(make_streams(SyntheticConfig(seed=0, num_streams=3)))
    again = hash_streams(make_streams(SyntheticConfig(seed=0, num_streams=3)))
    other = hash_streams(make_streams(SyntheticConfig(num_streams=3, seed=1)))
    assert re.fullmatch(r"[0-9a-f]{64}", first)
    assert first == again
    assert first != other


def test_hash_is_independent_of_stream_order_but_not_of_the_stream_set() -> None:
    streams = make_streams(SyntheticConfig(seed=0, num_streams=3))
    assert hash_streams(streams) == hash_streams(list(reversed(streams)))
    assert hash_streams(streams) != hash_streams(streams[:2])


def test_labels_times_payloads_and_ids_all_count() -> None:
    base = tiny_stream()
    reference = hash_streams([base])
    flipped = dataclasses.replace(base, labels=~base.labels)
    shifted = dataclasses.replace(base, frame_times=base.frame_times + 0.01)
    assert hash_streams([flipped]) != reference
    assert hash_streams([shifted]) != reference
    assert hash_streams([tiny_stream(payload=[0.5, -1.5])]) != reference
    assert hash_streams([tiny_stream(stream_id="b")]) != reference
    assert hash_streams([tiny_stream()]) == reference


def test_missing_payload_differs_from_present_one() -> None:
    base = tiny_stream()

    def with_gap() -> list[Frame]:
        frames = list(base.frames())
        frames[1] = Frame(index=1, t=frames[1].t, inputs={"x": None})
        return frames

    assert hash_streams([dataclasses.replace(base, frame_source=with_gap)]) != hash_streams([base])


def test_hash_of_a_fixed_stream_is_pinned() -> None:
    # guards the byte layout: a change here changes every recorded data hash
    assert hash_streams([tiny_stream()]) == PINNED


def test_duplicate_ids_and_object_payloads_are_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate stream ids"):
        hash_streams([tiny_stream(), tiny_stream()])
    base = tiny_stream()

    def bad() -> list[Frame]:
        return [Frame(index=0, t=0.1, inputs={"x": np.array([object()])})]

    with pytest.raises(TypeError, match=r"stream 'a', frame 0, modality 'x'"):
        hash_streams([dataclasses.replace(base, frame_source=bad)])


PINNED = "69963ca972e9b261796af8bb45512f8f882df30763d02c9d2fb10ee3c2b113a1"
