"""The model under test as a protocol's run sees it: sealed in a worker by default, or in this process
(sealed is the default for every protocol that runs a model).

:func:`open_runner` gives a :class:`ModelRunner` whose ``run_stream(stream)`` feeds any stream this
process holds (a clean, perturbed or occluded one) to the adapter and returns its recording:

- ``sealed`` (``RunConfig.isolate`` and ``isolation.sealed``, the default): a sealed worker
  (:class:`streambench.harness.execution.isolation.IsolatedEngine`): the frames one at a time, the labels and
  the stream's id never sent, every frame timed on this process's clock too;
- ``in-process`` (``--in-process``): the engine here, with the adapter built here (for debugging; the
  model can reach the harness's clock, data and labels, and the result says ``in-process``).

A protocol that needs the worker to hold the data set (``--no-sealed``) runs in process: holding the
data is what sealing takes away, and these protocols feed streams they build themselves.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Literal

from streambench.adapters.contract import AdapterInfo, Stream
from streambench.adapters.registry import resolve
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.sealed_feed import Extra, StreamsToFeed
from streambench.harness.execution.setup import build_adapter, check_built
from streambench.protocols.recording import StreamRecording, StreamRole

__all__ = ["ExecutionMode", "ModelRunner", "execution_mode", "open_runner", "recorded"]

ExecutionMode = Literal["in-process", "isolated", "sealed"]


def execution_mode(config: RunConfig) -> ExecutionMode:
    """Where ``config`` runs the adapter of a protocol that feeds its own streams."""
    return "sealed" if config.isolate and config.isolation.sealed else "in-process"


@dataclasses.dataclass
class ModelRunner:
    """``run_stream(stream, role)``: the stream's recording (its state reset first); ``warmup_frames``:
    the frames the adapter was warmed up on; ``record``: the prediction fields recorded."""

    run_stream: Callable[[Stream, StreamRole], StreamRecording]
    info: AdapterInfo
    module: str  # the adapter class's module (its git commit goes into the manifest)
    mode: ExecutionMode
    warmup_frames: int
    worker: IsolatedEngine | None = None
    record: tuple[Extra, ...] = ()


def recorded(config: RunConfig, declared: tuple[Extra, ...], info: AdapterInfo) -> tuple[Extra, ...]:
    """``EngineConfig.record``, and the fields of ``declared`` the adapter declares as capabilities."""
    extra = tuple(name for name in declared if name in info.capabilities and name not in config.engine.record)
    return (*config.engine.record, *extra)


@contextlib.contextmanager
def open_runner(
    config: RunConfig,
    sample: Stream,
    warmup: Stream | None,
    *,
    own_streams: bool = False,
    record_declared: tuple[Extra, ...] = (),
) -> Iterator[ModelRunner]:
    """The adapter of ``config``, built and warmed up (on ``warmup`` in process; a sealed worker warms up
    on its own copy of the run's warm-up stream), checked against ``sample``'s classes and framing.

    ``own_streams``: the protocol feeds streams it builds, not the run's data set; ``sample`` and
    ``warmup`` are its own (the sealed worker's data-bound options and warm-up come from them).
    ``record_declared``: prediction fields to record besides ``EngineConfig.record`` when the adapter
    declares them (``"weights"`` for the hysteresis protocol, seed 001)."""
    if execution_mode(config) == "sealed":
        feed = StreamsToFeed([sample], warmup) if own_streams else None
        with IsolatedEngine(config, config.isolation, feed=feed) as worker:
            worker.warm_up()
            check_built(config, worker.info, sample)
            record = recorded(config, record_declared, worker.info)

            def run_sealed(stream: Stream, role: StreamRole = "test") -> StreamRecording:
                return worker.run(stream, role, record=record)

            module = resolve(config.adapter).__module__
            yield ModelRunner(
                run_sealed, worker.info, module, "sealed", worker.warmup_frames_run, worker, record
            )
        return
    adapter = build_adapter(config, sample)
    record = recorded(config, record_declared, adapter.info)
    engine = Engine(adapter, config.engine.model_copy(update={"record": record}))
    frames = engine.warm_up(warmup) if warmup is not None else 0

    def run_here(stream: Stream, role: StreamRole = "test") -> StreamRecording:
        return engine.run_stream(stream, role)

    yield ModelRunner(run_here, adapter.info, type(adapter).__module__, "in-process", frames, record=record)
