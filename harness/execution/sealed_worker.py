"""The sealed worker: the adapter's process knows only what the model needs.

DESIGN.md "Causality": "the worker is told only what the model needs". A sealed worker gets a
:class:`WorkerSpec` — the adapter reference and its options, the data-bound ``classes`` and
``input_dims``, the engine's settings, the thread settings and the model's torch seed — and never the
run configuration: no data set, no paths, no data seed, no protocol, no output directory, no stream id
(each fed stream is named by a fresh opaque token,
:func:`streambench.harness.execution.sealed_feed.stream_header`). Every frame, warm-up included, comes from
the parent one at a time (:mod:`streambench.harness.execution.sealed_feed`).

Start-up, in order, each step timed by the parent (:mod:`streambench.harness.execution.host_timing`):

1. imports of the harness's engine, then the pipe's floor: ``calibration`` frames of the data set's
   shapes (noise, not data) fed to the null adapter, before anything of the model's can run (the worker
   started with no start-up hook: harness/execution/worker_paths.py);
2. the adapter's directories put first on the path and the site directories' ``.pth`` files run, then
   the model's import and construction, then its warm-up on the frames the parent serves;
3. ``ready``, then requests (:class:`streambench.harness.execution.isolation_worker.RequestServer`).
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from streambench.adapters.contract import Adapter
from streambench.harness.execution.engine import EngineConfig
from streambench.harness.execution.isolation_worker import (
    IDLE,
    Start,
    WorkerAdapter,
    bind_to_parent,
    describe,
    sealed_stream,
    send,
    serve,
)
from streambench.harness.execution.output_commits import Outbox
from streambench.harness.execution.worker_paths import WorkerPaths, open_adapter_paths
from streambench.harness.instruments.threads import ThreadConfig

__all__ = ["WorkerSpec", "sealed_main"]


class WorkerSpec(BaseModel):
    """Everything a sealed worker is told (and nothing else: the layering test names these fields)."""

    model_config = ConfigDict(extra="forbid")

    adapter: str = Field(description="registry name or module:Class")
    adapter_options: dict[str, Any] = Field(default_factory=dict)
    data_bound: dict[str, Any] = Field(description="classes and input_dims, as the data set fixes them")
    engine: EngineConfig
    threads: ThreadConfig
    torch_seed: int = Field(description="the model's seed (torch), not the data's")
    memory_limit_mb: int | None = None
    calibration: dict[str, Any] | None = Field(
        None, description="the header of the floor's stream (noise frames of the data's shapes)"
    )
    warmup: dict[str, Any] | None = Field(None, description="the warm-up stream's header (a token)")


def sealed_main(spec_json: str, conn: Connection, slot: Any, paths: WorkerPaths | None = None) -> None:
    """Entry point of a sealed worker (a plain child: harness/execution/worker_process.py
    ``start_sealed_worker``, after its bootstrap entered the sandbox). ``paths``: where the adapter's code
    is found, opened once the floor is calibrated (None: the path as it stands)."""
    bind_to_parent()
    if spec_json.startswith("serving:"):  # the capacity protocol's serving worker
        from streambench.harness.execution.serving_worker import serving_main

        if paths is not None:
            open_adapter_paths(paths)
        return serving_main(spec_json.removeprefix("serving:"), conn, slot)
    try:
        from streambench.adapters.registry import create_adapter
        from streambench.harness.execution.engine import Engine
        from streambench.harness.execution.torch_setup import configure_torch_when_imported

        spec = WorkerSpec.model_validate_json(spec_json)
        torch_configured = configure_torch_when_imported(spec.threads, spec.torch_seed)
        classes = tuple(spec.data_bound["classes"])
        bound = {"classes": classes, "input_dims": dict(spec.data_bound["input_dims"])}
        outbox = Outbox(len(classes))  # every output committed as it comes (output_commits.py)
        if spec.calibration is not None:  # the pipe's floor, before the model exists in this process
            plain = spec.engine.model_copy(update={"record": (), "pacing": "unpaced", "cpu_time": "off"})
            null = WorkerAdapter(create_adapter("null", data_bound={"classes": classes}), slot, outbox)
            Engine(null, plain).run_stream(sealed_stream(conn, spec.calibration, classes, outbox))
            slot[0] = IDLE
        if paths is not None:  # only now: the adapter's directories, and the site directories' .pth files
            open_adapter_paths(paths)
        warmup = sealed_stream(conn, spec.warmup, classes, outbox) if spec.warmup is not None else None

        def build() -> Adapter:
            return create_adapter(spec.adapter, spec.adapter_options, data_bound=bound)

    except Exception as exc:
        send(conn, {"kind": "failed", **describe(exc)})
        return
    start = Start(build, warmup, spec.engine, torch_configured, spec.memory_limit_mb, outbox)
    serve(conn, slot, start, {}, lambda request: sealed_stream(conn, request["stream"], classes, outbox))
