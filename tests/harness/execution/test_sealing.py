"""Sealed frames (issue 15, item 1): no payload an adapter receives reaches data of a later frame, and
none can be written into, for every data set kind and for perturbed, occluded and paced streams.

The data sets hand out payloads as views of whole-stream arrays (the test shows it: the raw frames do
reach the future), so the protection under test is the engine's sealing, not an accident of the data.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streambench.adapters.contract import (
    AdapterInfo,
    Frame,
    Prediction,
    PredictOutput,
    Stream,
    StreamingAdapter,
)
from streambench.adapters.null import NullOptions
from streambench.harness.datasets.catalog import make_streams, make_warmup_stream
from streambench.harness.datasets.domains import DomainSource, aba_stream
from streambench.harness.datasets.perturb import perturb
from streambench.harness.datasets.spoof import SpoofConfig
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.execution.adapter_errors import AdapterCallError
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.sealing import seal_frames
from streambench.harness.runs.causality.protocol import occlude
from streambench.protocols.perturbations import AudioDelay, Jitter, MissingModality

SYNTHETIC = SyntheticConfig(seed=0, num_streams=2, duration_s=5.0)


class Probe(StreamingAdapter):
    """Keeps every payload it is handed; answers uniform scores."""

    Options = NullOptions

    def __init__(self, classes: tuple[str, ...], modalities: tuple[str, ...]) -> None:
        super().__init__(NullOptions(classes=classes))
        self._info = AdapterInfo(name="probe", classes=classes, modalities=modalities)
        self._scores = np.full(len(classes), 1.0 / len(classes), dtype=np.float32)
        self.payloads: list[tuple[int, str, Any]] = []

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        return None

    def predict(self, frame: Frame) -> PredictOutput:
        self.payloads.extend((frame.index, name, value) for name, value in frame.inputs.items())
        return Prediction(scores=self._scores)


class PeekAhead(Probe):
    """The outside tester's cheat: follows ``.base`` from the frame's audio to the whole-stream array
    and reads the next frame's row from it."""

    def __init__(self, classes: tuple[str, ...], modalities: tuple[str, ...]) -> None:
        super().__init__(classes, modalities)
        self.peeked = 0

    def predict(self, frame: Frame) -> PredictOutput:
        payload = frame.inputs.get("audio")
        owner = getattr(payload, "base", None)
        if isinstance(owner, np.ndarray) and owner.ndim == 2 and owner.shape[0] > frame.index + 1:
            self.peeked += 1  # a view of the whole stream: row index + 1 is the future
        return super().predict(frame)


class WritesItsInput(Probe):
    def predict(self, frame: Frame) -> PredictOutput:
        frame.inputs["audio"][:] = 0.0  # normalising "in place"
        return super().predict(frame)


def _owners(array: np.ndarray) -> Iterator[object]:
    """Everything a payload's attributes lead to: the ``.base`` chain and the buffer's owner."""
    node: object = array
    while isinstance(node, np.ndarray) and node.base is not None:
        node = node.base
        yield node
    yield memoryview(array).obj


def check_sealed(payloads: list[tuple[int, str, Any]]) -> int:
    """Each array payload owns exactly its own data and is read-only; returns how many were checked."""
    checked = 0
    for index, name, value in payloads:
        if not isinstance(value, np.ndarray):
            assert value is None, f"frame {index} {name}: payload of type {type(value).__name__}"
            continue
        where = f"frame {index} {name}"
        assert value.base is None and value.flags.owndata, f"{where}: a view of {type(value.base).__name__}"
        assert not value.flags.writeable, f"{where}: writeable"
        assert all(owner is value for owner in _owners(value)), f"{where}: reaches another object"
        data, _ = value.__array_interface__["data"]
        assert memoryview(value).nbytes == value.nbytes == value.size * value.itemsize, where
        assert data != 0, where
        checked += 1
    return checked


def _audio_files(tmp_path: Path) -> list[Stream]:
    soundfile = pytest.importorskip("soundfile")
    from streambench.harness.datasets.audio_files import AudioFilesConfig, AudioLabelPair

    samples = (np.arange(16000, dtype=np.float32) / 16000).astype(np.float32)
    soundfile.write(str(tmp_path / "a.wav"), samples, 16000, subtype="FLOAT")
    (tmp_path / "a.txt").write_text("0.2\t0.5\tspeech\n")
    config = AudioFilesConfig.model_validate(
        {
            "files": [AudioLabelPair(audio=tmp_path / "a.wav", labels=tmp_path / "a.txt")],
            "frame_samples": 1600,
        }
    )
    return make_streams(config)


