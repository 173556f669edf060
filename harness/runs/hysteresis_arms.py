"""The hysteresis protocol's experiment arms (seed 001, experiments C and D), applied in this process to
what the model emitted.

An arm is a router wrapper (``adapters/router.py``: window aggregation, hard label) around the run's
adapter. Each wrapper is a causal function of the wrapped adapter's last prediction per frame and of its
own history, so running the model alone (sealed, in a worker) and replaying its
recorded predictions through the wrapper here gives the weights the wrapped model would have emitted,
with the same wrapper code: :func:`replay_arm` runs the wrapper, on an engine of this process, around a
stand-in adapter (:class:`RecordedModel`) that answers each frame with the predictions the model returned
at that frame.
The arm's recording keeps the model's latencies (the protocol scores weights, not time).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from streambench.adapters.contract import Adapter, AdapterInfo, Frame, Prediction, Stream
from streambench.adapters.router import AggregatedRouter, HardLabelRouter
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.protocols import hysteresis
from streambench.protocols.recording import StreamRecording

__all__ = ["RecordedModel", "needs_wrapper", "replay_arm", "wrap"]


def needs_wrapper(arm: hysteresis.Arm) -> bool:
    """Whether ``arm`` wraps the run's adapter (``run`` and ``soft`` are the adapter itself)."""
    return arm in ("none", "mean", "tail_exp", "hard", "hard_state")


def wrap(adapter: Adapter, arm: hysteresis.Arm, config: hysteresis.HysteresisConfig) -> Adapter:
    """The adapter an experiment arm runs: the run's adapter, or a router wrapper around it."""
    if arm in ("none", "mean", "tail_exp"):
        return AggregatedRouter(adapter, arm, config.window, config.tail_decay)
    if arm == "hard":
        return HardLabelRouter(adapter, "scores")
    if arm == "hard_state":
        return HardLabelRouter(adapter, "weights")
    return adapter


class RecordedModel:
    """A stand-in adapter that answers frame ``t`` with the predictions ``recording`` holds for it (those
    emitted at ``t``, in order, each naming the frame it labels); its ``info`` is the model's."""

    def __init__(self, info: AdapterInfo, recording: StreamRecording) -> None:
        self._info = info
        self._recording = recording
        order = np.argsort(recording.emitted_at, kind="stable")
        starts = np.searchsorted(recording.emitted_at[order], np.arange(recording.num_frames + 1))
        self._by_frame = [order[starts[t] : starts[t + 1]] for t in range(recording.num_frames)]

    @property
    def info(self) -> AdapterInfo:
        return self._info

    def reset_state(self) -> None:
        return None

    def predict(self, frame: Frame) -> list[Prediction]:
        rec = self._recording
        return [
            Prediction(
                scores=rec.scores[p],
                refers_to=int(rec.refers_to[p]),
                weights=None if rec.weights is None else rec.weights[p],
            )
            for p in self._by_frame[frame.index]
        ]


def replay_arm(
    recording: StreamRecording,
    stream: Stream,
    info: AdapterInfo,
    arm: hysteresis.Arm,
    config: hysteresis.HysteresisConfig,
) -> StreamRecording:
    """``recording`` (the model's, on ``stream``) as the arm's wrapper around the model would have emitted
    it: the wrapper, around a :class:`RecordedModel`, fed ``stream`` by an engine of this process (which
    decides emission frames and checks outputs as for any adapter); the model's latencies are kept. The
    model's own recording when the arm wraps nothing."""
    if not needs_wrapper(arm):
        return recording
    wrapper = wrap(RecordedModel(info, recording), arm, config)
    replayed = Engine(wrapper, EngineConfig(warmup_frames=0, record=("weights",))).run_stream(
        stream, recording.role
    )
    return dataclasses.replace(
        recording,
        emitted_at=replayed.emitted_at,
        refers_to=replayed.refers_to,
        scores=replayed.scores,
        weights=replayed.weights,
    )
