"""Domain-labelled streams (harness/datasets/domains.py): the layouts of seed 001's A→B→A, its control
A→A and the mix segment, exactly; frames paired across layouts of one repeat."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.router import DOMAIN_MODALITY, domain_signature
from streambench.harness.datasets.domains import (
    DomainSource,
    Segment,
    aba_stream,
    control_stream,
    mix_stream,
    segment_stream,
    warmup_stream,
)

SOURCE = DomainSource(seed=3)


def payload(stream: object) -> np.ndarray:
    return np.stack([f.inputs[DOMAIN_MODALITY] for f in stream.frames()])  # type: ignore[attr-defined]


def test_aba_layout_is_exact() -> None:
    s = aba_stream(SOURCE, "aba", len_a=5, len_b=3, len_a2=4)
    assert s.num_frames == 12 and s.classes == ("A", "B") and s.modalities == (DOMAIN_MODALITY,)
    assert s.meta["segments"] == [
        {"label": "A1", "start": 0, "end": 5, "a_share": 1.0},
        {"label": "B", "start": 5, "end": 8, "a_share": 0.0},
        {"label": "A2", "start": 8, "end": 12, "a_share": 1.0},
    ]
    assert s.meta["boundaries"] == {"A1": 0, "B": 5, "A2": 8}
    expected = np.array([[1, 0]] * 5 + [[0, 1]] * 3 + [[1, 0]] * 4, dtype=bool)
    np.testing.assert_array_equal(s.labels, expected)
    np.testing.assert_allclose(s.frame_times, (np.arange(12) + 1) / 25.0)
    assert [f.index for f in s.frames()] == list(range(12))


def test_control_is_the_forward_stream_without_b() -> None:
    fwd = aba_stream(SOURCE, "aba", len_a=6, len_b=4, repeat=2)
    ctrl = control_stream(SOURCE, "ctrl", len_a=6, repeat=2)
    assert ctrl.num_frames == 12
    assert ctrl.meta["boundaries"] == {"A1": 0, "A2": 6}
    np.testing.assert_array_equal(ctrl.labels[:, 0], np.ones(12, dtype=bool))
    x_fwd, x_ctrl = payload(fwd), payload(ctrl)
    np.testing.assert_array_equal(x_ctrl, np.concatenate([x_fwd[:6], x_fwd[10:]]))
    other = payload(control_stream(SOURCE, "ctrl", len_a=6, repeat=3))
    assert not np.allclose(other, x_ctrl)  # another repeat, other frames


@pytest.mark.parametrize(("share", "n_a"), [(0.2, 2), (0.5, 5), (0.8, 8), (0.0, 0), (1.0, 10), (0.25, 2)])
def test_mix_segment_holds_the_proportion(share: float, n_a: int) -> None:
    s = mix_stream(SOURCE, "mix", len_a=4, len_mix=10, a_share=share, len_a2=3)
    assert s.meta["boundaries"] == {"A1": 0, "MIX": 4, "A2": 14}
    assert s.num_frames == 17
    mix = s.labels[4:14]
    assert int(mix[:, 0].sum()) == n_a and int(mix[:, 1].sum()) == 10 - n_a  # round(0.25·10) = 2
    assert s.labels[:4, 0].all() and s.labels[14:, 0].all()
    np.testing.assert_array_equal(s.meta["domains"], np.argmax(s.labels, axis=1))


def test_mix_frames_are_interleaved_not_blocked() -> None:
    s = mix_stream(SOURCE, "mix", len_a=1, len_mix=40, a_share=0.5)
    domains = s.meta["domains"][1:41]
    assert int(np.sum(domains[1:] != domains[:-1])) > 5  # a seeded shuffle, not 20 A then 20 B


def test_frames_follow_their_domain_signature() -> None:
    quiet = DomainSource(noise_std=0.0, amplitude=2.0, dim=8)
    s = aba_stream(quiet, "q", len_a=2, len_b=2)
    x = payload(s)
    sig_a, sig_b = 2.0 * domain_signature("A", 8), 2.0 * domain_signature("B", 8)
    np.testing.assert_allclose(x, np.stack([sig_a, sig_a, sig_b, sig_b, sig_a, sig_a]), rtol=1e-6)
    noisy = payload(aba_stream(DomainSource(dim=8, noise_std=0.5, amplitude=2.0), "n", 400, 1))[:400]
    np.testing.assert_allclose(noisy.mean(axis=0), sig_a, atol=0.1)
    np.testing.assert_allclose(noisy.std(axis=0), 0.5, atol=0.06)


def test_a_longer_b_extends_a_shorter_one() -> None:
    short = payload(aba_stream(SOURCE, "s", len_a=3, len_b=4))
    long = payload(aba_stream(SOURCE, "l", len_a=3, len_b=8))
    np.testing.assert_array_equal(long[:7], short[:7])  # A1 and the first 4 frames of B
    np.testing.assert_array_equal(long[11:], short[7:])  # A2
    again = payload(aba_stream(SOURCE, "s", len_a=3, len_b=4))
    np.testing.assert_array_equal(again, short)


def test_warmup_stream_alternates_domains() -> None:
    w = warmup_stream(SOURCE, 25, block=10)
    assert w.num_frames == 25
    np.testing.assert_array_equal(np.argmax(w.labels, axis=1), [0] * 10 + [1] * 10 + [0] * 5)


def test_bad_segments_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one frame"):
        segment_stream(SOURCE, "x", [Segment("A1", 0, 1.0, "k")])
    with pytest.raises(ValueError, match=r"a_share must lie in \[0, 1\]"):
        segment_stream(SOURCE, "x", [Segment("M", 3, 1.5, "k")])
