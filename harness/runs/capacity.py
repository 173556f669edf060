"""Runs the capacity protocol: how many live streams one machine serves at deadline, with
accuracy held.

A thin layer over its own modules: the plan and score (protocols/capacity.py, capacity_score.py), the
load generator and batcher (harness/execution/load_generator.py, batcher.py), the serving workers
(serving_worker.py, serving_pool.py) and the search (capacity_search.py). The data set's streams are the
sessions the live streams play; the adapter serves in sealed workers by default (``--in-process``: the
load generator's own process, for debugging). Settings: ``--protocol-config FILE`` (a
:class:`~streambench.protocols.capacity.CapacityConfig`: ``deadline_ms``, ``budget_s``, ``serving``,
``replicas``, ``max_batch``, ``max_wait_us``, ...). Writes ``capacity.json``; headline
``capacity@<deadline>ms``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field
from rich.console import Console
from rich.table import Table

from streambench.adapters.contract import AdapterInfo
from streambench.adapters.registry import create_adapter, resolve
from streambench.harness.datasets.catalog import background_class_of, make_streams, make_warmup_stream
from streambench.harness.execution.capacity_search import FreshSources, SourceStreams, run_search
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.execution.load_generator import WallClock
from streambench.harness.execution.sandbox import SandboxRecord
from streambench.harness.execution.sealed_feed import encode_frame
from streambench.harness.execution.serving_pool import PoolRecord, in_process_pool, sealed_pool
from streambench.harness.execution.setup import check_built, data_bound_of
from streambench.harness.io.safe_text import safe
from streambench.harness.report.bundle import SectionSpec
from streambench.harness.results.files import EnvironmentRecord
from streambench.harness.results.headline import Figure
from streambench.harness.runs.capacity_report import capacity_section
from streambench.harness.runs.interface import Outcome, RunContext, RunProtocol
from streambench.protocols import capacity
from streambench.protocols.capacity_score import CapacityScore, f1_columns

__all__ = ["RESULT_FILE", "CapacityProtocol", "CapacityResult", "execute_capacity"]

RESULT_FILE = "capacity.json"


SCHEMA_VERSION = 2
"""2: the unloaded F1 reference, fresh sources, the failure that ended a search, the machine's load (files
of version 1 read as they were: their fields default)."""


class CapacityResult(EnvironmentRecord):
    """``results/<run_id>/capacity.json``, written after every decided point (``score.status``
    ``searching`` until the search ends)."""

    schema_version: int = SCHEMA_VERSION
    adapter_info: AdapterInfo
    config: capacity.CapacityConfig
    run: RunConfig
    score: CapacityScore
    cores: int = Field(description="cores this process may run on")
    leftover_processes: list[str] = Field(default_factory=list)


def execute_capacity(
    run: RunConfig, config: capacity.CapacityConfig, progress: ProgressHook | None = None
) -> tuple[CapacityResult, Path]:
    """Search the capacity of ``run.adapter`` on ``run.data``'s streams; write ``capacity.json`` after every
    decided point and at the end (an OSError names the file and what was measured)."""
    outcome = CapacityProtocol().execute(run, config, progress)
    return outcome.result, outcome.run_dir


def measure_capacity(run: RunContext[capacity.CapacityConfig, CapacityResult]) -> CapacityResult:
    """The search on ``run``'s streams, in sealed workers unless the run says ``--in-process``."""
    streams = run.streams()
    config, f1_rule = _bind_classes(run.config, streams[0].classes, background_class_of(run.run.data))
    n = max(run.run.engine.warmup_frames, 1)
    warmup = [encode_frame(f) for f in make_warmup_stream(run.run.data, n).frames()][:n]
    bound = data_bound_of(streams[0])
    sources = SourceStreams.of(streams)
    fresh = fresh_sources(run.run.data)
    run.adapter_module = resolve(run.run.adapter).__module__  # imported, not built: it runs in its workers
    run.execution_mode = "sealed" if run.run.isolate else "in-process"
    run.environment()  # before the search loads the machine
    writer = _Writer(run)

    def result_of(score: CapacityScore, record: PoolRecord, sandbox: SandboxRecord | None) -> CapacityResult:
        assert record.info is not None
        return run.result(
            sandbox=sandbox,
            adapter_info=record.info,
            config=config,
            run=run.run,
            score=score,
            cores=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
            leftover_processes=[str(p) for p in record.leftover],
        )

    sandbox = None
    if run.run.isolate:
        with sealed_pool(run.run, config, bound, warmup) as (pool, record):
            assert record.info is not None
            check_built(run.run, record.info, streams[0])
            sandbox = SandboxRecord.model_validate(record.sandbox) if record.sandbox else None
            on_point = lambda score: writer.write(result_of(score, record, sandbox))  # noqa: E731
            score = run_search(sources, config, pool, WallClock(), run.progress, fresh, on_point)
    else:
        pool, record = in_process_pool(
            lambda: create_adapter(run.run.adapter, run.run.adapter_options, data_bound=_bound(bound)),
            config,
            warmup,
        )
        assert record.info is not None
        check_built(run.run, record.info, streams[0])
        on_point = lambda score: writer.write(result_of(score, record, None))  # noqa: E731
        score = run_search(sources, config, pool, WallClock(), run.progress, fresh, on_point)
    score.notes.append(f"F1@deadline counts {f1_rule}, as the online protocol's F1@Δt")
    result = result_of(score, record, sandbox)
    writer.write(result)
    return result


