"""The sweep with the Ray executor on a local Ray instance (issue 10): the same metrics as the local
executor (timings aside), a worker killed mid-run retried, a finished sweep not run again."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the ray executor needs Ray: pip install 'streambench[ray]'")

from streambench.harness.results.headline import LATENCY_KEYS  # noqa: E402
from streambench.harness.runs.catalog import list_runs, load_headline  # noqa: E402
from streambench.harness.sweep.driver import run_sweep  # noqa: E402
from streambench.harness.sweep.executors import LocalExecutor  # noqa: E402
from streambench.harness.sweep.ray_executor import RayExecutor  # noqa: E402
from streambench.harness.sweep.spec import SweepFile, expand  # noqa: E402
from tests.harness.sweep.sweep_helpers import small_sweep  # noqa: E402

pytestmark = pytest.mark.slow  # end to end through subprocesses: its own CI step (pytest -m slow)

ROOT = Path(__file__).parents[3]
TIMING = LATENCY_KEYS | {"energy"}


@pytest.fixture(scope="module", autouse=True)
def ray_instance() -> Iterator[None]:
    """One small local instance for the module (Ray's start-up is slow); shut down at the end."""
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        object_store_memory=100 * 2**20,
        runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},  # the workers import the test helpers
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[SweepFile, Path, Any, Path, Any]:
    """The same small sweep run by each executor into its own store."""
    base = tmp_path_factory.mktemp("sweeps")
    sweep = SweepFile.model_validate(small_sweep(base / "ray"))
    ray_outcome = run_sweep(sweep, RayExecutor(retries=1), base / "ray")
    local_outcome = run_sweep(sweep, LocalExecutor(retries=1), base / "local")
    return sweep, base / "ray", ray_outcome, base / "local", local_outcome


def test_ray_and_local_executors_measure_identical_metrics(both: Any) -> None:
    sweep, ray_dir, ray_outcome, local_dir, local_outcome = both
    specs = expand(sweep)
    assert len(specs) == 8 and ray_outcome.failed == [] and local_outcome.failed == []
    assert [r.run_id for r in ray_outcome.records] == [s.run_id for s in specs]
    compared = 0
    for spec in specs:
        a, b = load_headline(ray_dir / spec.run_id), load_headline(local_dir / spec.run_id)
        quality = {f.key: f.value for f in a.figures if f.key not in TIMING}
        assert quality == {f.key: f.value for f in b.figures if f.key not in TIMING}, spec.describe()
        compared += len(quality)
        if spec.protocol == "online":
            ours, theirs = (
                np.load(ray_dir / spec.run_id / "arrays.npz"),
                np.load(local_dir / spec.run_id / "arrays.npz"),
            )
            scores = [k for k in theirs.files if k.endswith("/scores")]
            assert scores and all(np.array_equal(ours[k], theirs[k]) for k in scores)
    assert compared > 8 * 2


def test_ray_workers_measure_and_the_driver_writes_the_store(both: Any) -> None:
    sweep, ray_dir, ray_outcome, _, _ = both
    assert {h.run for h in list_runs(ray_dir)} == {s.run_id for s in expand(sweep)}
    for record in ray_outcome.records:
        assert record.executor == "ray" and record.status == "done" and len(record.attempts) == 1
        worker_pid = int((record.attempts[0].worker or ":0").rsplit(":", 1)[1])
        assert worker_pid != os.getpid()
        assert record.cores is not None and len(record.cores) == 1  # one whole core, pinned
        assert record.fingerprint is not None and record.environment is not None


def test_rerunning_a_finished_sweep_on_ray_runs_nothing(both: Any) -> None:
    sweep, ray_dir, first, _, _ = both
    again = run_sweep(sweep, RayExecutor(), ray_dir)
    assert again.records == [] and again.skipped == [r.run_id for r in first.records]


def test_a_ray_worker_killed_mid_run_is_retried_and_the_sweep_completes(tmp_path: Path) -> None:
    results = tmp_path / "results"
    marker = tmp_path / "exited"
    tree = small_sweep(
        results,
        adapters=[
            {
                "adapter": "tests.harness.sweep.sweep_helpers:ExitOnceAdapter",
                "label": "exit",
                "options": {"marker": str(marker)},
            },
            {"adapter": "faulty"},
        ],
        protocols={"online": {}},
    )
    tree["sweep"]["baseline"] = None
    # the adapter in process: its os._exit must end the Ray worker (in a sealed worker it would end that
    # worker only, a crashed stream of a run that goes on; and its sandbox refuses the marker)
    tree["run"] = {**tree["run"], "isolate": False}
    outcome = run_sweep(SweepFile.model_validate(tree), RayExecutor(retries=2), results)
    killed, other = outcome.records
    assert marker.exists() and outcome.failed == []
    assert killed.status == "done" and [a.attempt for a in killed.attempts] == [1, 2]
    assert killed.attempts[0].error is not None and "Worker" in killed.attempts[0].error
    assert other.status == "done" and len(other.attempts) == 1
    assert {h.run for h in list_runs(results)} == {killed.run_id, other.run_id}


def test_a_run_that_keeps_failing_on_ray_is_recorded_as_failed(tmp_path: Path) -> None:
    results = tmp_path / "results"
    broken = [{"adapter": "tests.harness.sweep.sweep_helpers:AlwaysBrokenAdapter"}]
    tree = small_sweep(results, adapters=broken, protocols={"online": {}})
    tree["sweep"]["baseline"] = None
    outcome = run_sweep(SweepFile.model_validate(tree), RayExecutor(retries=1), results)
    (record,) = outcome.failed
    assert len(record.attempts) == 2
    assert all("planted failure of every attempt" in (a.error or "") for a in record.attempts)
    assert (results / record.run_id / "sweep.json").is_file() and list_runs(results) == []


def test_a_run_no_node_can_hold_is_recorded_as_infeasible(tmp_path: Path) -> None:
    results = tmp_path / "results"
    tree = small_sweep(
        results, adapters=[{"adapter": "null", "resources": {"gpus": 1}}], protocols={"online": {}}
    )
    tree["sweep"]["baseline"] = None
    (record,) = run_sweep(SweepFile.model_validate(tree), RayExecutor(), results).failed
    assert record.attempts[0].error is not None
    assert record.attempts[0].error.startswith("infeasible: the run needs 1 CPUs and 1 GPUs on one node")
