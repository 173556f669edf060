"""Shared test helpers: tiny hand-built streams and adapters that misbehave on purpose."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np

from streambench.adapters.contract import (
    AdapterInfo,
    AdapterOptions,
    Frame,
    Prediction,
    PredictOutput,
    Stream,
    StreamingAdapter,
)


def make_stream(
    stream_id: str = "s0",
    num_frames: int = 20,
    classes: tuple[str, ...] = ("background", "event"),
    fps: float = 10.0,
    labels: np.ndarray | None = None,
    segment_length_s: float | None = 1.0,
) -> Stream:
    """A stream whose frame payload is ``{"x": [stream marker, frame index]}``."""
    if labels is None:
        labels = np.zeros((num_frames, len(classes)), dtype=bool)
        labels[:, 0] = True
    times = (np.arange(num_frames) + 1) / fps
    marker = float(abs(hash(stream_id)) % 1000)

    def frames() -> list[Frame]:
        return [
            Frame(index=i, t=float(times[i]), inputs={"x": np.array([marker, i], dtype=np.float32)})
            for i in range(num_frames)
        ]

    return Stream(
        stream_id=stream_id,
        classes=classes,
        labels=labels,
        frame_times=times,
        frame_source=frames,
        modalities=("x",),
        segment_length_s=segment_length_s,
    )


class ScriptedAdapter:
    """An adapter whose output for each frame is decided by ``script(frame)``; logs every call."""

    def __init__(
        self, script: Callable[[Frame], PredictOutput], classes: tuple[str, ...] = ("background", "event")
    ):
        self.script = script
        self.calls: list[tuple[str, int | None]] = []
        self._info = AdapterInfo(name="scripted", classes=classes, modalities=("x",))

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.calls.append(("reset", None))

    def predict(self, frame: Frame) -> PredictOutput:
        self.calls.append(("predict", frame.index))
        return self.script(frame)


def constant(scores: list[float], refers_to: int | None = None) -> Callable[[Frame], PredictOutput]:
    arr = np.asarray(scores, dtype=np.float32)
    return lambda frame: Prediction(scores=arr, refers_to=refers_to)


class UnseededNoiseOptions(AdapterOptions):
    classes: tuple[str, ...] | None = None  # data-bound


class UnseededNoiseAdapter(StreamingAdapter):
    """A model left nondeterministic (dropout in training mode, an unseeded sampler): unseeded random
    scores, so two runs of the same stream differ from the first frame. Built by module path
    (``tests.support:UnseededNoiseAdapter``); takes the data set's classes."""

    Options = UnseededNoiseOptions

    def __init__(self, options: UnseededNoiseOptions | None = None) -> None:
        super().__init__(options)
        classes = self.options.classes or ("background", "event")
        self._info = AdapterInfo(name="unseeded-noise", classes=classes, modalities=("audio",))
        self._rng = np.random.default_rng()

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> PredictOutput:
        return Prediction(scores=self._rng.random(self._info.num_classes).astype(np.float32))


class FailAtOptions(AdapterOptions):
    classes: tuple[str, ...] | None = None  # data-bound
    stream: int = 0  # the n-th reset_state() call (0-based): with no warm-up, the n-th stream
    frame: int = 0
    fault: Literal["raise", "nan", "shape"] = "raise"


class FailAtAdapter(StreamingAdapter):
    """Honest constant scores, except at one (stream, frame): raises, returns NaN or a wrong shape."""

    Options = FailAtOptions

    def __init__(self, options: FailAtOptions | None = None) -> None:
        super().__init__(options)
        classes = self.options.classes or ("background", "event")
        self._info = AdapterInfo(name="fail-at", classes=classes, modalities=("audio",))
        self.resets = 0
        self._scores = np.linspace(0.9, 0.1, len(classes), dtype=np.float32)

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.resets += 1

    def predict(self, frame: Frame) -> PredictOutput:
        opts = self.options
        if self.resets - 1 == opts.stream and frame.index == opts.frame:
            if opts.fault == "raise":
                raise RuntimeError(f"planted failure at frame {frame.index}")
            if opts.fault == "nan":
                return Prediction(scores=np.full_like(self._scores, np.nan))
            return Prediction(scores=self._scores[:1].copy())
        return Prediction(scores=self._scores.copy())


class EnergyVadOptions(AdapterOptions):
    classes: tuple[str, ...] | None = None  # data-bound
    sample_rate_hz: int = 16000
    frame_samples: int = 512
    threshold: float = 0.05


class EnergyVadAdapter(StreamingAdapter):
    """A frame-energy voice activity detector declaring the rate and frame size it needs (sample streams)."""

    Options = EnergyVadOptions

    def __init__(self, options: EnergyVadOptions | None = None) -> None:
        super().__init__(options)
        opts = self.options
        classes = opts.classes or ("non-speech", "speech")
        self._info = AdapterInfo(
            name="energy-vad",
            classes=classes,
            modalities=("audio",),
            sample_rate_hz=opts.sample_rate_hz,
            frame_samples=opts.frame_samples,
        )

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> PredictOutput:
        audio = np.asarray(frame.inputs["audio"], dtype=np.float32)
        p = float(np.sqrt(np.mean(audio**2)) > self.options.threshold)
        return Prediction(scores=np.array([1.0 - p, p], dtype=np.float32))


