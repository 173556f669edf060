"""The hysteresis arms replayed over the model's recording (harness/runs/hysteresis_arms.py) emit exactly
what the router wrapper around the live model emits; the sealed hysteresis run scores what the in-process
run scores, and says where it ran."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.router import RouterOptions, SoftRouterAdapter
from streambench.harness.datasets.domains import DomainSource, aba_stream
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.runs.hysteresis import execute_hysteresis
from streambench.harness.runs.hysteresis_arms import replay_arm, wrap
from streambench.protocols import hysteresis
from streambench.protocols.hysteresis import HysteresisConfig

ARMS: tuple[hysteresis.Arm, ...] = ("none", "mean", "tail_exp", "hard", "hard_state")


class LaggingRouter(SoftRouterAdapter):
    """The reference router, silent on every third frame and labelling the previous frame on the
    others after the first: the replay must keep which frame emitted what and what it refers to."""

    def predict(self, frame: Frame) -> Prediction | list[Prediction] | None:  # type: ignore[override]
        pred = super().predict(frame)
        if frame.index % 3 == 2:
            return None
        if frame.index == 0:
            return pred
        earlier = Prediction(scores=pred.scores * 0.5, refers_to=frame.index - 1, weights=pred.weights)
        return [earlier, pred] if frame.index % 3 == 1 else earlier


def record(adapter: object, stream_record: tuple[str, ...]) -> Engine:
    return Engine(adapter, EngineConfig(warmup_frames=0, record=stream_record))  # type: ignore[arg-type]


@pytest.mark.parametrize("model", [SoftRouterAdapter, LaggingRouter])
@pytest.mark.parametrize("emit_weights", [True, False])
@pytest.mark.parametrize("arm", ARMS)
def test_replay_emits_what_the_wrapped_model_emits(
    model: type, emit_weights: bool, arm: hysteresis.Arm
) -> None:
    config = HysteresisConfig(window=4, tail_decay=0.6)
    stream = aba_stream(DomainSource(), "s", 12, 9, repeat=1)
    options = RouterOptions(emit_weights=emit_weights)
    base = model(options)
    own = ("weights",) if emit_weights else ()
    recording = record(base, own).run_stream(stream)
    replayed = replay_arm(recording, stream, base.info, arm, config)
    live = record(wrap(model(options), arm, config), ("weights",)).run_stream(stream)
    np.testing.assert_array_equal(replayed.emitted_at, live.emitted_at)
    np.testing.assert_array_equal(replayed.refers_to, live.refers_to)
    np.testing.assert_array_equal(replayed.scores, live.scores)
    assert replayed.weights is not None and live.weights is not None
    np.testing.assert_array_equal(replayed.weights, live.weights)
    assert replayed.emitted_at.size > 0


def test_an_arm_that_wraps_nothing_is_the_model_s_recording() -> None:
    stream = aba_stream(DomainSource(), "s", 6, 6)
    base = SoftRouterAdapter()
    recording = record(base, ("weights",)).run_stream(stream)
    assert replay_arm(recording, stream, base.info, "soft", HysteresisConfig()) is recording


@pytest.mark.processes
def test_sealed_run_scores_what_the_in_process_run_scores(tmp_path: Path) -> None:
    sweep = HysteresisConfig(experiments=("aggregation", "hard_label"), repeats=1, len_a=24, len_b=16)
    results = {}
    for isolate in (True, False):
        config = RunConfig.model_validate(
            {
                "adapter": "reference-router",
                "engine": {"warmup_frames": 10},
                "isolate": isolate,
                "output_dir": str(tmp_path / str(isolate)),
            }
        )
        results[isolate], _ = execute_hysteresis(config, sweep)
    sealed, here = results[True], results[False]
    assert sealed.execution_mode == "sealed" and here.execution_mode == "in-process"
    assert sealed.report == here.report
    assert {r.arm for r in sealed.report.rows} >= {"none", "mean", "tail_exp", "hard", "hard_state"}
