"""Tests of harness/datasets/perturb.py (DESIGN.md "Perturbations", seed 004 §6.2.2 (3))."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.perturb import (
    AudioDelay,
    Jitter,
    MissingModality,
    describe,
    parse_perturbations,
    perturb,
)
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams

T = 250  # frames of a default synthetic stream (10 s at 25 fps)


@pytest.fixture(scope="module")
def streams() -> list[Stream]:
    return make_streams(SyntheticConfig(seed=0, num_streams=3))


def frames_of(stream: Stream) -> list[Frame]:
    return list(stream.frames())


def payload_bytes(stream: Stream) -> bytes:
    out = []
    for f in stream.frames():
        for m in stream.modalities:
            p = f.inputs[m]
            out.append(b"<none>" if p is None else np.asarray(p).tobytes())
        out.append(repr(sorted((f.timestamps or {}).items())).encode())
    return b"".join(out)


def missing_steps(stream: Stream, modality: str) -> np.ndarray:
    return np.array([f.inputs[modality] is None for f in stream.frames()])


def linear_stream(num_frames: int = 20, fps: float = 25.0) -> Stream:
    """Payload value = capture time (and 2x it), so interpolation is checkable exactly."""
    times = np.arange(1, num_frames + 1, dtype=np.float64) / fps

    def source() -> list[Frame]:
        return [
            Frame(
                index=i,
                t=float(t),
                inputs={"audio": np.array([t, 2 * t]), "visual": np.array([t, -t], dtype=np.float64)},
            )
            for i, t in enumerate(times)
        ]

    return Stream(
        stream_id="lin",
        classes=("bg",),
        labels=np.zeros((num_frames, 1), dtype=bool),
        frame_times=times,
        frame_source=source,
        modalities=("audio", "visual"),
    )


# ------------------------------------------------------------------------------------- missing


@pytest.mark.parametrize("rate", [0.0, 0.1, 0.3, 0.5, 0.123, 1.0])
def test_missing_realised_fraction_is_exact(streams: list[Stream], rate: float) -> None:
    out = perturb(streams[0], [MissingModality(modality="visual", rate=rate)])
    hit = missing_steps(out, "visual")
    expected = math.floor(rate * T + 0.5)
    assert hit.sum() == expected
    assert hit.mean() == expected / T
    assert out.meta["perturbations"][0]["count"] == expected


def test_missing_modes_and_other_modality_untouched(streams: list[Stream]) -> None:
    clean = frames_of(streams[0])
    none = frames_of(perturb(streams[0], [MissingModality(modality="visual", rate=0.3, mode="none")]))
    zero = frames_of(perturb(streams[0], [MissingModality(modality="visual", rate=0.3, mode="zero")]))
    hit = np.array([f.inputs["visual"] is None for f in none])
    assert hit.sum() == 75
    for c, n, z, h in zip(clean, none, zero, hit, strict=True):
        assert np.array_equal(n.inputs["audio"], c.inputs["audio"])
        assert np.array_equal(z.inputs["audio"], c.inputs["audio"])
        assert n.index == c.index and n.t == c.t
        if h:
            assert z.inputs["visual"].shape == c.inputs["visual"].shape
            assert z.inputs["visual"].dtype == c.inputs["visual"].dtype
            assert not np.any(z.inputs["visual"])
        else:
            assert np.array_equal(n.inputs["visual"], c.inputs["visual"])
            assert np.array_equal(z.inputs["visual"], c.inputs["visual"])
    # same positions in both modes (same seed)
    zero_hit = np.array([not np.any(f.inputs["visual"]) for f in zero])
    assert np.array_equal(zero_hit, hit)


def test_missing_seeded(streams: list[Stream]) -> None:
    def run(seed: int, index: int = 0) -> Stream:
        p = MissingModality(modality="audio", rate=0.2, seed=seed)
        return perturb(streams[0], [p], stream_index=index)

    assert payload_bytes(run(7)) == payload_bytes(run(7))
    out = run(7)
    assert payload_bytes(out) == payload_bytes(out)  # frame_source is re-iterable
    assert not np.array_equal(missing_steps(run(7), "audio"), missing_steps(run(8), "audio"))
    assert not np.array_equal(missing_steps(run(7, 0), "audio"), missing_steps(run(7, 1), "audio"))


def test_missing_is_lazy(streams: list[Stream]) -> None:
    out = perturb(streams[1], [MissingModality(modality="audio", rate=0.5)])
    first = next(out.frames())
    assert first.index == 0


# --------------------------------------------------------------------------------- audio delay


@pytest.mark.parametrize(
    ("delay_ms", "shift"), [(0.0, 0), (19.0, 0), (20.0, 1), (50.0, 1), (100.0, 3), (200.0, 5)]
)
def test_audio_delay_exact_shift(streams: list[Stream], delay_ms: float, shift: int) -> None:
    clean = frames_of(streams[0])
    out = perturb(streams[0], [AudioDelay(delay_ms=delay_ms)])
    record = out.meta["perturbations"][0]
    assert record["shift_frames"] == shift
    assert record["resolution_ms"] == pytest.approx(40.0)
    assert record["effective_delay_ms"] == pytest.approx(40.0 * shift)
    delayed = frames_of(out)
    for i, (c, d) in enumerate(zip(clean, delayed, strict=True)):
        assert np.array_equal(d.inputs["visual"], c.inputs["visual"])
        if shift == 0:
            assert d.inputs["audio"].tobytes() == c.inputs["audio"].tobytes()
            assert d.timestamps is None
        elif i < shift:
            assert d.inputs["audio"] is None
            assert d.timestamps is not None
            assert d.timestamps["audio"] == pytest.approx(c.t - shift * 0.04)
        else:
            assert d.inputs["audio"].tobytes() == clean[i - shift].inputs["audio"].tobytes()
            assert d.timestamps is not None
            assert d.timestamps["audio"] == clean[i - shift].t
            assert "visual" not in d.timestamps


def test_audio_delay_50ms_at_25fps(streams: list[Stream]) -> None:
    out = perturb(streams[2], [AudioDelay(delay_ms=50)])
    record = out.meta["perturbations"][0]
    assert record["kind"] == "audio_delay"
    assert record["delay_ms"] == 50
    assert record["shift_frames"] == 1
    assert record["effective_delay_ms"] == pytest.approx(40.0)
    assert record["resolution_ms"] == pytest.approx(40.0)


def test_audio_delay_identity_bit_for_bit(streams: list[Stream]) -> None:
    assert payload_bytes(perturb(streams[0], [AudioDelay(delay_ms=0)])) == payload_bytes(streams[0])


# -------------------------------------------------------------------------------------- jitter


@pytest.mark.parametrize("delta_ms", [10.0, 20.0, 50.0])
def test_jitter_timestamps_within_delta(streams: list[Stream], delta_ms: float) -> None:
    out = frames_of(perturb(streams[0], [Jitter(delta_ms=delta_ms, seed=3)]))
    assert len(out) == T
    offsets = []
    for f in out:
        assert f.timestamps is not None
        for m in ("audio", "visual"):
            offsets.append(f.timestamps[m] - f.t)
            assert f.inputs[m].dtype == np.float32
    offsets_arr = np.array(offsets)
    assert np.all(np.abs(offsets_arr) <= delta_ms / 1000 + 1e-12)
    assert offsets_arr.std() > delta_ms / 1000 / 3  # actually jittered, roughly uniform
    # the two modalities get independent draws
    a = np.array([f.timestamps["audio"] for f in out])  # type: ignore[index]
    v = np.array([f.timestamps["visual"] for f in out])  # type: ignore[index]
    assert not np.array_equal(a, v)


def test_jitter_zero_is_identity(streams: list[Stream]) -> None:
    assert payload_bytes(perturb(streams[0], [Jitter(delta_ms=0)])) == payload_bytes(streams[0])


@pytest.mark.parametrize("delta_ms", [15.0, 30.0, 100.0])
def test_jitter_interpolates(delta_ms: float) -> None:
    stream = linear_stream()
    first, last = stream.frame_times[0], stream.frame_times[-1]
    out = frames_of(perturb(stream, [Jitter(delta_ms=delta_ms, seed=1)]))
    for f in out:
        assert f.timestamps is not None
        for m, sign in (("audio", 2.0), ("visual", -1.0)):
            s = f.timestamps[m]
            assert abs(s - f.t) <= delta_ms / 1000 + 1e-12
            expected = min(max(s, first), last)  # clamped at the ends
            np.testing.assert_allclose(f.inputs[m], [expected, sign * expected], rtol=0, atol=1e-12)


def test_jitter_subset_of_modalities() -> None:
    stream = linear_stream()
    clean = frames_of(stream)
    out = frames_of(perturb(stream, [Jitter(delta_ms=20, modalities=("visual",), seed=2)]))
    for c, f in zip(clean, out, strict=True):
        assert f.timestamps is not None and set(f.timestamps) == {"visual"}
        assert np.array_equal(f.inputs["audio"], c.inputs["audio"])


def test_jitter_seeded(streams: list[Stream]) -> None:
    def run(seed: int, index: int = 0) -> bytes:
        return payload_bytes(perturb(streams[1], [Jitter(delta_ms=20, seed=seed)], stream_index=index))

    assert run(5) == run(5)
    assert run(5) != run(6)
    assert run(5, 0) != run(5, 1)


def test_jitter_after_missing_keeps_none_where_weighted() -> None:
    stream = linear_stream()
    out = frames_of(
        perturb(stream, [MissingModality(modality="audio", rate=0.5, seed=4), Jitter(delta_ms=10, seed=4)])
    )
    for f in out:
        payload = f.inputs["audio"]
        if payload is not None:
            assert f.timestamps is not None
            s = min(max(f.timestamps["audio"], stream.frame_times[0]), stream.frame_times[-1])
            np.testing.assert_allclose(payload, [s, 2 * s], atol=1e-12)


def test_jitter_after_delay_uses_delayed_capture_times() -> None:
    stream = linear_stream(num_frames=30)
    out = frames_of(perturb(stream, [AudioDelay(delay_ms=80), Jitter(delta_ms=15, seed=9)]))
    for f in out[3:]:  # the first 2 are missing, the 3rd may interpolate towards a missing one
        assert f.timestamps is not None
        s = f.timestamps["audio"]
        assert abs(s - (f.t - 0.08)) <= 0.015 + 1e-12
        if f.inputs["audio"] is not None:
            np.testing.assert_allclose(f.inputs["audio"], [s, 2 * s], atol=1e-12)


def test_jitter_rendered_keeps_each_frames_noise_and_displaces_the_signal() -> None:
    """With a sensor model, a jittered frame = signal at the displaced time + the frame's own noise: the
    noise level is the clean stream's (interpolation would shrink it), the signal is the clean signal."""
    config = SyntheticConfig(seed=0, num_streams=1, noise_std=0.5)
    (stream,) = make_streams(config)
    quiet = make_streams(config.model_copy(update={"noise_std": 0.0}))[0]  # the same signal, no noise
    signal = np.stack([f.inputs["audio"] for f in quiet.frames()]).astype(np.float64)
    clean = np.stack([f.inputs["audio"] for f in stream.frames()]).astype(np.float64)
    noise = clean - signal
    jittered = perturb(stream, [Jitter(delta_ms=20, seed=7)])
    assert jittered.meta["perturbations"][0]["method"] == "rendered"
    frames = frames_of(jittered)
    out = np.stack([f.inputs["audio"] for f in frames]).astype(np.float64)
    for i, f in enumerate(frames):
        assert f.timestamps is not None
        position = min(max(f.timestamps["audio"] * config.fps - 1.0, 0.0), T - 1.0)
        k = min(math.floor(position), T - 2)
        w = position - k
        expected = (1 - w) * signal[k] + w * signal[k + 1] + noise[i]
        np.testing.assert_allclose(out[i], expected, atol=1e-5)
    # the noise level is unchanged (an average of two independent frames would be ~0.79x at w = 1/2)
    residual = out - np.stack([f.inputs["audio"] for f in quiet.frames()])  # signal moved by <= half a frame
    assert abs(noise.std() - 0.5) < 0.01
    assert residual.std() > 0.97 * noise.std()