def fresh_sources(data: Any) -> FreshSources | None:
    """New streams for every point from a data set that generates them (a ``seed`` field: the synthetic
    and spoof sets), each point's drawn from the run's (secret) seed and the point's salt, enough for every
    session to play one of its own (only the frames a point can release are encoded); None for data read
    from files (its streams are replayed)."""
    fields = type(data).model_fields
    if "seed" not in fields or "num_streams" not in fields or data.seed is None:
        return None

    def make(live: int, duration_s: float, salt: int) -> SourceStreams:
        span = float(data.duration_s) if "duration_s" in fields else duration_s
        per_stream = math.ceil(duration_s / span) + 1
        seed = int(np.random.SeedSequence([int(data.seed), salt]).generate_state(1)[0])
        update = {"seed": seed, "num_streams": live * per_stream}
        drawn = type(data).model_validate({**data.model_dump(), **update})
        return SourceStreams.of(make_streams(drawn), within_ns=round(duration_s * 1e9))

    return make


class _Writer:
    """``capacity.json`` written atomically after every point, then at the end (the run is indexed after
    the last); an OSError says which file, after which point, and what the points measured so far
    decided."""

    def __init__(self, run: RunContext[capacity.CapacityConfig, CapacityResult]) -> None:
        self.run = run

    def write(self, result: CapacityResult) -> Path:
        try:
            return self.run.save(result, index=False)
        except OSError as exc:
            path = self.run.run_dir / RESULT_FILE
            curve = result.score.curve
            decided = ", ".join(f"N = {p.streams} {'passes' if p.passed else 'fails'}" for p in curve)
            after = f"after N = {curve[-1].streams}" if curve else "before any point"
            raise OSError(
                f"could not write {path} {after} ({exc.strerror or exc}): the search stopped there; "
                f"measured so far: {decided or 'nothing'} (capacity at least {result.score.capacity})"
            ) from None


_ENDED = {
    "found": "found",
    "budget": "budget ended first (bracket)",
    "at_least": "reached max_streams (at least)",
    "fixed": "fixed N, no search",
    "searching": "not finished",
    "failed": "the adapter failed (search ended)",
}
"""How a search ended (``CapacityScore.status``), in the sweep report's words."""


def _bind_classes(
    config: capacity.CapacityConfig, classes: tuple[str, ...], background: str | None
) -> tuple[capacity.CapacityConfig, str]:
    """The configuration with the data-bound ``classes`` and ``background_class`` filled (F1 counts the
    classes online's F1 counts: capacity_score.f1_columns) and the rule in words; a ValueError names a bad
    ``classes`` or ``exclude_classes`` before anything runs."""
    if config.classes is not None and tuple(config.classes) != tuple(classes):
        raise ValueError(
            f"classes: {list(config.classes)} are not the data's {list(classes)} (leave it unset)"
        )
    bound = config.model_copy(
        update={"classes": tuple(classes), "background_class": config.background_class or background}
    )
    return bound, f1_columns(bound, len(classes))[1]


def _bound(bound: dict[str, Any]) -> dict[str, Any]:
    return {"classes": tuple(bound["classes"]), "input_dims": dict(bound["input_dims"])}


def headline_figures(result: CapacityResult) -> list[Figure]:
    """``capacity@<deadline>ms``: the largest number of live streams served at deadline, accuracy held."""
    score = result.score
    low, high = score.interval
    return [
        Figure(
            key=f"capacity@{score.deadline_ms:g}ms",
            label=f"live streams served at {score.deadline_ms:g} ms ({result.config.serving}"
            + (", sources replayed)" if score.sources == "replayed" and result.schema_version >= 2 else ")"),
            unit="",
            better="higher",
            value=float(score.capacity),
            low=float(low),
            high=None if high is None else float(high),
            n_frames=sum(p.frames for p in score.curve),
        )
    ]


