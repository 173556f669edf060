"""The synthetic spoof data set (harness/datasets/spoof.py): seed 002's cut_length and augmentations, and
the labelled real/fake utterance streams."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from streambench.adapters.contract import Stream
from streambench.harness.datasets.catalog import make_streams, make_warmup_stream
from streambench.harness.datasets.spoof import (
    GainAugmentation,
    NoiseAugmentation,
    SpoofConfig,
    augment,
    cut_length,
    render_utterance,
    streams,
    warmup_stream,
)
from streambench.harness.execution.config import RunConfig

SMALL = SpoofConfig(seed=0, num_utterances=8, min_duration_s=1.0, max_duration_s=3.0, cut_length_s=2.0)

# ---------------------------------------------------------------------------------------------- cut_length


def test_cut_length_pads_by_repetition() -> None:
    # seed 002: repeats = int(cut_length / n) + 1; audio.repeat(1, repeats)[:, :cut_length]
    assert cut_length(np.array([1, 2, 3]), 7).tolist() == [1, 2, 3, 1, 2, 3, 1]
    assert cut_length(np.array([1, 2, 3]), 6).tolist() == [1, 2, 3, 1, 2, 3]  # repeats = 3, then cut
    assert cut_length(np.array([5]), 3).tolist() == [5, 5, 5]
    batch = np.array([[1, 2], [3, 4]])  # [B, T], as in the seed: every row padded on the last axis
    assert cut_length(batch, 5).tolist() == [[1, 2, 1, 2, 1], [3, 4, 3, 4, 3]]


def test_cut_length_truncates_and_keeps() -> None:
    x = np.arange(10)
    assert cut_length(x, 4).tolist() == [0, 1, 2, 3]
    assert cut_length(np.array([[1, 2, 3], [4, 5, 6]]), 2).tolist() == [[1, 2], [4, 5]]
    assert cut_length(x, 10).tolist() == x.tolist()
    assert cut_length(x, None) is x
    with pytest.raises(ValueError, match=">= 1 sample"):
        cut_length(x, 0)
    with pytest.raises(ValueError, match="empty audio"):
        cut_length(np.array([]), 3)


# ---------------------------------------------------------------------------------------------- augment

GAIN_6DB = (GainAugmentation(gain_db_min=6.0, gain_db_max=6.0),)


def test_augmentations_touch_only_the_fakes() -> None:
    audio = np.arange(1.0, 13.0).reshape(4, 3)
    labels = np.array([1, 0, 1, 0])
    out = augment(audio, labels, GAIN_6DB, False, np.random.default_rng(0))
    gain = 10 ** (6 / 20)
    np.testing.assert_array_equal(out[[0, 2]], audio[[0, 2]])  # reals untouched
    np.testing.assert_allclose(out[[1, 3]], gain * audio[[1, 3]])
    assert out is not audio and audio[1, 0] == 4.0  # the input is not modified


def test_manipulation_on_real_touches_all() -> None:
    audio = np.arange(1.0, 13.0).reshape(4, 3)
    labels = np.array([1, 0, 1, 0])
    out = augment(audio, labels, GAIN_6DB, True, np.random.default_rng(0))
    np.testing.assert_allclose(out, 10 ** (6 / 20) * audio)


def test_noise_augmentation_is_seeded_and_at_its_snr() -> None:
    rng = np.random.default_rng(1)
    audio = rng.standard_normal((4, 20_000))
    labels = np.array([0, 1, 0, 1])
    noise = (NoiseAugmentation(snr_db_min=20.0, snr_db_max=20.0),)
    a = augment(audio, labels, noise, False, np.random.default_rng(7))
    b = augment(audio, labels, noise, False, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a[[1, 3]], audio[[1, 3]])
    added = a[[0, 2]] - audio[[0, 2]]
    snr_db = 10 * np.log10(np.mean(audio[[0, 2]] ** 2, axis=1) / np.mean(added**2, axis=1))
    np.testing.assert_allclose(snr_db, 20.0, atol=0.2)  # 20 000 samples: the SNR to within 0.2 dB
    c = augment(audio, labels, noise, False, np.random.default_rng(8))
    assert not np.array_equal(a, c)


def test_no_augmentation_is_a_copy() -> None:
    audio = np.ones((2, 3))
    out = augment(audio, np.array([0, 1]), (), True, np.random.default_rng(0))
    np.testing.assert_array_equal(out, audio)


# ---------------------------------------------------------------------------------------------- streams


def _audio(stream: Stream) -> np.ndarray:
    return np.concatenate([f.inputs["audio"] for f in stream.frames()])


def test_streams_are_labelled_utterances() -> None:
    got = streams(SpoofConfig(seed=0, num_utterances=10))
    assert [s.stream_id for s in got] == [f"spoof-{k:04d}" for k in range(10)]
    assert sum(s.meta["utterance_label"] for s in got) == 5  # real_fraction 0.5
    for s in got:
        assert s.classes == ("fake", "real")
        label = s.meta["utterance_label"]
        assert s.labels[:, label].all() and not s.labels[:, 1 - label].any()
        assert s.num_frames == 300  # cut_length 6 s at 50 frames/s
        assert s.frame_times[0] == pytest.approx(0.02) and s.frame_times[-1] == pytest.approx(6.0)
        assert (s.meta["sample_rate_hz"], s.meta["frame_samples"]) == (16000, 320)
    first = next(iter(got[0].frames()))
    assert first.inputs["audio"].shape == (320,) and first.inputs["audio"].dtype == np.float32
    np.testing.assert_array_equal(_audio(got[3]), _audio(streams(SpoofConfig(seed=0, num_utterances=10))[3]))
    other_seed = streams(SpoofConfig(num_utterances=10, seed=1))[3]
    assert not np.array_equal(_audio(got[3]), _audio(other_seed))


def test_short_utterances_are_repeated_long_ones_truncated() -> None:
    got = streams(SMALL)
    cut = 32_000
    short = [s for s in got if s.meta["raw_samples"] < cut]
    long = [s for s in got if s.meta["raw_samples"] > cut]
    assert short and long
    for s in short:
        n = s.meta["raw_samples"]
        audio = _audio(s)
        assert audio.size == cut and s.meta["padded_samples"] == 0
        np.testing.assert_array_equal(audio[n:cut], audio[: cut - n])  # padded by repetition
    uncut = {s.stream_id: s for s in streams(SMALL.model_copy(update={"cut_length_s": None}))}
    for s in long:  # truncated: the first 2 s of the raw utterance
        np.testing.assert_array_equal(_audio(s), _audio(uncut[s.stream_id])[:cut])
    for s in uncut.values():
        n = s.meta["raw_samples"]
        assert s.num_frames == -(-n // 320) and s.meta["padded_samples"] == s.num_frames * 320 - n
        assert not _audio(s)[n:].any()  # the last frame zero-padded


def test_fakes_carry_the_artefact() -> None:
    config = SpoofConfig(seed=0, num_utterances=40)
    band: dict[int, list[float]] = {0: [], 1: []}
    for s in streams(config):
        spectrum = np.abs(np.fft.rfft(_audio(s).reshape(-1, 320) * np.hanning(320), axis=1)) ** 2
        band[s.meta["utterance_label"]].append(float(spectrum[:, 119:122].sum() / spectrum[:, 100:118].sum()))
    # 3 bins around 6 kHz against 18 neighbouring ones: about 3/18 in noise, higher with the tone
    assert np.median(band[1]) == pytest.approx(3 / 18, rel=0.1)
    assert np.median(band[0]) > 1.2 * np.median(band[1])


def test_data_set_augments_only_fakes_unless_asked() -> None:
    plain = streams(SMALL)
    noisy = SMALL.model_copy(update={"augmentations": (NoiseAugmentation(),)})
    for base, aug in zip(plain, streams(noisy), strict=True):
        real = base.meta["utterance_label"] == 1
        assert aug.meta["augmented"] is (not real)
        assert np.array_equal(_audio(base), _audio(aug)) is real
    everyone = noisy.model_copy(update={"manipulation_on_real": True})
    for base, aug in zip(plain, streams(everyone), strict=True):
        assert aug.meta["augmented"] is True
        assert not np.array_equal(_audio(base), _audio(aug))


def test_render_is_cut_then_augmented() -> None:
    gain = SMALL.model_copy(update={"augmentations": GAIN_6DB, "manipulation_on_real": True})
    np.testing.assert_allclose(
        render_utterance(gain, 2, True), 10 ** (6 / 20) * render_utterance(SMALL, 2, True), rtol=1e-6
    )
    assert render_utterance(SMALL, 2, True).size == 32_000


def test_warmup_and_catalog() -> None:
    warm = warmup_stream(SMALL, 130)
    assert warm.num_frames == 130 and warm.meta["utterance_label"] == 1
    config = RunConfig.model_validate({"data": {"kind": "synthetic_spoof", "num_utterances": 4, "seed": 0}})
    assert isinstance(config.data, SpoofConfig)
    assert [s.stream_id for s in make_streams(config.data)] == [f"spoof-{k:04d}" for k in range(4)]
    assert make_warmup_stream(config.data, 100).num_frames == 100


def test_config_is_validated() -> None:
    with pytest.raises(ValidationError, match="max_duration_s"):
        SpoofConfig(min_duration_s=3.0, max_duration_s=2.0)
    with pytest.raises(ValidationError, match="Nyquist"):
        SpoofConfig(artefact_hz=9000.0)
    with pytest.raises(ValidationError, match="kind"):
        SpoofConfig.model_validate({"kind": "synthetic"})
