"""Outputs and signals that once ended a run, planted in a worker (adapters/faulty.py): each is one
stream's recorded failure naming the adapter, the stream and the frame, the stream after it runs clean,
and nothing reaches the console (the worker's stderr is the harness's).

- ``huge_ref``: a ``refers_to`` of 2**80 (before: ``OverflowError`` in the worker, the run's end);
- ``garbage``, ``raw``: bytes a model writes to its connection, framed as a message or not (before:
  ``error: Expecting value: line 1 column 1``, the run's end; unframed, a wait forever);
- ``close_fds``: the model closes its process's descriptors (before: an ``OSError`` traceback);
- ``keyboard``, ``base``, ``genexit``, ``sysexit``: ``KeyboardInterrupt``, a ``BaseException``,
  ``GeneratorExit``, ``SystemExit(0)`` out of ``predict()`` (before: the worker's traceback, and "killed
  by SIGINT before the stream's first frame" or "exited with status 0").
"""

from __future__ import annotations

import io
import os
import tempfile
from typing import Any

import pytest

from streambench.adapters.faulty import stream_fingerprint
from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution.adapter_errors import (
    AdapterCallError,
    AdapterCrashError,
    AdapterError,
    AdapterOutputError,
    AdapterWorkerError,
)
from streambench.harness.execution.config import IsolationConfig, RunConfig
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.isolation import IsolatedEngine

pytestmark = pytest.mark.slow  # worker processes, several restarts

DATA = SyntheticConfig(seed=0, num_streams=16, num_event_classes=2, duration_s=2.0)
STREAMS = make_streams(DATA)
PRINTS = {s.stream_id: stream_fingerprint(next(iter(s.frames()))) for s in STREAMS}
FRAMES = STREAMS[0].num_frames

# fault -> (stream, frame, error type, what the failure says); odd streams fault, the even one after runs
PLAN: dict[str, tuple[str, int, type[AdapterError], str]] = {
    "huge_ref": ("syn-0001", 3, AdapterOutputError, "refers_to=1208925819614629174706176 does not fit"),
    "garbage": ("syn-0003", 4, AdapterWorkerError, "reply was not valid (not a reply header: 'garbage"),
    "raw": ("syn-0005", 5, AdapterWorkerError, "a message of 1,734,439,522 bytes announced"),
    "close_fds": ("syn-0007", 6, AdapterCrashError, "exited with status 74: its connection to the harness"),
    "keyboard": ("syn-0009", 7, AdapterCallError, "predict() raised KeyboardInterrupt: planted fault"),
    "base": ("syn-0011", 8, AdapterCallError, "predict() raised PlantedBaseException: planted fault"),
    "genexit": ("syn-0013", 9, AdapterCallError, "predict() raised GeneratorExit: planted fault"),
    "sysexit": ("syn-0015", 10, AdapterCallError, "predict() raised SystemExit: 0"),
}
CONFIG = RunConfig(
    adapter="faulty",
    adapter_options={
        "more_faults": [
            {"fault": fault, "stream_fingerprint": PRINTS[stream], "at_frame": frame}
            for fault, (stream, frame, _, _) in PLAN.items()
        ]
    },
    data=DATA,
    engine=EngineConfig(warmup_frames=10),
)


def _run_all(sealed: bool) -> tuple[dict[str, Any], int]:
    outcome: dict[str, Any] = {}
    isolation = IsolationConfig(sealed=sealed, frame_timeout_s=5.0, stream_timeout_s=60.0)
    with IsolatedEngine(CONFIG, isolation) as engine:
        engine.warm_up()
        for stream in STREAMS:
            try:
                outcome[stream.stream_id] = engine.run_stream(stream.stream_id)
            except AdapterError as exc:
                outcome[stream.stream_id] = exc
        starts = engine.starts
    return outcome, starts


@pytest.fixture(scope="module", params=[True, False], ids=["sealed", "not-sealed"])
def fault_run(request: pytest.FixtureRequest) -> tuple[bool, dict[str, Any], int, str]:
    """Every stream of one engine, and what reached file descriptor 2 meanwhile (the workers' stderr;
    capfd is function-scoped)."""
    with tempfile.TemporaryFile() as err:
        saved = os.dup(2)
        os.dup2(err.fileno(), 2)
        try:
            outcome, starts = _run_all(request.param)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        printed = io.TextIOWrapper(err, errors="replace").read()
    return request.param, outcome, starts, printed


@pytest.mark.parametrize("fault", list(PLAN))
def test_each_fault_is_its_streams_failure_named_by_stream_and_frame(
    fault_run: tuple[bool, dict[str, Any], int, str], fault: str
) -> None:
    sealed, outcome, _, _ = fault_run
    stream_id, frame, error, says = PLAN[fault]
    failure = outcome[stream_id]
    assert isinstance(failure, error), (fault, failure)
    assert (failure.adapter, failure.stream_id) == ("faulty", stream_id)
    assert says in failure.problem, failure.problem
    if sealed or fault not in ("garbage", "raw", "close_fds"):
        # sealed, the worker waits for each frame: the parent knows where it stood; not sealed, a worker
        # writing to its connection runs on meanwhile (its failure is named at the frame it reached)
        assert failure.frame == frame, failure
        if fault == "close_fds":
            assert f"during frame {frame}" in failure.problem
    next_id = f"syn-{int(stream_id[-4:]) + 1:04d}"
    if next_id in outcome:
        assert outcome[next_id].num_frames == FRAMES, (fault, outcome[next_id])


def test_every_other_stream_is_recorded_and_nothing_reaches_the_console(
    fault_run: tuple[bool, dict[str, Any], int, str],
) -> None:
    _, outcome, starts, printed = fault_run
    faulty = {stream for stream, *_ in PLAN.values()}
    assert {s for s, r in outcome.items() if isinstance(r, AdapterError)} == faulty
    assert all(outcome[s.stream_id].num_frames == FRAMES for s in STREAMS if s.stream_id not in faulty)
    assert starts == 1 + 3  # a fresh worker after garbage, raw and close_fds, none after the others
    assert "Traceback" not in printed and "OSError" not in printed, printed
