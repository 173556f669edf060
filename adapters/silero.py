"""Silero VAD, a real third-party streaming model, in its two shipped variants.

The ``silero-vad`` package (``pip install 'streambench[vad]'``) ships the weights, so nothing is
downloaded: ``silero_vad/data/silero_vad.jit`` (TorchScript) and ``silero_vad/data/silero_vad.onnx``
(ONNX, opset 16). Both take 16 kHz audio in frames of 512 samples (8 kHz: 256) and return the
probability ``p`` that the frame is speech; both keep a recurrent state between frames. The adapters
score the two classes ``("non-speech", "speech")`` as ``[1 - p, p]`` and declare
``sample_rate_hz`` and ``frame_samples`` for the runner to check the data against.

- :class:`SileroVadJit` calls the TorchScript model as the package does (``model(x, sr)`` under
  ``torch.inference_mode()``); the model keeps its own state and context, cleared by its
  ``reset_states()``, which ``reset_state()`` calls.
- :class:`SileroVadOnnx` reimplements the package's ``OnnxWrapper`` (``silero_vad/utils_vad.py``)
  for batch 1 without torch: the model's input is the last 64 samples of the previous frame (the
  *context*; 32 at 8 kHz) followed by the 512 new ones, plus the recurrent ``state [2, 1, 128]`` and
  ``sr``; it returns ``output [1, 1]`` and ``stateN``. ``reset_state()`` zeroes the state and the
  context, as ``OnnxWrapper.reset_states()`` does. Runs with one intra- and one inter-op thread by
  default, as ``OnnxWrapper`` does.

The model files are located with ``importlib.util.find_spec`` rather than by importing
``silero_vad``: importing it calls ``torch.set_num_threads(1)`` (``silero_vad/model.py``), a process
-wide change the harness must not get as a side effect of loading an adapter.

A frame whose audio is missing (``None``: a dropped frame in the robustness protocol) is fed as
silence, so the model's clock keeps step with the stream's. A frame of the wrong length is an error.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator

from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    StreamingAdapter,
)

__all__ = [
    "DEFAULT_CLASSES",
    "SileroLoadError",
    "SileroVadJit",
    "SileroVadOnnx",
    "SileroVadOnnxOptions",
    "SileroVadOptions",
    "packaged_model",
]

DEFAULT_CLASSES = ("non-speech", "speech")
FRAME_SAMPLES = {16000: 512, 8000: 256}
"""Samples per frame the model takes at each supported rate (``OnnxWrapper.__call__``)."""
CONTEXT_SAMPLES = {16000: 64, 8000: 32}
"""Samples of the previous frame prepended to each frame by the ONNX variant (``OnnxWrapper.__call__``)."""
STATE_SHAPE = (2, 1, 128)
"""The ONNX variant's recurrent state at batch 1 (``OnnxWrapper.reset_states``)."""


class SileroLoadError(ValueError):
    """Silero VAD cannot be loaded as asked (package missing, bad rate, classes or model file)."""


