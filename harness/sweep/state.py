"""The state of a sweep: which runs the store already holds complete (:func:`split_done`; resume is the
default) and the progress of the whole sweep with an estimate of the time left (:class:`SweepProgress`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from streambench.harness.results.files import ResultFileError
from streambench.harness.runs import registry
from streambench.harness.runs.catalog import has_results
from streambench.harness.sweep.spec import RunSpec

__all__ = ["ProgressSnapshot", "SweepProgress", "split_done"]


def split_done(specs: Sequence[RunSpec], results_dir: Path) -> tuple[list[RunSpec], list[RunSpec]]:
    """(to run, already in the store): a run whose directory holds its complete results is never run
    again; an online run marked incomplete (interrupted, stopped) is run again."""
    todo: list[RunSpec] = []
    done: list[RunSpec] = []
    for spec in specs:
        (done if _complete(results_dir / spec.run_id) else todo).append(spec)
    return todo, done


def _complete(run_dir: Path) -> bool:
    if not has_results(run_dir):
        return False
    for protocol in registry.protocols():
        if not (run_dir / protocol.result_file).is_file():
            continue
        try:
            if protocol.incomplete_reason(protocol.load_result(run_dir)) is not None:
                return False
        except ResultFileError:
            return False  # unreadable: run it again
    return True


class ProgressSnapshot(BaseModel):
    """The whole sweep at one moment. ``eta_s`` is ``None`` until a run of this session has ended."""

    total: int
    done: int = Field(description="finished now or earlier (already in the store)")
    skipped: int = Field(description="of done: already in the store, not run again")
    running: int
    failed: int
    remaining: int = Field(description="not started yet")
    elapsed_s: float
    eta_s: float | None


class SweepProgress:
    """Counts the sweep's runs as executors report them; ``listener(snapshot, message)`` on each change.

    The estimate of time left is the throughput of this session so far (runs ended per second of wall
    time, which includes the executor's parallelism) applied to the runs not ended yet."""

    def __init__(
        self,
        total: int,
        skipped: int = 0,
        listener: Callable[[ProgressSnapshot, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total, self.skipped, self.listener, self._clock = total, skipped, listener, clock
        self._started_at = clock()
        self.running: set[str] = set()
        self.done = self.failed = 0

    def started(self, run_id: str, attempt: int = 1) -> None:
        """An attempt of the run began (Ray: was handed to the scheduler)."""
        self.running.add(run_id)
        self._emit(f"started {run_id}" + (f" (attempt {attempt})" if attempt > 1 else ""))

    def retrying(self, run_id: str, error: str) -> None:
        """An attempt failed and another follows."""
        self.running.discard(run_id)
        self._emit(f"retrying {run_id}: {error}")

    def finished(self, run_id: str, ok: bool) -> None:
        """The run ended: committed to the store (``ok``) or recorded as failed."""
        self.running.discard(run_id)
        if ok:
            self.done += 1
        else:
            self.failed += 1
        self._emit(f"{'done' if ok else 'FAILED'} {run_id}")

    def snapshot(self) -> ProgressSnapshot:
        """The counts now, and the estimate of time left."""
        elapsed = self._clock() - self._started_at
        ended = self.done + self.failed
        remaining = self.total - self.skipped - ended - len(self.running)
        eta = (remaining + len(self.running)) * elapsed / ended if ended and elapsed > 0 else None
        return ProgressSnapshot(
            total=self.total,
            done=self.done + self.skipped,
            skipped=self.skipped,
            running=len(self.running),
            failed=self.failed,
            remaining=remaining,
            elapsed_s=elapsed,
            eta_s=eta,
        )

    def _emit(self, message: str) -> None:
        if self.listener is not None:
            self.listener(self.snapshot(), message)
