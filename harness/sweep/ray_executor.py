"""The Ray executor of ``streambench sweep`` (the ``ray`` extra): each run a Ray task that requests its
resources, so Ray's scheduler places at most one timed run per GPU; only as many runs are submitted as
the cluster can hold; the driver retries and records every attempt and alone writes the store
(harness/sweep/executors.py has the interface, the local executor, and the commit path).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from streambench.harness.sweep.executors import (
    Attempt,
    Executor,
    Measured,
    SweepRecord,
    _since,
    measure,
)
from streambench.harness.sweep.spec import RunSpec
from streambench.harness.sweep.state import SweepProgress

__all__ = ["RayExecutor"]


def _ray_measure(spec: RunSpec) -> Measured:
    """The Ray task body (module level, so workers import it by name)."""
    return measure(spec, pin=True)


class RayExecutor(Executor):
    """Each run a Ray task requesting its resources; the driver retries, commits and records."""

    name = "ray"

    def __init__(
        self, retries: int = 2, address: str | None = None, init_kwargs: dict[str, Any] | None = None
    ) -> None:
        super().__init__(retries)
        self.address = address
        self.init_kwargs = init_kwargs or {}
        self.startup_s: float | None = None  # seconds ray.init took, when this executor started Ray

    def run(self, specs: Sequence[RunSpec], results_dir: Path, progress: SweepProgress) -> list[SweepRecord]:
        """Connect to ``address`` (or start a local instance, shut down after), then run every spec."""
        try:
            import ray
        except ImportError:
            raise RuntimeError("the ray executor needs Ray: pip install 'streambench[ray]'") from None
        started_here = not ray.is_initialized()
        if started_here:
            began = time.perf_counter()
            ray.init(address=self.address, include_dashboard=False, **self.init_kwargs)
            self.startup_s = time.perf_counter() - began
        try:
            return self._run(ray, specs, results_dir, progress)
        finally:
            if started_here:
                ray.shutdown()

    def _run(
        self, ray: Any, specs: Sequence[RunSpec], results_dir: Path, progress: SweepProgress
    ) -> list[SweepRecord]:
        task = ray.remote(_ray_measure)
        pending: dict[Any, tuple[RunSpec, int, float]] = {}
        attempts: dict[str, list[Attempt]] = {spec.run_id: [] for spec in specs}
        records: dict[str, SweepRecord] = {}
        queue: deque[tuple[RunSpec, int]] = deque((spec, 1) for spec in specs)
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]

        def fits(spec: RunSpec) -> bool:
            """Submitted runs are the running ones: no more in flight than the cluster's cores / GPUs."""
            if not pending:
                return True
            total = ray.cluster_resources()
            busy = [s.resources for s, _, _ in pending.values()]
            return sum(r.cpus for r in busy) + spec.resources.cpus <= total.get("CPU", 0) and (
                spec.resources.gpus == 0
                or sum(r.gpus for r in busy) + spec.resources.gpus <= total.get("GPU", 0)
            )

        def submit(spec: RunSpec, number: int) -> None:
            """Hand one attempt to Ray, or record it as infeasible when no node can ever hold it."""
            res = spec.resources
            largest = (
                max((n.get("CPU", 0) for n in nodes), default=0),
                max((n.get("GPU", 0) for n in nodes), default=0),
            )
            if res.cpus > largest[0] or res.gpus > largest[1]:
                attempts[spec.run_id].append(
                    Attempt(
                        attempt=number,
                        error=f"infeasible: the run needs {res.cpus} CPUs and {res.gpus} GPUs on one "
                        f"node, the largest node has {largest[0]:g} CPUs and {largest[1]:g} GPUs",
                    )
                )
                records[spec.run_id] = self._finish(spec, None, attempts[spec.run_id], results_dir, progress)
                return
            options: dict[str, Any] = {"num_cpus": res.cpus, "num_gpus": res.gpus, "max_retries": 0}
            if res.memory_mb is not None:
                options["memory"] = res.memory_mb * 2**20
            ref = task.options(name=f"streambench:{spec.run_id}", **options).remote(spec)
            pending[ref] = (spec, number, time.perf_counter())
            progress.started(spec.run_id, number)

        while queue or pending:
            while queue and fits(queue[0][0]):
                submit(*queue.popleft())
            if not pending:
                continue
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                spec, number, started = pending.pop(ref)
                try:
                    measured: Measured = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    error = _ray_error(exc)
                    attempts[spec.run_id].append(Attempt(attempt=number, error=error, wall_s=_since(started)))
                    if number <= self.retries:
                        progress.retrying(spec.run_id, error)
                        queue.appendleft((spec, number + 1))
                    else:
                        records[spec.run_id] = self._finish(
                            spec, None, attempts[spec.run_id], results_dir, progress
                        )
                    continue
                attempts[spec.run_id].append(
                    Attempt(attempt=number, worker=measured.worker, wall_s=_since(started))
                )
                records[spec.run_id] = self._finish(
                    spec, measured, attempts[spec.run_id], results_dir, progress
                )
        return [records[spec.run_id] for spec in specs]


def _ray_error(exc: BaseException) -> str:
    """A Ray failure in one line: the task's own exception where there is one, else Ray's reason."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {cause}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}"[:500]