HOSTILE = "[/bold][red]x[/red]\x1b[2J\x1b]0;owned\x07[link=file:///etc]y[/link]\x9b31m\x07"
"""Text a model controls, as a hostile one writes it: Rich markup (a stray closing tag included), ANSI
escape codes (clear screen, set the window title, 8-bit CSI) and a bell."""


class HostileOptions(AdapterOptions):
    classes: tuple[str, ...] | None = None  # data-bound
    fail_stream: int = 1  # the n-th reset_state() call (0-based, no warm-up): raises at frame 2


class HostileAdapter(StreamingAdapter):
    """Honest constant scores under a hostile name and device; on one stream ``predict()`` raises an
    error whose message is hostile too (issue 18, "Rich markup from a model")."""

    Options = HostileOptions

    def __init__(self, options: HostileOptions | None = None) -> None:
        super().__init__(options)
        classes = self.options.classes or ("background", "event")
        self._info = AdapterInfo(name=HOSTILE, classes=classes, modalities=("audio",), device=f"cpu{HOSTILE}")
        self._scores = np.linspace(0.9, 0.1, len(classes), dtype=np.float32)
        self.resets = 0

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        self.resets += 1

    def predict(self, frame: Frame) -> PredictOutput:
        if self.resets - 1 == self.options.fail_stream and frame.index == 2:
            raise RuntimeError(f"weights {HOSTILE} not found")
        return Prediction(scores=self._scores.copy())


class BallastOptions(AdapterOptions):
    classes: tuple[str, ...] | None = None  # data-bound
    ballast_mb: int = 256


class BallastAdapter(StreamingAdapter):
    """Honest constant scores from a model that holds ``ballast_mb`` MiB (written, so resident) from its
    construction on: its memory is what a run must report (issue 18, the worker's peak RSS)."""

    Options = BallastOptions

    def __init__(self, options: BallastOptions | None = None) -> None:
        super().__init__(options)
        classes = self.options.classes or ("background", "event")
        self._info = AdapterInfo(name="ballast", classes=classes, modalities=("audio",))
        self.ballast = np.ones(self.options.ballast_mb * 2**20, dtype=np.uint8)
        self._scores = np.linspace(0.9, 0.1, len(classes), dtype=np.float32)

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        pass

    def predict(self, frame: Frame) -> PredictOutput:
        return Prediction(scores=self._scores.copy())


CHECKOUT = Path(__file__).resolve().parents[1]


def run_streambench(
    args: list[str], cwd: Path, timeout: float = 300, **env: str
) -> subprocess.CompletedProcess[str]:
    """``streambench ARGS`` as a user or a CI job runs it: the installed entry point in a fresh process,
    in ``cwd``, with no terminal on any descriptor, no ``COLUMNS``, and ``PYTHONPATH`` naming this
    checkout only (as an installed package is found; the caller's directory is not on it); ``env`` adds
    variables."""
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "PYTHONPATH")}
    environ["PYTHONPATH"] = str(CHECKOUT)
    environ.update(env)
    return subprocess.run(
        [str(Path(sys.executable).parent / "streambench"), *args],
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_example(
    project: Path, make: list[str], config: str, run_id: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A docs/ example as a reader runs it, from a copy of the checkout's examples/ in ``project``: ``python
    MAKE...`` writes its data, then ``streambench run --config CONFIG`` (no PYTHONPATH: the example's
    package is found in the working directory, as ``python -m`` finds it; 10 warm-up frames). Returns the
    run's process and its directory."""
    import shutil

    shutil.copytree(CHECKOUT / "examples", project / "examples")
    made = subprocess.run([sys.executable, *make], cwd=project, capture_output=True, text=True, check=False)
    assert made.returncode == 0, made.stderr
    args = ["run", "--config", config, "--output-dir", "out", "--run-id", run_id, "--warmup-frames", "10"]
    done = run_streambench([*args, "--no-progress"], cwd=project, PYTHONPATH="")
    return done, project / "out" / run_id


def quick_run(output_dir: Path, run_id: str, adapter: str = "null") -> Path:
    """A short online run (2 synthetic streams of 1 s, no warm-up, in process), written and indexed as
    ``streambench run`` writes one; its run directory."""
    from streambench.harness.execution.config import RunConfig
    from streambench.harness.runs.session import execute_run

    data = {"num_streams": 2, "duration_s": 1.0}
    config = RunConfig.model_validate(
        {"adapter": adapter, "data": data, "engine": {"warmup_frames": 0}, "isolate": False}
        | {"output_dir": output_dir, "run_id": run_id}
    )
    return execute_run(config)[2]
