"""Outputs and exceptions that once ended a run, in process: each is one stream's failure naming the
adapter, the stream and the frame (a ``refers_to`` no int64 holds; ``SystemExit``, ``GeneratorExit`` or
any ``BaseException`` out of ``predict()`` or ``reset_state()``), while the harness's own interrupts
(Ctrl-C, SIGTERM's ``RunInterrupted``, a sweep's ``SweepInterrupted``) are passed on, as they must stop
the run. In a worker (``interrupts=()``) a ``KeyboardInterrupt`` is the model's own and fails its stream."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.faulty import HUGE_REF, FaultyAdapter, FaultyOptions, PlantedBaseException
from streambench.harness.execution.adapter_errors import AdapterCallError, AdapterOutputError
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.executor import RunInterrupted
from streambench.harness.sweep.interrupts import SweepInterrupted
from tests.support import ScriptedAdapter, make_stream

OK = np.asarray([0.2, 0.8], dtype=np.float32)
MODES = ["timed", "untimed", "paced"]


def _run(engine: Engine, mode: str, frames: int = 12) -> None:
    stream = make_stream("clip-3", num_frames=frames, fps=1000.0)
    if mode == "untimed":
        engine.run_untimed(stream)
    else:
        engine.run_stream(stream)


def _engine(script: object, mode: str, **kwargs: object) -> Engine:
    pacing = "paced" if mode == "paced" else "unpaced"
    return Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0, pacing=pacing), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "ref",
    [HUGE_REF, 2**63, np.uint64(2**64 - 1), -(2**70), 10**5000],
    ids=["2**80", "2**63", "uint64-max", "-2**70", "10**5000"],
)
def test_a_refers_to_no_int64_holds_is_an_output_error_at_its_frame(mode: str, ref: object) -> None:
    """The fast path (a lone Prediction), the full path (a list) and the paced loop alike: before, 2**80
    passed the fast path's ``ref >= 0`` and overflowed the int64 array after the stream, ending the run."""

    def script(frame: Frame) -> object:
        if frame.index != 5:
            return Prediction(scores=OK)
        odd = Prediction(scores=OK, refers_to=ref)  # type: ignore[arg-type]
        return [odd] if isinstance(ref, np.integer) else odd

    with pytest.raises(AdapterOutputError, match=r"refers_to=.* (does not fit|is outside)") as caught:
        _run(_engine(script, mode), mode)
    assert (caught.value.adapter, caught.value.stream_id, caught.value.frame) == ("scripted", "clip-3", 5)
    assert len(str(caught.value)) < 300  # 10**5000 is named by its size, not printed


def test_the_largest_int64_refers_to_is_kept_and_dropped_past_the_end() -> None:
    def script(frame: Frame) -> Prediction:
        return Prediction(scores=OK, refers_to=2**63 - 1 if frame.index == 4 else None)

    recording = Engine(ScriptedAdapter(script), EngineConfig(warmup_frames=0)).run_stream(make_stream())
    assert recording.beyond_end == 1 and recording.num_predictions == 19


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "raised",
    [SystemExit(0), GeneratorExit("planted"), PlantedBaseException("planted"), SystemExit("bye")],
    ids=["SystemExit(0)", "GeneratorExit", "BaseException", "SystemExit(str)"],
)
def test_a_base_exception_from_predict_is_the_adapters_failure_at_its_frame(
    mode: str, raised: BaseException
) -> None:
    def script(frame: Frame) -> Prediction:
        if frame.index == 6:
            raise raised
        return Prediction(scores=OK)

    with pytest.raises(AdapterCallError, match=f"predict\\(\\) raised {type(raised).__name__}") as caught:
        _run(_engine(script, mode), mode)
    assert (caught.value.stream_id, caught.value.frame) == ("clip-3", 6)
    assert caught.value.__cause__ is raised


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "interrupt",
    [KeyboardInterrupt(), RunInterrupted("signal SIGTERM"), SweepInterrupted("SIGINT")],
    ids=["Ctrl-C", "SIGTERM", "sweep"],
)
def test_the_harness_interrupts_are_passed_on_in_process(mode: str, interrupt: BaseException) -> None:
    def script(frame: Frame) -> Prediction:
        if frame.index == 2:
            raise interrupt
        return Prediction(scores=OK)

    with pytest.raises(type(interrupt)) as caught:
        _run(_engine(script, mode), mode)
    assert caught.value is interrupt


@pytest.mark.parametrize("mode", MODES)
def test_in_a_worker_a_keyboard_interrupt_is_the_models_own(mode: str) -> None:
    def script(frame: Frame) -> Prediction:
        if frame.index == 8:
            raise KeyboardInterrupt("planted")
        return Prediction(scores=OK)

    with pytest.raises(AdapterCallError, match="predict\\(\\) raised KeyboardInterrupt: planted") as caught:
        _run(_engine(script, mode, interrupts=()), mode)
    assert caught.value.frame == 8


def test_a_base_exception_from_reset_state_fails_the_stream_before_frame_0() -> None:
    class Exits(ScriptedAdapter):
        def reset_state(self) -> None:
            raise SystemExit(0)

    engine = Engine(Exits(lambda frame: Prediction(scores=OK)), EngineConfig(warmup_frames=0))
    with pytest.raises(AdapterCallError, match="reset_state\\(\\) before the stream raised SystemExit: 0"):
        engine.run_stream(make_stream("clip-1"))


@pytest.mark.parametrize(
    ("fault", "error", "problem"),
    [
        ("huge_ref", AdapterOutputError, "refers_to=1208925819614629174706176 does not fit"),
        ("sysexit", AdapterCallError, "predict\\(\\) raised SystemExit: 0"),
        ("genexit", AdapterCallError, "predict\\(\\) raised GeneratorExit: planted fault at frame 4"),
        ("base", AdapterCallError, "predict\\(\\) raised PlantedBaseException: planted fault at frame 4"),
    ],
)
def test_the_faulty_adapters_planted_faults_fail_their_stream_in_process(
    fault: str, error: type[Exception], problem: str
) -> None:
    """The attack adapters of harness/execution/isolation's fault tests, in process."""
    adapter = FaultyAdapter(FaultyOptions(fault=fault, stream_index=1, at_frame=4))  # type: ignore[arg-type]
    engine = Engine(adapter, EngineConfig(warmup_frames=0))
    engine.run_stream(make_stream("clean"))
    with pytest.raises(error, match=problem) as caught:
        engine.run_stream(make_stream("faulty"))
    assert caught.value.frame == 4  # type: ignore[attr-defined]
    assert engine.run_stream(make_stream("after")).num_predictions == 20  # the instance goes on
