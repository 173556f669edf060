"""Work hidden from the worker's clock (adapters/offenders/hidden_work.py), in a sealed worker: each
offender is called by the parent's clock or gains nothing, and the honest twins of the same cost are
not called."""

from __future__ import annotations

import os

import pytest

from streambench.harness.execution.adapter_errors import AdapterError
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.host_timing import judge_host_timing
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.worker_process import pin
from streambench.harness.runs.session_subject import own_threads_share
from tests.harness.execution.test_host_timing import _sealed

WORK_US = 3000.0


def _judged(config: RunConfig, one_core: bool = False):  # type: ignore[no-untyped-def]
    """The parent's verdict over a sealed run; ``one_core``: the worker pinned to one core, as on a
    machine whose other cores are busy (a thread of the model then waits for the engine's core)."""
    with IsolatedEngine(config, config.isolation) as worker:
        worker.warm_up()
        if one_core and worker.worker_pid is not None:
            pin(worker.worker_pid, (min(os.sched_getaffinity(0)),))
        recordings = [worker.run_stream(stream_id) for stream_id in worker.stream_ids]
        return judge_host_timing(recordings, worker.floor, worker.start_times), recordings


@pytest.mark.processes
@pytest.mark.parametrize(
    ("offender", "options"),
    [
        ("offender-thread-work", {}),  # its threads exit: their CPU stays in the worker's account
        ("offender-split-work", {"late_share": 0.4}),  # 40 % after the return: under half, over a quarter
    ],
)
def test_work_hidden_in_exiting_threads_or_after_the_return_is_called(offender: str, options: dict) -> None:
    """Called, or it gained nothing: a thread of the model that shares the engine's core may do its work
    inside predict() after all (the worker's own figure then holds it)."""
    judged, recordings = _judged(_sealed(offender, work_us=WORK_US, **options), one_core=True)
    frames = sum(r.num_frames for r in recordings)
    reported = sum(int(r.latency_ns.sum()) for r in recordings) / frames
    spent = (judged.worker_cpu_ns or 0) / frames  # its CPU a frame, all its threads, exited ones included
    if judged.verdict == "agree":  # what it kept from its own clock: under the quarter the check resolves
        assert 1 - reported / spent < 0.25, (reported, spent, judged)
    else:
        assert any("CPU a frame its own clock did not count" in note for note in judged.notes), judged.notes


@pytest.mark.processes
def test_a_process_that_would_do_the_work_is_refused() -> None:
    with pytest.raises(AdapterError, match="PermissionError"):
        _judged(_sealed("offender-fork-work", work_us=WORK_US))


@pytest.mark.processes
@pytest.mark.parametrize(
    ("adapter", "options"),
    [
        ("busywait", {"duration_us": WORK_US}),
        ("streambench.adapters.offenders.hidden_work:SpinningHelperAdapter", {"work_us": WORK_US}),
    ],
)
def test_honest_twins_of_the_same_cost_are_not_called(adapter: str, options: dict) -> None:
    judged, _ = _judged(_sealed(adapter, **options), one_core=True)
    assert judged.verdict == "agree", judged


@pytest.mark.processes
def test_a_models_own_helper_thread_is_counted_as_its_own() -> None:
    _, recordings = _judged(
        _sealed(
            "streambench.adapters.offenders.hidden_work:SpinningHelperAdapter", work_us=500.0, spin_us=400.0
        )
    )
    share = own_threads_share(recordings)
    assert share is not None and share > 0.3  # the helper's spin, beside the engine thread's work