def test_jitter_capture_at_own_time_is_the_payload() -> None:
    (stream,) = make_streams(SyntheticConfig(seed=0, num_streams=1))
    assert stream.capture is not None
    for i, f in enumerate(stream.frames()):
        for m in stream.modalities:
            assert stream.capture(m, i, f.t).tobytes() == f.inputs[m].tobytes()
    with pytest.raises(ValueError, match="no modality 'depth'"):
        stream.capture("depth", 0, 0.04)
    with pytest.raises(ValueError, match="frame slot 250 outside"):
        stream.capture("audio", 250, 0.04)


def test_jitter_interpolates_when_not_first(streams: list[Stream]) -> None:
    out = perturb(streams[0], [MissingModality(modality="audio", rate=0.1), Jitter(delta_ms=10)])
    assert [r.get("method") for r in out.meta["perturbations"]] == [None, "interpolated"]
    nested = perturb(perturb(streams[0], [AudioDelay(delay_ms=0)]), [Jitter(delta_ms=10)])
    assert nested.meta["perturbations"][-1]["method"] == "interpolated"


# -------------------------------------------------------------------------------- composition


def test_composition_equals_sequential(streams: list[Stream]) -> None:
    missing = MissingModality(modality="audio", rate=0.3, mode="zero", seed=11)
    delay = AudioDelay(delay_ms=100)
    both = perturb(streams[0], [missing, delay], stream_index=2)
    nested = perturb(perturb(streams[0], [missing], stream_index=2), [delay], stream_index=2)
    assert payload_bytes(both) == payload_bytes(nested)
    assert both.meta["perturbations"] == nested.meta["perturbations"]
    kinds = [r["kind"] for r in both.meta["perturbations"]]
    assert kinds == ["missing", "audio_delay"]
    # explicit: frame i audio = missing-perturbed frame i-3 audio
    only_missing = frames_of(perturb(streams[0], [missing], stream_index=2))
    combined = frames_of(both)
    for i in range(3, T):
        assert combined[i].inputs["audio"].tobytes() == only_missing[i - 3].inputs["audio"].tobytes()
    assert all(f.inputs["audio"] is None for f in combined[:3])


