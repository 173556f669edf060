"""Tests of the synthetic AVE/LLP-shaped data set (harness/datasets/synthetic.py; seed 004 §6.1.1, §6.1.2)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from streambench.adapters.reference import AVE_EVENT_CLASSES, class_signature
from streambench.harness.datasets.synthetic import (
    VIS_AUDIO_ONLY,
    VIS_AUDIO_VISUAL,
    VIS_BACKGROUND,
    VIS_VISUAL_ONLY,
    SyntheticConfig,
    classes,
    make_streams,
    make_warmup_stream,
)

FPS_SEG = 25  # frames per segment of the default config


def payload_bytes(stream: object) -> bytes:
    frames = list(stream.frames())  # type: ignore[attr-defined]
    return b"".join(f.inputs["audio"].tobytes() + f.inputs["visual"].tobytes() for f in frames)


def stacked(stream: object, modality: str) -> np.ndarray:
    return np.stack([f.inputs[modality] for f in stream.frames()])  # type: ignore[attr-defined]


def runs(values: np.ndarray) -> list[tuple[int, int, int]]:
    """(value, start, stop) of each maximal run of equal values."""
    edges = np.flatnonzero(np.diff(values)) + 1
    starts = np.concatenate([[0], edges])
    stops = np.concatenate([edges, [values.size]])
    return [(int(values[a]), int(a), int(b)) for a, b in zip(starts, stops, strict=True)]


@pytest.fixture(scope="module")
def many() -> list:
    return make_streams(SyntheticConfig(seed=0, num_streams=200))


def test_deterministic_across_calls() -> None:
    config = SyntheticConfig(num_streams=3, seed=7)
    first, second = make_streams(config), make_streams(config)
    for a, b in zip(first, second, strict=True):
        assert a.stream_id == b.stream_id
        assert np.array_equal(a.labels, b.labels)
        assert payload_bytes(a) == payload_bytes(b)
        assert payload_bytes(a) == payload_bytes(a)  # frame_source gives the same frames on every call
    assert payload_bytes(first[0]) != payload_bytes(first[1])
    other_seed = make_streams(SyntheticConfig(num_streams=1, seed=8))[0]
    assert payload_bytes(other_seed) != payload_bytes(first[0])


def test_stream_k_independent_of_num_streams() -> None:
    few = make_streams(SyntheticConfig(seed=0, num_streams=5))
    lots = make_streams(SyntheticConfig(seed=0, num_streams=50))
    assert [s.stream_id for s in few] == ["syn-0000", "syn-0001", "syn-0002", "syn-0003", "syn-0004"]
    assert np.array_equal(few[3].labels, lots[3].labels)
    assert np.array_equal(few[3].meta["visibility"], lots[3].meta["visibility"])
    assert payload_bytes(few[3]) == payload_bytes(lots[3])


def test_shapes_dtypes_and_times() -> None:
    stream = make_streams(SyntheticConfig(seed=0, num_streams=1))[0]
    assert stream.classes == ("background", *AVE_EVENT_CLASSES)
    assert len(stream.classes) == 29
    assert stream.labels.shape == (250, 29) and stream.labels.dtype == bool
    assert stream.segment_length_s == 1.0 and stream.t0 == 0.0
    assert stream.modalities == ("audio", "visual")
    assert np.allclose(stream.frame_times, (np.arange(250) + 1) / 25.0)
    assert stream.duration_s == pytest.approx(10.0)
    frames = list(stream.frames())
    assert [f.index for f in frames] == list(range(250))
    assert frames[0].t == pytest.approx(0.04) and frames[-1].t == pytest.approx(10.0)
    for f in frames[:3]:
        assert f.inputs["audio"].dtype == np.float32 and f.inputs["audio"].shape == (64,)
        assert f.inputs["visual"].dtype == np.float32 and f.inputs["visual"].shape == (128,)
    vis = stream.meta["visibility"]
    assert vis.dtype == np.int8 and vis.shape == (250,)
    assert stream.meta["config"]["noise_std"] == SyntheticConfig().noise_std


def test_other_sizes() -> None:
    config = SyntheticConfig(
        seed=0,
        num_streams=2,
        num_event_classes=3,
        audio_dim=8,
        visual_dim=5,
        fps=10.0,
        segment_length_s=0.5,
        duration_s=4.0,
        max_event_segments=4,
    )
    assert classes(config) == ("background", "event_00", "event_01", "event_02")
    stream = make_streams(config)[1]
    assert stream.labels.shape == (40, 4)
    frame = next(iter(stream.frames()))
    assert frame.inputs["audio"].shape == (8,) and frame.inputs["visual"].shape == (5,)


def test_labels_one_hot_and_background_fraction(many: list) -> None:
    labels = np.concatenate([s.labels for s in many])
    assert np.all(labels.sum(axis=1) == 1)
    background = labels[:, 0].mean()
    assert 0.30 <= background <= 0.45
    for s in many:
        assert np.array_equal(s.meta["visibility"] == VIS_BACKGROUND, s.labels[:, 0])


def test_event_spans_are_whole_segments(many: list) -> None:
    lengths = []
    for s in many:
        per_frame = s.labels.argmax(axis=1)
        segments = per_frame.reshape(10, FPS_SEG)
        assert np.all(segments == segments[:, :1])  # one class per segment
        event_runs = [(c, a, b) for c, a, b in runs(per_frame) if c != 0]
        assert 1 <= len(event_runs) <= 2
        assert len(s.meta["events"]) == len(event_runs)
        for _, a, b in event_runs:
            assert a % FPS_SEG == 0 and b % FPS_SEG == 0
            assert 2 <= (b - a) // FPS_SEG <= 5
            lengths.append((b - a) // FPS_SEG)
    assert set(lengths) == {2, 3, 4, 5}


def test_visibility_mix(many: list) -> None:
    kinds = [e["visibility"] for s in many for e in s.meta["events"]]
    share = {k: kinds.count(k) / len(kinds) for k in ("audio_visual", "audio_only", "visual_only")}
    assert 0.5 <= share["audio_visual"] <= 0.7
    assert 0.12 <= share["audio_only"] <= 0.28
    assert 0.12 <= share["visual_only"] <= 0.28
    for s in many:
        vis = s.meta["visibility"]
        for _, a, b in runs(s.labels.argmax(axis=1)):
            assert len(set(vis[a:b].tolist())) == 1  # one visibility per event span


def test_hidden_modality_carries_background() -> None:
    streams = make_streams(SyntheticConfig(seed=0, num_streams=60))
    checked = {VIS_AUDIO_ONLY: 0, VIS_VISUAL_ONLY: 0, VIS_AUDIO_VISUAL: 0}
    for s in streams:
        vis = s.meta["visibility"]
        audio, visual = stacked(s, "audio"), stacked(s, "visual")
        for c, a, b in runs(s.labels.argmax(axis=1)):
            if c == 0:
                continue
            steady = slice(a + 15, b)  # past the onset ramp
            kind = int(vis[a])
            for modality, payload, dim in (("audio", audio, 64), ("visual", visual, 128)):
                mean = payload[steady].mean(axis=0)
                on_event = float(mean @ class_signature(c, dim, modality))
                on_background = float(mean @ class_signature(0, dim, modality))
                hidden = (kind == VIS_AUDIO_ONLY and modality == "visual") or (
                    kind == VIS_VISUAL_ONLY and modality == "audio"
                )
                if hidden:
                    assert on_background > 0.7 and on_event < 0.4
                else:
                    assert on_event > 0.7 and on_background < 0.4
            checked[kind] += 1
    assert all(n >= 3 for n in checked.values()), checked


def test_noise_free_payloads_and_onset_ramp() -> None:
    config = SyntheticConfig(seed=0, num_streams=1, noise_std=0.0, amplitude=2.0, onset_ramp_s=0.4)
    stream = make_streams(config)[0]
    audio = stacked(stream, "audio")
    per_frame = stream.labels.argmax(axis=1)
    bg_sig, event = class_signature(0, 64, "audio"), stream.meta["events"][0]
    c, start = event["class_index"], event["start_frame"]
    assert per_frame[start] == c
    sig = class_signature(c, 64, "audio")
    if event["visibility"] == "visual_only":
        assert np.allclose(audio[start], 2.0 * bg_sig, atol=1e-6)
    else:
        ramp_frames = 10  # 0.4 s at 25 frames/s
        assert np.allclose(audio[start], 2.0 * (sig / 11 + bg_sig * 10 / 11), atol=1e-6)
        assert np.allclose(audio[start + ramp_frames], 2.0 * sig, atol=1e-6)
    background = np.flatnonzero(per_frame == 0)
    assert np.allclose(audio[background], 2.0 * bg_sig, atol=1e-6)


def test_warmup_stream_is_disjoint() -> None:
    config = SyntheticConfig(seed=0, num_streams=60)
    warm = make_warmup_stream(config, 600)
    assert warm.stream_id == "syn-warmup"
    assert warm.num_frames >= 600 and warm.num_frames % 250 == 0
    frames = list(warm.frames())
    assert [f.index for f in frames] == list(range(warm.num_frames))
    assert np.all(np.diff(warm.frame_times) > 0)
    first_block = payload_bytes(warm)[: len(payload_bytes(make_streams(config)[0]))]
    for s in make_streams(config):
        assert payload_bytes(s) != first_block
    assert make_warmup_stream(config, 1).num_frames == 250
    with pytest.raises(ValueError, match="num_frames"):
        make_warmup_stream(config, 0)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"segment_length_s": 0.03}, "segment_length_s"),
        ({"duration_s": 10.5}, "duration_s"),
        ({"max_event_segments": 11}, ""),  # checked across fields: the message names them
        ({"duration_s": 2.0, "max_event_segments": 5}, ""),  # a set value that does not fit in 2 segments
        ({"min_event_segments": 4, "max_event_segments": 3}, "max_event_segments"),
        ({"num_streams": 0}, "num_streams"),
        ({"noise_std": -1.0}, "noise_std"),
    ],
)
def test_config_errors_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        SyntheticConfig(**kwargs)
    assert info.value.errors()[0]["loc"] == ((field,) if field else ())
    assert (field or "max_event_segments") in str(info.value)


def test_config_rejects_unknown_and_bad_mix() -> None:
    with pytest.raises(ValidationError, match="noise"):
        SyntheticConfig(noise=0.1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="visibility"):
        SyntheticConfig(visibility={"audio_visual": 0, "audio_only": 0, "visual_only": 0})


def test_noise_correlation_is_an_ar1_process() -> None:
    signal = make_streams(SyntheticConfig(seed=0, num_streams=1, noise_std=1.0, amplitude=1e-9))[0]
    correlated = make_streams(
        SyntheticConfig(seed=0, num_streams=1, noise_std=1.0, amplitude=1e-9, noise_correlation=0.8)
    )[0]
    for stream, rho in ((signal, 0.0), (correlated, 0.8)):
        audio = np.stack([f.inputs["audio"] for f in stream.frames()])  # [T, D], pure noise
        lag1 = np.mean(audio[1:] * audio[:-1]) / np.mean(audio * audio)
        assert lag1 == pytest.approx(rho, abs=0.03)
        assert np.var(audio) == pytest.approx(1.0, abs=0.05)  # stationary: unit variance


def test_a_short_stream_gets_shorter_default_events_and_a_set_value_is_still_checked() -> None:
    """Issue 17: `--duration 2` was refused (the default max_event_segments 5 exceeds 2 segments)."""
    short = SyntheticConfig(seed=0, duration_s=2.0, num_streams=2)
    assert (short.min_event_segments, short.max_event_segments) == (2, 2)
    assert SyntheticConfig(duration_s=1.0).max_event_segments == 1
    assert SyntheticConfig.model_validate(short.model_dump()) == short  # a saved config reads back
    assert len(make_streams(short)) == 2
    with pytest.raises(ValueError, match=r"max_event_segments \(5\) exceeds"):
        SyntheticConfig(duration_s=2.0, max_event_segments=5)


def test_an_unset_seed_builds_nothing_and_the_warmup_reveals_no_seed() -> None:
    """Issue 24: the seed decides the test set; unset, it is drawn per run (never a silent default 0), and
    the warm-up a model sees unscored is the same whatever the (possibly secret) seed."""
    unset = SyntheticConfig(num_streams=2, duration_s=2.0)
    assert unset.seed is None
    with pytest.raises(ValueError, match="seed is unset"):
        make_streams(unset)
    seeded = [unset.model_copy(update={"seed": seed}) for seed in (0, 12345)]
    assert payload_bytes(make_streams(seeded[0])[0]) != payload_bytes(make_streams(seeded[1])[0])
    warm = [payload_bytes(make_warmup_stream(config, 60)) for config in (*seeded, unset)]
    assert warm[0] == warm[1] == warm[2]


def test_seeded_draws_a_secret_seed_keeps_a_given_one_and_leaves_files_alone() -> None:
    from streambench.harness.datasets.audio_files import AudioFilesConfig
    from streambench.harness.datasets.catalog import SECRET_SEED_BITS, given_seed_kind, seeded, withheld

    unset = SyntheticConfig(num_streams=2, duration_s=2.0)
    (first, kind), (second, _) = seeded(unset), seeded(unset)
    assert kind == "secret" and given_seed_kind(unset) is None
    assert isinstance(first, SyntheticConfig) and isinstance(second, SyntheticConfig)
    assert first.seed is not None and second.seed is not None and first.seed != second.seed
    assert 0 <= first.seed < 2**SECRET_SEED_BITS
    assert first.model_copy(update={"seed": None}) == unset  # only the seed was fixed
    assert seeded(unset, secret=42) == (unset.model_copy(update={"seed": 42}), "secret")
    given = unset.model_copy(update={"seed": 0})
    assert seeded(given) == (given, "public") and seeded(given, secret=42) == (given, "public")
    assert given_seed_kind(given) == "public" and withheld(first) == unset
    files = AudioFilesConfig(directory="x")
    assert seeded(files) == (files, None) and withheld(files) == files
