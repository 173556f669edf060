"""How long the runs of a sweep that the store lacks will take, from what the store measured before
(``streambench sweep --dry-run``). Never a guess: a run with no measured basis has no estimate,
only the reason.

The model, per run: ``start-up + frames × cost per frame``.

* *cost per frame*: of the store's finished sweep runs of the same adapter, adapter options and
  protocol, each run's wall time inside its worker (``sweep.json``: ``measured_wall_s``) divided by the
  frames its data held; the median of them. The run to estimate is scaled by its own data's frames.
  Where a data set's frame count is known only once its files are read, a stored run on exactly the same
  data gives its wall time unscaled.
* *start-up*: what the executor adds to each run (a fresh process, imports, the scheduler): the driver's
  wall time of a finished attempt less the worker's, median over the store's runs of the same executor;
  not added (and said so) when the store has none.

The frames of a run are the scored streams' frames plus the warm-up frames (synthetic data:
``num_streams × num_frames``). The estimate is of the runs one after another, as the local executor
runs them; a Ray cluster running several at once takes less.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from streambench.harness.execution.config import RunConfig
from streambench.harness.sweep.executors import SWEEP_FILE, SweepRecord
from streambench.harness.sweep.spec import RunSpec

__all__ = ["Estimate", "SweepEstimate", "estimate_runs", "planned_frames", "stored_records"]


def planned_frames(run: RunConfig) -> int | None:
    """Frames a run feeds (scored streams and warm-up), when the configuration says (``None``: only the
    data's files would tell)."""
    streams = getattr(run.data, "num_streams", None)
    frames = getattr(run.data, "num_frames", None)
    if isinstance(streams, int) and isinstance(frames, int):
        return streams * frames + run.engine.warmup_frames
    return None


def _key(spec: RunSpec) -> tuple[str, str, str]:
    return spec.run.adapter, json.dumps(spec.run.adapter_options, sort_keys=True, default=str), spec.protocol


def _data(spec: RunSpec) -> str:
    return spec.run.data.model_dump_json()


def stored_records(results_dir: Path) -> list[SweepRecord]:
    """The store's finished sweep runs that measured their wall time (unreadable records left out)."""
    records = []
    for path in sorted(results_dir.glob(f"*/{SWEEP_FILE}")) if results_dir.is_dir() else []:
        try:
            record = SweepRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError):
            continue
        if record.status == "done" and record.measured_wall_s is not None:
            records.append(record)
    return records


def _startup(record: SweepRecord) -> float | None:
    wall = next((a.wall_s for a in reversed(record.attempts) if a.error is None), None)
    if wall is None or record.measured_wall_s is None:
        return None
    return max(wall - record.measured_wall_s, 0.0)


@dataclass(frozen=True)
class Estimate:
    """One run's estimate in seconds (``None``: none, see ``reason``); ``unmeasured``: the adapter and
    protocol the store has no timed run of (``None`` when that is not why)."""

    seconds: float | None
    reason: str | None = None
    unmeasured: str | None = None


@dataclass(frozen=True)
class SweepEstimate:
    """Every run's estimate (by run id), the start-up added to each (``None``: none measured) and the
    number of stored runs the costs came from."""

    runs: dict[str, Estimate]
    startup_s: float | None
    basis: int

    @property
    def known_s(self) -> float:
        """The sum of the runs that have an estimate."""
        return sum(e.seconds for e in self.runs.values() if e.seconds is not None)

    def unknown(self) -> dict[str, str]:
        """Run id -> why it has no estimate."""
        return {k: e.reason or "no estimate" for k, e in self.runs.items() if e.seconds is None}

    def reasons(self) -> list[str]:
        """Why the runs without an estimate have none, each reason once: the adapters and protocols the
        store never timed in one sentence, any other reason after it."""
        unmeasured = sorted({e.unmeasured for e in self.runs.values() if e.seconds is None and e.unmeasured})
        others = sorted(
            {e.reason for e in self.runs.values() if e.seconds is None and not e.unmeasured and e.reason}
        )
        lead = (
            [f"the store has no timed run (same adapter options) of {', '.join(unmeasured)}"]
            if unmeasured
            else []
        )
        return lead + others


def _one(spec: RunSpec, same: Sequence[SweepRecord], startup: float) -> Estimate:
    if not same:
        what = f"{spec.run.adapter} under {spec.protocol}"
        return Estimate(
            None, f"no finished run of {what} (these options) in the store records its time", what
        )
    frames = planned_frames(spec.run)
    costs = [
        r.measured_wall_s / n
        for r in same
        if r.measured_wall_s is not None and (n := planned_frames(r.spec.run)) is not None and n > 0
    ]
    if frames is not None and costs:
        return Estimate(startup + frames * statistics.median(costs))
    walls = [
        r.measured_wall_s for r in same if _data(r.spec) == _data(spec) and r.measured_wall_s is not None
    ]
    if walls:
        return Estimate(startup + statistics.median(walls))
    return Estimate(
        None,
        f"the frames of {spec.run.data.kind!r} data are known only once its files are read, and no "
        "stored run used the same data",
    )


def estimate_runs(specs: Sequence[RunSpec], results_dir: Path, executor: str) -> SweepEstimate:
    """The estimate of each of ``specs`` from the store under ``results_dir`` (module docstring);
    ``executor`` is the name the executor records (``local``, ``local-isolated``, ``ray``)."""
    records = stored_records(results_dir)
    startups = [s for r in records if r.executor == executor and (s := _startup(r)) is not None]
    startup = statistics.median(startups) if startups else None
    by_key: dict[tuple[str, str, str], list[SweepRecord]] = {}
    for record in records:
        by_key.setdefault(_key(record.spec), []).append(record)
    runs = {s.run_id: _one(s, by_key.get(_key(s), []), startup or 0.0) for s in specs}
    return SweepEstimate(runs=runs, startup_s=startup, basis=len(records))