def print_result(console: Console, result: CapacityResult) -> int:
    score, config = result.score, result.config
    low, high = score.interval
    where = "exactly" if high == low else f"in [{low}, {'?' if high is None else high}]"
    serving = (
        f"replicas x {config.replicas}" if config.serving == "replicas" else f"batched <= {config.max_batch}"
    )
    console.print(
        f"[bold]Capacity[/] · adapter {safe(result.adapter)} · {serving} · "
        f"deadline {score.deadline_ms:g} ms · [bold]{score.capacity}[/] live streams "
        f"({where}; {score.status})",
        highlight=False,
    )
    table = Table(title_justify="left")
    for name in ("N", "verdict", "frames", "miss %", "bound %", "p50 ms", "p99 ms", "F1", "frames/s"):
        table.add_column(name, justify="left" if name == "verdict" else "right")
    for p in score.curve:
        table.add_row(
            str(p.streams),
            safe(p.verdict),
            str(p.frames),
            f"{100 * p.miss_rate:.2f}",
            f"{100 * p.miss_rate_bound:.2f}",
            "—" if p.response_p50_ms is None else f"{p.response_p50_ms:.2f}",
            "—" if p.response_p99_ms is None else f"{p.response_p99_ms:.2f}",
            "—" if p.f1 is None else f"{p.f1:.4f}",
            f"{p.served_fps:.0f}",
        )
    console.print(table)
    lines = _verdict_lines(result)
    for note in score.notes:
        if not note.startswith(("load-bound", "the adapter failed", "sources replayed")):  # in lines below
            console.print(f"[dim]{safe(note)}[/]", highlight=False)
    for line in lines:
        console.print(line, highlight=False, soft_wrap=True)
    return 1 if score.failure is not None else 0


def _verdict_lines(result: CapacityResult) -> list[str]:
    """What the reader must not miss, one line each: the failure that ended the search, sources replayed
    across sessions, the machine's load bounding the figure, F1 held against what."""
    score = result.score
    lines = []
    if score.failure is not None:
        failure = score.failure
        lines.append(
            f"[bold red]adapter failure[/] at {safe(failure.where())}: {safe(failure.error_type)}: "
            f"{safe(failure.message)} (in capacity.json; the points before it are kept)"
        )
    if score.sources == "replayed" and result.schema_version >= SCHEMA_VERSION:
        lines.append(
            "[yellow]sources replayed[/]: the data set's streams were played again across live sessions; a "
            "model that caches answers by content across sessions could gain (figure marked replayed)"
        )
    bound = score.interference
    if bound is not None and bound.bound_by == "machine load":
        lines.append(f"[yellow]load-bound[/]: {safe(bound.reason or '')}")
    if score.f1_reference == "none":
        lines.append("[yellow]F1 not held[/]: no unloaded reference was measured")
    return lines


class CapacityProtocol(RunProtocol[capacity.CapacityConfig, CapacityResult]):
    name = "capacity"
    summary = "live streams served at deadline (LoadGen's bound), accuracy held"
    result_file = RESULT_FILE
    result_model = CapacityResult
    config_model = capacity.CapacityConfig
    config_file = True
    figure_keys = (r"capacity@[0-9.]+ms", "capacity@<deadline>ms")
    caption = "capacity: the largest N whose deadline-miss bound (99 %) is <= 1 % and F1@deadline held"
    run_options = frozenset({"isolate", "sealed"})
    sweepable = True
    sweep_headline_timed = True
    """Capacity is the machine's figure: the sweep report shows it per environment fingerprint."""

    def measure(self, run: RunContext[capacity.CapacityConfig, CapacityResult]) -> CapacityResult:
        return measure_capacity(run)

    def print_result(self, console: Console, outcome: Outcome[CapacityResult]) -> int:
        return print_result(console, outcome.result)

    def headline(self, result: CapacityResult) -> list[Figure]:
        return headline_figures(result)

    def report_sections(self) -> tuple[SectionSpec, ...]:
        return (SectionSpec("capacity", "Capacity", capacity_section),)

    def sweep_row(
        self, figures: dict[str, float | None], point: str | None
    ) -> tuple[dict[str, float | None], dict[str, float | None]]:
        """Nothing for the hardware-independent table or the latency speed-ups: the sweep report shows
        capacity per fingerprint, against the knobs (:meth:`sweep_headline`)."""
        return {}, {}

    def sweep_headline(self, result: CapacityResult) -> tuple[Figure, str]:
        """``capacity@<deadline>ms`` with its interval, and how the search ended."""
        return headline_figures(result)[0], _ENDED[result.score.status]

    def incomplete_reason(self, result: CapacityResult) -> str | None:
        """A search that stopped before its end (its file written after its last decided point)."""
        if result.score.status != "searching":
            return None
        curve = result.score.curve
        return f"the search stopped after N = {curve[-1].streams}" if curve else "the search stopped"

    def warnings(self, result: CapacityResult) -> list[str]:
        starts = ("CPU-bound", "the budget", "the adapter failed", "sources replayed", "load-bound")
        return [n for n in result.score.notes if n.startswith(starts)]
