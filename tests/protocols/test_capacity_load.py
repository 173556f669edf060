"""What bounded a capacity figure (protocols/capacity_load.py): the model when its workers were saturated
at the smallest failing N, the machine's load when other processes took the cores (or the busy-wait probe
found the machine busy) while the workers were not."""

from __future__ import annotations

from typing import Any

from streambench.protocols.capacity_load import judge_bound
from streambench.protocols.capacity_score import CapacityPoint

QUIET = ["before the search: timer accurate, machine quiet"]


def _point(streams: int, passed: bool, **figures: Any) -> CapacityPoint:
    base: dict[str, Any] = dict(
        streams=streams,
        duration_s=1,
        frames=100,
        served=100,
        dropped=0,
        late=0,
        misses=0,
        miss_rate=0,
        miss_rate_bound=0,
        latency_pass=passed,
        frames_needed=0,
        response_p50_ms=1,
        response_p99_ms=2,
        response_max_ms=3,
        wait_p50_ms=0,
        wait_p99_ms=0,
        release_lag_p99_us=1,
        mean_batch=1,
        offered_fps=50,
        served_fps=50,
        wait_growth=0,
        keeps_up=True,
        f1=0.9,
        f1_unloaded=0.9,
        f1_reference=0.9,
        accuracy_pass=True,
        passed=passed,
        verdict="",
    )
    return CapacityPoint(**{**base, **figures})


def test_saturated_workers_bound_it_by_the_model() -> None:
    curve = [_point(1, True), _point(2, False, workers_cpu_share=0.95, others_cpu=0.9)]
    judged = judge_bound(curve, lanes=1, cores=2, probe=QUIET)
    assert judged.bound_by == "model" and "busy 0.95 of 1 core" in (judged.reason or "")


def test_a_5_percent_model_failing_at_two_streams_on_a_busy_machine_is_load_bound() -> None:
    curve = [_point(1, True), _point(2, False, workers_cpu_share=0.1, others_cpu=1.6), _point(4, False)]
    judged = judge_bound(curve, lanes=1, cores=2, probe=QUIET)
    assert judged.bound_by == "machine load"
    assert "N = 2" in (judged.reason or "") and "1.60 of 2 core(s)" in (judged.reason or "")
    busy = ["before the search: timer accurate, machine busy: p99 ..."]
    probed = judge_bound([_point(2, False, workers_cpu_share=0.1, others_cpu=0.1)], 1, 2, busy)
    assert probed.bound_by == "machine load" and "probe" in (probed.reason or "")


def test_neither_saturated_nor_loaded_is_undecided_and_no_failure_bounds_nothing() -> None:
    undecided = judge_bound([_point(8, False, workers_cpu_share=0.3, others_cpu=0.1)], 1, 2, QUIET)
    assert undecided.bound_by == "undecided"
    assert judge_bound([_point(1, True)], 1, 2, QUIET).bound_by is None
    accuracy = judge_bound([_point(4, False, latency_pass=True, accuracy_pass=False)], 1, 2, QUIET)
    assert accuracy.bound_by == "model" and "accuracy" in (accuracy.reason or "")


def test_a_load_generator_behind_its_schedule_is_named_not_taken_for_the_model() -> None:
    """At N = 64 of a fast model the dispatcher itself released frames 12 ms late (p99) while the
    workers were busy 0.9 of their core: without the deadline the saturation reads as the model's bound;
    with it, the late releases (a quarter of the 40 ms deadline or more) make the figure undecided, or the
    machine's when other processes held the cores."""
    behind = _point(64, False, workers_cpu_share=0.9, others_cpu=0.1, release_lag_p99_us=12_000)
    assert judge_bound([behind], 1, 2, QUIET).bound_by == "model"
    judged = judge_bound([behind], 1, 2, QUIET, deadline_ms=40)
    assert judged.bound_by == "undecided" and "load generator released frames up to 12 ms late" in (
        judged.reason or ""
    )
    loaded = behind.model_copy(update={"others_cpu": 1.2})
    assert judge_bound([loaded], 1, 2, QUIET, deadline_ms=40).bound_by == "machine load"
    on_pace = behind.model_copy(update={"release_lag_p99_us": 2_000})  # 2 ms of 40: on its schedule
    assert judge_bound([on_pace], 1, 2, QUIET, deadline_ms=40).bound_by == "model"