def test_stream_fields_preserved(streams: list[Stream]) -> None:
    s = streams[0]
    out = perturb(s, [Jitter(delta_ms=10)])
    assert out is not s
    assert out.stream_id == s.stream_id and out.classes == s.classes and out.modalities == s.modalities
    assert np.array_equal(out.labels, s.labels) and np.array_equal(out.frame_times, s.frame_times)
    assert out.meta["config"] == s.meta["config"]
    assert "perturbations" not in s.meta
    assert out.meta["perturbations"] == [
        {"kind": "jitter", "delta_ms": 10.0, "modalities": None, "seed": 0, "method": "rendered"}
    ]
    assert out.capture is None  # its payloads are no longer the sensor's


# -------------------------------------------------------------------------- labels, validation


def test_describe() -> None:
    assert describe([MissingModality(modality="visual", rate=0.3)]) == "Missing-Rate@30% (visual, none)"
    assert describe(AudioDelay(delay_ms=100)) == "Audio-Delay@100ms"
    assert describe([Jitter(delta_ms=20)]) == "Jitter@±20ms"
    assert describe([]) == "clean"
    assert (
        describe([MissingModality(modality="audio", rate=0.1, mode="zero"), AudioDelay(delay_ms=50)])
        == "Missing-Rate@10% (audio, zero) + Audio-Delay@50ms"
    )


