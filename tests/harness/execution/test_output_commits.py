"""Outputs committed frame by frame (harness/execution/output_commits.py): the sealed worker sends each
``predict()`` output with its request for the next frame, and the parent checks the recording against
those commits. A planted model with a 3-frame look-ahead that rewrites its worker's recordings to claim
zero delay (``offender-backdater``) fails every stream (nothing is left to score); with the check
removed it would answer every frame at Δt = 0."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from streambench.adapters.contract import Prediction
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution import isolation
from streambench.harness.execution.adapter_errors import AdapterOutputError
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.executor import NothingScoredError
from streambench.harness.execution.output_commits import (
    UNREADABLE,
    check_commits,
    decode_commits,
    encode_output,
)
from streambench.harness.runs.session import execute_run
from streambench.protocols.recording import StreamRecording

C = 3


def scores(*values: float) -> np.ndarray:
    return np.asarray(values, dtype=np.float32)


def test_commits_round_trip_every_output_shape() -> None:
    outputs: list[Any] = [
        None,  # frame 0: nothing
        Prediction(scores(0.1, 0.2, 0.7)),  # frame 1: itself
        [Prediction(scores(1, 0, 0), refers_to=0), Prediction(scores(0, 1, 0))],  # frame 2: two
        Prediction(scores(0, 0, 1), refers_to=7),  # frame 3: anticipates frame 7
    ]
    commits = [encode_output(None, C)] + [encode_output(out, C) for out in outputs]
    committed = decode_commits(commits, C)
    np.testing.assert_array_equal(committed.emitted_at, [1, 2, 2, 3])
    np.testing.assert_array_equal(committed.refers_to, [1, 0, 2, 7])
    np.testing.assert_array_equal(committed.scores[1], scores(1, 0, 0))
    weighted = Prediction(scores(1, 0, 0), weights=np.array([0.25, 0.75]))
    extras = decode_commits(
        [encode_output(None, C), encode_output(weighted, C, ("weights",))], C, ("weights",)
    )
    np.testing.assert_array_equal(extras.extras["weights"][0], [0.25, 0.75])
    assert encode_output("not a prediction", C) == UNREADABLE
    assert encode_output(Prediction(scores(1, 0)), C) == UNREADABLE  # two scores for three classes
    with pytest.raises(ValueError, match="frame 0"):
        decode_commits([encode_output(None, C), UNREADABLE], C)


def _honest() -> tuple[StreamRecording, list[bytes]]:
    """A reference adapter's recording in process, and the commits of the same outputs."""
    from streambench.adapters.registry import create_adapter

    (stream,) = make_streams(SyntheticConfig(seed=1, num_streams=1, duration_s=1.0))
    adapter = create_adapter("reference-lookahead", {}, data_bound={"classes": stream.classes})
    outputs: list[object] = []
    forward = adapter.predict

    def predict(frame: Any) -> Any:
        out = forward(frame)
        outputs.append(out)
        return out

    adapter.predict = predict  # type: ignore[method-assign]
    recording = Engine(adapter, EngineConfig(warmup_frames=0)).run_stream(stream)
    classes = len(stream.classes)
    return recording, [encode_output(None, classes)] + [encode_output(out, classes) for out in outputs]


def test_a_recording_must_hold_exactly_what_was_committed() -> None:
    recording, commits = _honest()
    classes = recording.scores.shape[1]
    check_commits(recording, commits, classes, (), "m", "s")  # honest: the same
    assert recording.emitted_at.size and (recording.refers_to < recording.emitted_at).any()  # a look-ahead
    backdated = dataclasses.replace(recording, emitted_at=recording.refers_to.copy())
    rescored = dataclasses.replace(recording, scores=recording.scores[::-1].copy())
    relabelled = dataclasses.replace(recording, refers_to=recording.emitted_at.copy())
    for bad, what in ((backdated, "emission frame"), (rescored, "scores"), (relabelled, "refers_to")):
        with pytest.raises(AdapterOutputError, match=f"committed frame by frame: the {what}"):
            check_commits(bad, commits, classes, (), "m", "s")
    with pytest.raises(AdapterOutputError, match="commits for"):
        check_commits(recording, commits[:-1], classes, (), "m", "s")


def _run(tmp_path: Path, run_id: str, backdate: bool) -> Any:
    config = RunConfig.model_validate(
        {
            "adapter": "offender-backdater",
            "adapter_options": {"lag": 3, "backdate": backdate},
            "data": {"seed": 0, "num_streams": 3, "duration_s": 2.0},
            "engine": {"warmup_frames": 0},
            "protocol": {
                "bootstrap_resamples": 20,
                "deltas_ms": [0, 1000],
                "audit": {"share": 0, "minimum": 0},
            },
            "output_dir": tmp_path,
            "run_id": run_id,
        }
    )
    return execute_run(config)[0]


def answered_at_0(result: Any) -> float:
    """The share of frames with a prediction inside Δt = 0 (Strict): 0 for a 3-frame look-ahead."""
    (point,) = [p for p in result.metrics.overall.accuracy.curves["frame"]["strict"] if p.delta_ms == 0]
    return float(point.answered)


@pytest.mark.processes
def test_a_model_that_backdates_its_recordings_fails_its_streams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    honest = _run(tmp_path, "honest", backdate=False)
    assert not honest.failures and honest.execution.mode == "sealed"
    with pytest.raises(NothingScoredError) as failed:  # every stream fails: nothing left to score
        _run(tmp_path, "cheat", backdate=True)
    assert len(failed.value.failures) == 3
    assert all(
        "differs from the outputs committed frame by frame" in f.message for f in failed.value.failures
    )
    # the defence removed: the rewritten recordings are taken, and the look-ahead model scores at Δt = 0
    monkeypatch.setattr(isolation, "check_commits", lambda *args: None)
    unchecked = _run(tmp_path, "unchecked", backdate=True)
    assert not unchecked.failures
    assert answered_at_0(unchecked) > 0.9 and answered_at_0(honest) == 0.0  # a 3-frame delay, hidden
