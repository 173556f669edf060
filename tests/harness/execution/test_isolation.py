"""``--no-sealed``: the adapter in a worker process that holds the data (the default worker is sealed:
test_sealed_worker.py); every planted fault costs its own stream and nothing else.

Worker starts dominate the cost, so one run on one :class:`IsolatedEngine` plants
every fault on its own stream, with a clean stream after each; the tests below read that run's outcome.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import numpy as np
import pytest

from streambench.adapters.faulty import EXIT_CODE, stream_fingerprint
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams, make_warmup_stream
from streambench.harness.execution.adapter_errors import (
    AdapterCallError,
    AdapterCrashError,
    AdapterError,
    AdapterOutputError,
    AdapterTimeoutError,
)
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import Engine, EngineConfig
from streambench.harness.execution.isolation import IsolatedEngine, WorkerError
from streambench.harness.execution.setup import build_adapter
from streambench.protocols.recording import StreamRecording

DATA = SyntheticConfig(
    seed=0, num_streams=15, num_event_classes=2, duration_s=2.0, min_event_segments=1, max_event_segments=2
)
ENGINE = EngineConfig(warmup_frames=10)
PLAIN_SLOW_STREAM = IsolationConfig(frame_timeout_s=60, stream_timeout_s=2.0, sealed=False)
STREAMS = make_streams(DATA)
IDS = [s.stream_id for s in STREAMS]
PRINTS = {s.stream_id: stream_fingerprint(next(iter(s.frames()))) for s in STREAMS}

FRAME_TIMEOUT_S = 1.0
LEAK_MB, MEMORY_LIMIT_MB, LEAK_FROM = 32, 128, 2
# fault -> (stream, frame): odd streams fault, the even stream after each must run clean
PLAN = {
    "raise": ("syn-0001", 3),
    "nan": ("syn-0003", 4),
    "shape": ("syn-0005", 5),
    "hang": ("syn-0007", 6),
    "exit": ("syn-0009", 7),
    "segv": ("syn-0011", 8),
    "leak": ("syn-0013", LEAK_FROM),
}
FAULTY = RunConfig(
    adapter="faulty",
    adapter_options={
        "leak_mb_per_frame": LEAK_MB,
        "more_faults": [
            {"fault": fault, "stream_fingerprint": PRINTS[stream], "at_frame": frame}
            for fault, (stream, frame) in PLAN.items()
        ],
    },
    data=DATA,
    engine=ENGINE,
)


def _run_all(engine: IsolatedEngine, ids: list[str]) -> dict[str, tuple[Any, float]]:
    """Every stream in order: its recording or the error it raised, and the seconds it took."""
    outcome: dict[str, tuple[Any, float]] = {}
    for stream_id in ids:
        start = time.monotonic()
        try:
            result: Any = engine.run_stream(stream_id)
        except AdapterError as exc:
            result = exc
        outcome[stream_id] = (result, time.monotonic() - start)
    return outcome


@pytest.fixture(scope="module")
def fault_run() -> tuple[dict[str, tuple[Any, float]], IsolatedEngine]:
    isolation = IsolationConfig(
        frame_timeout_s=FRAME_TIMEOUT_S, memory_limit_mb=MEMORY_LIMIT_MB, sealed=False
    )
    with IsolatedEngine(FAULTY, isolation) as engine:
        assert engine.warm_up() == 10
        outcome = _run_all(engine, IDS)
    return outcome, engine


def _in_process(config: RunConfig, stream_ids: list[str]) -> dict[str, StreamRecording]:
    engine = Engine(build_adapter(config, STREAMS[0]), config.engine)
    engine.warm_up(make_warmup_stream(config.data, config.engine.warmup_frames))
    by_id = {s.stream_id: s for s in STREAMS}
    return {i: engine.run_stream(by_id[i]) for i in stream_ids}


def _assert_same_outputs(isolated: StreamRecording, local: StreamRecording) -> None:
    assert isolated.stream_id == local.stream_id and isolated.role == local.role
    np.testing.assert_array_equal(isolated.scores, local.scores)
    np.testing.assert_array_equal(isolated.refers_to, local.refers_to)
    np.testing.assert_array_equal(isolated.emitted_at, local.emitted_at)
    np.testing.assert_array_equal(isolated.labels, local.labels)
    np.testing.assert_array_equal(isolated.frame_times_ns, local.frame_times_ns)
    assert isolated.scores.dtype == np.float32 and isolated.latency_ns.dtype == np.int64
    assert isolated.latency_ns.shape == local.latency_ns.shape and (isolated.latency_ns > 0).all()


@pytest.mark.processes
def test_isolated_recordings_equal_in_process_for_the_reference_adapter() -> None:
    config = RunConfig(adapter="reference", data=DATA, engine=ENGINE)
    ids = ["syn-0000", "syn-0002"]
    local = _in_process(config, ids)
    local_flops = Engine(build_adapter(config, STREAMS[0])).count_flops(STREAMS[0])
    with IsolatedEngine(config, IsolationConfig(sealed=False)) as engine:
        assert engine.warm_up() == 10 and engine.warmup_stream_id == "syn-warmup"
        isolated = {i: engine.run_stream(i, "validation" if i == ids[1] else "test") for i in ids}
        assert engine.info == build_adapter(config, STREAMS[0]).info
        assert engine.count_flops("syn-0000") == local_flops and local_flops[0]
        with pytest.raises(KeyError, match="no-such-stream"):
            engine.run_stream("no-such-stream")
        assert engine.starts == 1
    assert isolated[ids[1]].role == "validation"
    isolated[ids[1]].role = "test"
    for stream_id in ids:
        _assert_same_outputs(isolated[stream_id], local[stream_id])
        assert local[stream_id].num_predictions == 50
        assert set(isolated[stream_id].stage_ns) == set(local[stream_id].stage_ns) != set()  # via the proxy
    assert engine.worker_pid is None  # closed


@pytest.mark.processes
@pytest.mark.parametrize("fault", list(PLAN))
def test_each_fault_is_recorded_with_its_stream_and_frame(
    fault: str, fault_run: tuple[dict[str, tuple[Any, float]], IsolatedEngine]
) -> None:
    outcome, _ = fault_run
    stream, frame = PLAN[fault]
    error, elapsed = outcome[stream]
    expected_type = {
        "raise": AdapterCallError,
        "nan": AdapterOutputError,
        "shape": AdapterOutputError,
        "hang": AdapterTimeoutError,
        "exit": AdapterCrashError,
        "segv": AdapterCrashError,
        "leak": AdapterCallError,
    }[fault]
    assert type(error) is expected_type, error
    assert error.adapter == "faulty" and error.stream_id == stream
    if fault == "leak":  # frames 2, 3, 4 hold 96 MiB; the 4th 32 MiB no longer fits under 128 MiB
        assert frame + MEMORY_LIMIT_MB // LEAK_MB - 1 <= error.frame <= frame + MEMORY_LIMIT_MB // LEAK_MB
        assert "MemoryError" in error.problem
    else:
        assert error.frame == frame
    if fault == "raise":
        assert "RuntimeError: planted fault at frame 3" in error.problem
        assert "planted fault" in str(error.__cause__)  # the worker's traceback
    if fault == "nan":
        assert "NaN" in error.problem
    if fault == "shape":
        assert "shape (4,), expected (3,)" in error.problem
    if fault == "hang":
        assert isinstance(error, AdapterTimeoutError)
        assert error.scope == "frame" and error.timeout_s == FRAME_TIMEOUT_S
        assert FRAME_TIMEOUT_S <= elapsed < FRAME_TIMEOUT_S + 10
    if fault == "exit":
        assert isinstance(error, AdapterCrashError)
        assert (error.exitcode, error.signal) == (EXIT_CODE, None)
        assert f"exited with status {EXIT_CODE}" in error.problem
    if fault == "segv":
        assert isinstance(error, AdapterCrashError)
        assert (error.exitcode, error.signal) == (-signal.SIGSEGV, "SIGSEGV")


@pytest.mark.processes
def test_every_other_stream_is_scored_and_no_result_is_lost(
    fault_run: tuple[dict[str, tuple[Any, float]], IsolatedEngine],
) -> None:
    outcome, engine = fault_run
    assert list(outcome) == IDS  # one outcome per stream, in order
    failed = {stream for stream, _ in PLAN.values()}
    clean = [i for i in IDS if i not in failed]
    assert clean == [f"syn-{k:04d}" for k in range(0, 15, 2)]  # includes the stream after each fault
    assert all(isinstance(outcome[i][0], StreamRecording) for i in clean)
    assert all(isinstance(outcome[i][0], AdapterError) for i in failed)
    local = _in_process(FAULTY, clean)  # the same adapter in-process: its clean streams are honest
    for stream_id in clean:
        _assert_same_outputs(outcome[stream_id][0], local[stream_id])
    # a fresh worker after the hang, the exit, the segfault and the MemoryError; none after raise/nan/shape
    assert engine.starts == 5
    assert engine.memory_limit_note is None


def test_in_process_engine_records_raise_nan_and_shape_with_stream_and_frame() -> None:
    local = Engine(build_adapter(FAULTY, STREAMS[0]), FAULTY.engine)
    by_id = {s.stream_id: s for s in STREAMS}
    for fault, expected in (
        ("raise", AdapterCallError),
        ("nan", AdapterOutputError),
        ("shape", AdapterOutputError),
    ):
        stream, frame = PLAN[fault]
        with pytest.raises(expected) as caught:
            local.run_stream(by_id[stream])
        assert (caught.value.stream_id, caught.value.frame) == (stream, frame)
        assert local.run_stream(by_id["syn-0000"]).num_predictions == 50


@pytest.mark.processes
def test_worker_killed_from_outside_is_a_crash_and_a_slow_stream_hits_the_stream_timeout() -> None:
    """SIGKILL is how the kernel's out-of-memory killer ends a process; the stream timeout ends a
    stream that still moves too slowly for the frame timeout to fire (here: a hang under a long one)."""
    config = FAULTY.model_copy(
        update={
            "adapter_options": {
                "more_faults": [
                    {"fault": "hang", "stream_fingerprint": PRINTS["syn-0001"], "at_frame": 3},
                    {"fault": "hang", "stream_fingerprint": PRINTS["syn-0002"], "at_frame": 4},
                ]
            }
        }
    )
    with IsolatedEngine(config, PLAIN_SLOW_STREAM) as engine:
        engine.warm_up()
        pid = engine.worker_pid
        assert pid is not None
        killer = threading.Timer(1.5, os.kill, (pid, signal.SIGKILL))  # long after frame 3 began
        killer.start()
        with pytest.raises(AdapterCrashError) as crash:
            engine.run_stream("syn-0001")
        killer.join()
        assert (crash.value.stream_id, crash.value.frame, crash.value.signal) == ("syn-0001", 3, "SIGKILL")
        start = time.monotonic()
        with pytest.raises(AdapterTimeoutError) as timeout:
            engine.run_stream("syn-0002")
        assert 2.0 <= time.monotonic() - start < 12
        error = timeout.value
        assert (error.stream_id, error.frame, error.scope, error.timeout_s) == ("syn-0002", 4, "stream", 2.0)
        assert engine.starts == 2 and engine.worker_pid is None  # ended; the next request restarts it


@pytest.mark.processes
def test_a_worker_that_cannot_build_the_adapter_is_a_worker_error() -> None:
    config = RunConfig(adapter="faulty", adapter_options={"fault": "explode"}, data=DATA, engine=ENGINE)
    with IsolatedEngine(config) as engine, pytest.raises(WorkerError, match="explode") as caught:
        engine.warm_up()
    assert caught.value.kind == "AdapterLoadError"
    assert "Traceback" in caught.value.remote_traceback


@pytest.mark.processes
def test_a_worker_command_runs_its_own_pythonpath(tmp_path: Any) -> None:
    # the side's checkout is only on its own PYTHONPATH: the adapter module is found there, not here
    from streambench.harness.execution.worker_process import WorkerCommand, default_pythonpath

    side = tmp_path / "side"
    side.mkdir()
    (side / "side_only_adapter.py").write_text(
        "from streambench.adapters.null import NullAdapter\n\n\n"
        "class SideAdapter(NullAdapter):\n    NAME = 'side-only'\n"
    )
    config = RunConfig(adapter="side_only_adapter:SideAdapter", data=DATA, engine=ENGINE)
    command = WorkerCommand(pythonpath=[str(side), *default_pythonpath()])
    with IsolatedEngine(config, IsolationConfig(sealed=False), command=command) as engine:
        assert engine.warm_up() == 10
        assert engine.info.name == "side-only"
        recording = engine.run_stream("syn-0001")
        assert recording.num_frames == STREAMS[1].num_frames and (recording.latency_ns > 0).all()
    with IsolatedEngine(config, IsolationConfig(sealed=False)) as engine, pytest.raises(WorkerError):
        engine.warm_up()  # without the side's path the module is not importable