def test_parse_discriminated() -> None:
    parsed = parse_perturbations(
        [{"kind": "missing", "modality": "visual", "rate": 0.2}, {"kind": "jitter", "delta_ms": 5}]
    )
    assert isinstance(parsed[0], MissingModality) and isinstance(parsed[1], Jitter)
    with pytest.raises(ValidationError, match="kind"):
        parse_perturbations([{"kind": "nope"}])


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: MissingModality(modality="audio", rate=1.5), "rate"),
        (lambda: MissingModality(modality="audio", rate=0.1, mode="drop"), "mode"),
        (lambda: MissingModality(modality="audio", rate=0.1, extra=1), "extra"),  # type: ignore[call-arg]
        (lambda: AudioDelay(delay_ms=-1), "delay_ms"),
        (lambda: Jitter(delta_ms=-5), "delta_ms"),
        (lambda: Jitter(delta_ms=5, seed=-1), "seed"),
    ],
)
def test_validation_names_field(build: object, field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        build()  # type: ignore[operator]


@pytest.mark.parametrize(
    "p",
    [
        MissingModality(modality="depth", rate=0.1),
        AudioDelay(delay_ms=40, modality="depth"),
        Jitter(delta_ms=10, modalities=("audio", "depth")),
    ],
)
def test_unknown_modality(streams: list[Stream], p: object) -> None:
    with pytest.raises(ValueError, match=r"syn-0000.*'depth'"):
        perturb(streams[0], [p])  # type: ignore[list-item]
