"""The sweep's driver: expand a sweep file, skip every run the store holds already (resuming
is the default: a finished sweep runs nothing), hand the rest to an executor
(:mod:`streambench.harness.sweep.executors`) and return what happened. ``streambench sweep``
(harness/cli/sweep.py) adds the progress line and the report around it. SIGINT and SIGTERM stop the sweep at
once (:mod:`streambench.harness.sweep.interrupts`):
:class:`~streambench.harness.sweep.interrupts.SweepInterrupted`, with where the sweep stood.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from streambench.harness.sweep.executors import Executor, LocalExecutor, SweepRecord
from streambench.harness.sweep.interrupts import SweepInterrupted, sweep_signals
from streambench.harness.sweep.ray_executor import RayExecutor
from streambench.harness.sweep.spec import SweepError, SweepFile, expand
from streambench.harness.sweep.state import ProgressSnapshot, SweepProgress, split_done

__all__ = ["SweepOutcome", "make_executor", "run_sweep"]


class SweepOutcome(BaseModel):
    """One invocation of a sweep: what was run now, what the store held already, how long it took."""

    total: int
    skipped: list[str] = Field(description="run ids already in the store, not run again")
    records: list[SweepRecord] = Field(description="the runs of this invocation, done or failed")
    wall_s: float

    @property
    def failed(self) -> list[SweepRecord]:
        """The runs recorded as failed (every attempt failed)."""
        return [r for r in self.records if r.status == "failed"]


def run_sweep(
    sweep: SweepFile,
    executor: Executor,
    results_dir: Path | None = None,
    listener: Callable[[ProgressSnapshot, str], None] | None = None,
    source: str = "sweep file",
) -> SweepOutcome:
    """Expand the sweep, skip the runs already in the store (resume is the default), run the rest."""
    results_dir = results_dir if results_dir is not None else sweep.sweep.output_dir
    results_dir.mkdir(parents=True, exist_ok=True)
    specs = expand(sweep, source)
    todo, done = split_done(specs, results_dir)
    progress = SweepProgress(len(specs), skipped=len(done), listener=listener)
    started = time.perf_counter()
    try:
        with sweep_signals():
            records = executor.run(todo, results_dir, progress) if todo else []
    except SweepInterrupted as exc:  # the runs that were running are discarded; the ended ones are kept
        exc.running, exc.ended = sorted(progress.running), progress.done + progress.failed
        raise
    return SweepOutcome(
        total=len(specs),
        skipped=[s.run_id for s in done],
        records=records,
        wall_s=time.perf_counter() - started,
    )


def make_executor(name: str, retries: int, address: str | None = None, isolate: bool = True) -> Executor:
    """``local`` or ``ray``; errors name the option. ``isolate`` (local; the default): each run in a
    process of its own, so a run that crashes (``os._exit``, a segfault) costs that run only."""
    if name == "local":
        if address is not None:
            raise SweepError("--address applies to --executor ray, not local")
        return LocalExecutor(retries=retries, isolate=isolate)
    if name == "ray":
        return RayExecutor(retries=retries, address=address)
    raise SweepError(f"--executor {name!r}: expected local or ray")