class SileroVadOptions(AdapterOptions):
    """Options of :class:`SileroVadJit`. ``classes`` is data-bound (two names: non-speech, speech)."""

    classes: tuple[str, ...] | None = Field(
        None, description="the two class names, non-speech first; default ('non-speech', 'speech')"
    )
    sample_rate_hz: int = Field(16000, description="8000 or 16000: the rate of the stream's audio")
    path: str | None = Field(None, description="model file; default: the one the silero-vad package ships")

    @field_validator("sample_rate_hz")
    @classmethod
    def _supported_rate(cls, rate: int) -> int:
        if rate not in FRAME_SAMPLES:
            raise ValueError(f"Silero VAD runs at 8000 or 16000 Hz, not {rate}")
        return rate

    @field_validator("classes")
    @classmethod
    def _two_classes(cls, classes: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if classes is not None and len(classes) != 2:
            raise ValueError(
                f"Silero VAD scores two classes (non-speech, speech), got {len(classes)}: {classes}"
            )
        return classes


class SileroVadOnnxOptions(SileroVadOptions):
    """Options of :class:`SileroVadOnnx`."""

    threads: int = Field(1, ge=1, description="ONNX Runtime intra-op threads (the package's OnnxWrapper: 1)")


def packaged_model(file_name: str) -> Path:
    """Path of a model file shipped in the ``silero_vad`` package's ``data`` folder (not imported)."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise SileroLoadError("Silero VAD needs the silero-vad package: pip install 'streambench[vad]'")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / file_name
    if not path.is_file():
        raise SileroLoadError(f"the silero-vad package has no {file_name!r} (looked for {str(path)!r})")
    return path


def _package_version() -> str | None:
    try:
        return importlib.metadata.version("silero-vad")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a bare model file
        return None


class _SileroVad(StreamingAdapter):
    """What both variants share: options, info, the frame check and the two-class scores."""

    NAME: ClassVar[str]
    MODEL_FILE: ClassVar[str]

    def __init__(self, options: SileroVadOptions | None = None) -> None:
        super().__init__(options)
        opts = self.options
        assert isinstance(opts, SileroVadOptions)
        self.sample_rate_hz = opts.sample_rate_hz
        self.frame_samples = FRAME_SAMPLES[opts.sample_rate_hz]
        if opts.path is not None:
            self.model_path = Path(opts.path)
            if not self.model_path.is_file():
                raise SileroLoadError(f"Silero VAD model file {opts.path!r} does not exist")
        else:
            self.model_path = packaged_model(self.MODEL_FILE)
        self._silence = np.zeros(self.frame_samples, dtype=np.float32)
        self._info = AdapterInfo(
            name=self.NAME,
            classes=opts.classes or DEFAULT_CLASSES,
            modalities=("audio",),
            device="cpu",
            version=_package_version(),
            sample_rate_hz=self.sample_rate_hz,
            frame_samples=self.frame_samples,
        )

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def _samples(self, frame: Frame) -> np.ndarray:
        audio = frame.inputs.get("audio")
        if audio is None:
            return self._silence
        samples = np.asarray(audio, dtype=np.float32).reshape(-1)
        if samples.size != self.frame_samples:
            raise ValueError(
                f"frame {frame.index}: Silero VAD takes frames of {self.frame_samples} samples at "
                f"{self.sample_rate_hz} Hz, got {samples.size} (shape {np.shape(audio)})"
            )
        return samples

    def speech_probability(self, samples: np.ndarray) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def predict(self, frame: Frame) -> PredictOutput:
        p = self.speech_probability(self._samples(frame))
        return Prediction(scores=np.array([1.0 - p, p], dtype=np.float32))


class SileroVadJit(_SileroVad):
    """Silero VAD, TorchScript variant (``silero_vad.jit``), called as the package calls it."""

    Options: ClassVar[type[SileroVadOptions]] = SileroVadOptions
    NAME = "silero-vad"
    MODEL_FILE = "silero_vad.jit"

    def __init__(self, options: SileroVadOptions | None = None) -> None:
        super().__init__(options)
        import torch

        self._torch = torch
        try:
            self.model: Any = torch.jit.load(str(self.model_path), map_location="cpu").eval()
        except Exception as exc:
            raise SileroLoadError(f"cannot load {str(self.model_path)!r} as TorchScript: {exc}") from exc
        if not callable(getattr(self.model, "reset_states", None)):
            raise SileroLoadError(f"{str(self.model_path)!r} has no reset_states(): not a Silero VAD model")
        self.reset_state()

    def reset_state(self) -> None:
        self.model.reset_states()

    def speech_probability(self, samples: np.ndarray) -> float:
        torch = self._torch
        with torch.inference_mode():
            return float(self.model(torch.from_numpy(samples), self.sample_rate_hz).item())


class SileroVadOnnx(_SileroVad):
    """Silero VAD, ONNX variant (``silero_vad.onnx``) on ONNX Runtime, with the package's context rule."""

    Options: ClassVar[type[SileroVadOnnxOptions]] = SileroVadOnnxOptions
    NAME = "silero-vad-onnx"
    MODEL_FILE = "silero_vad.onnx"

    def __init__(self, options: SileroVadOnnxOptions | None = None) -> None:
        super().__init__(options)
        assert isinstance(self.options, SileroVadOnnxOptions)
        try:
            import onnxruntime as ort
        except ImportError as exc:  # pragma: no cover - the extra is installed in dev
            raise SileroLoadError("SileroVadOnnx needs onnxruntime: pip install 'streambench[vad]'") from exc
        sess_options = ort.SessionOptions()
        sess_options.intra_op_num_threads = self.options.threads
        sess_options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(
                str(self.model_path), sess_options=sess_options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise SileroLoadError(f"ONNX Runtime cannot open {str(self.model_path)!r}: {exc}") from exc
        inputs = {i.name for i in self.session.get_inputs()}
        outputs = [o.name for o in self.session.get_outputs()]
        if inputs != {"input", "state", "sr"} or outputs[:2] != ["output", "stateN"]:
            raise SileroLoadError(
                f"{str(self.model_path)!r} is not a Silero VAD v5/v6 ONNX model: inputs {sorted(inputs)}, "
                f"outputs {outputs} (expected input, state, sr -> output, stateN)"
            )
        self.context_samples = CONTEXT_SAMPLES[self.sample_rate_hz]
        self._window = np.zeros((1, self.context_samples + self.frame_samples), dtype=np.float32)
        self._feed = {
            "input": self._window,
            "state": np.zeros(STATE_SHAPE, dtype=np.float32),
            "sr": np.array(self.sample_rate_hz, dtype=np.int64),
        }
        self._fetch = ["output", "stateN"]

    def reset_state(self) -> None:
        self._window.fill(0.0)
        self._feed["state"] = np.zeros(STATE_SHAPE, dtype=np.float32)

    def speech_probability(self, samples: np.ndarray) -> float:
        window, context = self._window, self.context_samples
        window[0, :context] = window[0, -context:]  # the previous frame's tail is this frame's context
        window[0, context:] = samples
        out, state = self.session.run(self._fetch, self._feed)
        self._feed["state"] = state
        return float(out.reshape(-1)[0])