def _ave(tmp_path: Path) -> list[Stream]:
    h5py = pytest.importorskip("h5py")
    from streambench.harness.datasets.ave import AveConfig

    (tmp_path / "Annotations.txt").write_text(
        "Category&VideoID&Quality&StartTime&EndTime\nBark&v1&good&2&4\n"
    )
    rng = np.random.default_rng(0)
    for name, shape in (("audio_feature.h5", (1, 10, 128)), ("visual_feature.h5", (1, 10, 7, 7, 512))):
        with h5py.File(tmp_path / name, "w") as handle:
            handle.create_dataset("avadataset", data=rng.standard_normal(shape).astype(np.float32))
    config = AveConfig(
        annotations=tmp_path / "Annotations.txt",
        audio_features=tmp_path / "audio_feature.h5",
        visual_features=tmp_path / "visual_feature.h5",
    )
    return make_streams(config)


def _kinds(tmp_path: Path) -> dict[str, list[Stream]]:
    synthetic = make_streams(SYNTHETIC)
    spoof = SpoofConfig(seed=0, num_utterances=2, min_duration_s=1.0, max_duration_s=2.0)
    return {
        "synthetic": synthetic,
        "synthetic_spoof": make_streams(spoof),
        "audio_files": _audio_files(tmp_path),
        "ave": _ave(tmp_path),
        "domains": [aba_stream(DomainSource(seed=3), "aba", 20, 10)],
        "missing": [perturb(synthetic[0], [MissingModality(modality="visual", rate=0.5, mode="zero")])],
        "audio_delay": [perturb(synthetic[0], [AudioDelay(delay_ms=200)])],
        "jitter": [perturb(synthetic[0], [Jitter(delta_ms=20)])],
        "occluded": [occlude(synthetic[0], 60, "noise")],
    }


def test_every_payload_of_every_data_set_kind_is_its_own_read_only_array(tmp_path: Path) -> None:
    kinds = _kinds(tmp_path)
    for kind, streams in kinds.items():
        stream = streams[0]
        probe = Probe(stream.classes, tuple(sorted(next(iter(stream.frames())).inputs)))
        engine = Engine(probe, EngineConfig(warmup_frames=0))
        engine.run_stream(stream)
        assert check_sealed(probe.payloads) > 0, kind
        probe.payloads.clear()  # the untimed audit loop and a warm-up are sealed the same way
        engine.run_untimed(stream, max_frames=5)
        assert check_sealed(probe.payloads) > 0, f"{kind} untimed"


def test_paced_and_warm_up_frames_are_sealed() -> None:
    warmup = make_warmup_stream(SYNTHETIC, 10)
    probe = Probe(warmup.classes, ("audio", "visual"))
    Engine(probe, EngineConfig(warmup_frames=10)).warm_up(warmup)
    assert check_sealed(probe.payloads) == 2 * 10  # two modalities
    short = aba_stream(DomainSource(seed=3), "paced", 4, 2)  # 10 frames released on the wall clock
    paced = Probe(short.classes, tuple(next(iter(short.frames())).inputs))
    Engine(paced, EngineConfig(warmup_frames=0, pacing="paced")).run_stream(short)
    assert check_sealed(paced.payloads) == short.num_frames == 10


def test_the_data_hands_out_views_and_the_cheat_finds_the_future_only_without_the_seal() -> None:
    """The check can fail: the raw frames of the synthetic data do reach the stream array, and the
    cheating adapter peeks through them; through the engine it finds nothing."""
    stream = make_streams(SYNTHETIC)[0]
    raw = list(stream.frames())
    assert isinstance(raw[0].inputs["audio"].base, np.ndarray)  # a view: the protection is needed
    with pytest.raises(AssertionError, match="a view of"):
        check_sealed([(f.index, "audio", f.inputs["audio"]) for f in raw[:1]])
    cheat = PeekAhead(stream.classes, ("audio", "visual"))
    for frame in raw:
        cheat.predict(frame)
    assert cheat.peeked == stream.num_frames - 1  # every frame but the last could read the next
    sealed = PeekAhead(stream.classes, ("audio", "visual"))
    Engine(sealed, EngineConfig(warmup_frames=0)).run_stream(stream)
    assert sealed.peeked == 0
    # the seal copies values bit for bit
    again = seal_frames(stream.frames())
    assert all(np.array_equal(a.inputs["audio"], b.inputs["audio"]) for a, b in zip(raw, again, strict=True))


def test_an_adapter_that_writes_into_its_input_gets_a_clear_error_and_the_data_is_intact() -> None:
    stream = make_streams(SYNTHETIC)[0]
    before = np.stack([f.inputs["audio"] for f in stream.frames()])
    engine = Engine(WritesItsInput(stream.classes, ("audio", "visual")), EngineConfig(warmup_frames=0))
    with pytest.raises(AdapterCallError, match=r"read-only") as caught:
        engine.run_stream(stream)
    assert caught.value.stream_id == stream.stream_id and caught.value.frame == 0
    after = np.stack([f.inputs["audio"] for f in stream.frames()])
    assert np.array_equal(before, after)
