"""The caching audit's controls (harness/runs/causality/caching.py; issue 24, item 4): the unseen
control mixes in another stream and keeps the work; every round has its own, which no rounding cache
can match."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.offenders.rounding_cache import RoundingCacheAdapter, RoundingCacheOptions
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution.config import RunConfig
from streambench.harness.runs.causality.caching import caching_partners, control_share, unseen_control
from streambench.harness.runs.causality.checks import nudge
from tests.protocols.test_causality import CLASSES


@pytest.fixture(scope="module")
def streams() -> list[Stream]:
    config = SyntheticConfig(
        num_streams=3, duration_s=2.0, min_event_segments=1, max_event_segments=2, seed=0
    )
    return make_streams(config)


def one_frame_stream(sid: str, payloads: dict[str, Any], num_frames: int = 1) -> Stream:
    frames = [Frame(i, 0.04 * (i + 1), payloads) for i in range(num_frames)]
    return Stream(
        stream_id=sid,
        classes=CLASSES,
        modalities=tuple(payloads),
        frame_times=0.04 * np.arange(1, num_frames + 1),
        labels=np.zeros((num_frames, len(CLASSES)), dtype=bool),
        frame_source=lambda: frames,
    )


def test_the_unseen_control_mixes_in_another_stream_and_keeps_the_work() -> None:
    """Issue 24, item 4: the caching audit's control is A mixed with another stream, ``(1 - w) A + w B``:
    A's frame indices, times, shapes, dtypes and missing modalities (the same work for an honest model),
    values inside the range the two span (the data's domain), integers rounded and clipped; a payload
    the partner cannot change is moved by ulps instead."""
    a: dict[str, Any] = {
        "f32": np.array([0.0, 1.0, -2.0], dtype=np.float32),
        "f64": np.array([[1.0, 2.0]], dtype=np.float64),
        "u8": np.array([0, 250, 255], dtype=np.uint8),
        "absent": None,
        "missing_there": np.array([5.0], dtype=np.float32),
        "other_shape": np.array([1.0, 2.0], dtype=np.float32),
        "flags": np.array([True, False]),
    }
    b: dict[str, Any] = {
        "f32": np.array([4.0, -1.0, -2.0], dtype=np.float32),
        "f64": np.array([[3.0, 2.0]], dtype=np.float64),
        "u8": np.array([255, 0, 255], dtype=np.uint8),
        "absent": np.ones(3, dtype=np.float32),
        "missing_there": None,
        "other_shape": np.ones(3, dtype=np.float32),
        "flags": np.array([False, True]),
    }
    stream, partner = one_frame_stream("A", a), one_frame_stream("B", b)
    control = unseen_control(stream, partner, 0.5, fallback_ulps=2)
    (frame,) = list(control.frames())
    (original,) = list(stream.frames())
    assert (frame.index, frame.t) == (original.index, original.t) and control.num_frames == 1
    assert control.stream_id != stream.stream_id and "B" in control.stream_id
    got = frame.inputs
    assert set(got) == set(a) and got["absent"] is None
    for name in ("f32", "f64", "u8", "missing_there", "other_shape"):
        assert got[name].dtype == a[name].dtype and got[name].shape == a[name].shape, name
    np.testing.assert_array_equal(got["f32"][:2], np.array([2.0, 0.0], dtype=np.float32))
    # an element equal in both is unchanged by the mix, the payload as a whole is not
    assert got["f32"][2] == -2.0
    np.testing.assert_array_equal(got["f64"], np.array([[2.0, 2.0]]))
    np.testing.assert_array_equal(got["u8"], np.array([128, 125, 255], dtype=np.uint8))  # rint, in range
    up = np.array(np.inf, dtype=np.float32)
    for name in ("missing_there", "other_shape"):  # nothing to mix with: moved 2 ulps
        np.testing.assert_array_equal(got[name], np.nextafter(np.nextafter(a[name], up), up))
    np.testing.assert_array_equal(got["flags"], a["flags"])  # not numeric: kept
    # a partner identical to A cannot change it: moved by ulps rather than given back
    same = next(iter(unseen_control(stream, stream, 0.7, fallback_ulps=1).frames())).inputs
    np.testing.assert_array_equal(same["f64"], np.nextafter(a["f64"], np.inf))
    with pytest.raises(ValueError, match="share"):
        unseen_control(stream, partner, 1.0)


def test_every_round_has_its_own_unseen_control_no_rounding_cache_can_match(streams: list[Stream]) -> None:
    """The controls of the rounds, against the stream and against each other: no frame of one shares a
    key with a frame of another under a cache that rounds to 2 decimals (coarser than the offender's
    default), while a one-ulp copy shares every key with the stream. Partners: the data set's other
    streams in turn, the warm-up stream when there is none."""
    stream, rounds = streams[0], 8
    partners = caching_partners(_run_config(SyntheticConfig(seed=0, num_streams=3)), streams, stream, rounds)
    assert [p.stream_id for p in partners] == [streams[1 + r % 2].stream_id for r in range(rounds)]
    alone = caching_partners(_run_config(SyntheticConfig(seed=0, num_streams=1)), streams[:1], stream, 2)
    assert [p.stream_id for p in alone] == ["syn-warmup"] * 2
    shares = [control_share(r, rounds) for r in range(rounds)]
    assert shares[0] == 0.5 and shares[-1] == 0.75 and len(set(shares)) == rounds
    cache = RoundingCacheAdapter(RoundingCacheOptions(decimals=2))
    keys = {"stream": [cache._key(f.inputs) for f in stream.frames()]}
    keys["ulp"] = [cache._key(f.inputs) for f in nudge(stream, 1).frames()]
    for r, partner in enumerate(partners):
        control = unseen_control(stream, partner, shares[r], r + 1, rounds + r + 1)
        keys[f"control {r}"] = [cache._key(f.inputs) for f in control.frames()]
    assert sum(a == b for a, b in zip(keys["stream"], keys["ulp"], strict=True)) > 0.9 * stream.num_frames
    for p in streams[1:]:
        keys[p.stream_id] = [cache._key(f.inputs) for f in p.frames()]
    for name, own in keys.items():
        if name.startswith("control"):
            others = {k for other, ks in keys.items() if other != name for k in ks}
            assert not set(own) & others, name
            assert len(set(own)) == len(own), name


def _run_config(data: SyntheticConfig) -> RunConfig:
    return RunConfig.model_validate({"adapter": "reference", "data": data.model_dump()})
