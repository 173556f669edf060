"""The workers of a capacity search: K sealed serving workers (replicas) or one batching worker,
each started in its own sandbox (harness/execution/sandbox.py, the run's policy: the data set, the
results store and a baseline denied) and warmed up on the public warm-up stream, or the same served in
this process (``--in-process``: tests, and the dispatcher's own cost); and one more, the *reference*
worker, that replays sessions unloaded and serves no loaded point (harness/execution/capacity_replay.py).

The run's isolation limits reach every worker: ``--memory-limit-mb`` caps what the adapter may add to its
worker once built (RLIMIT_AS, as the isolated worker's), ``--frame-timeout`` ends a batch (or a replayed
frame) not answered in time (the load generator's timeout; the worker is then ended) and a reply cut off
mid-message (harness/execution/serving_lanes.py reads the workers as untrusted input)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from streambench.adapters.contract import Adapter, AdapterInfo
from streambench.harness.execution.capacity_search import ServingPool
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.process_tree import LeftoverProcess
from streambench.harness.execution.sandbox import discard, sandbox_policy
from streambench.harness.execution.serving_lanes import InProcessLane, SealedLane, ServingTimeout
from streambench.harness.execution.serving_worker import ServingCore, ServingError, ServingSpec
from streambench.protocols.capacity import CapacityConfig

__all__ = ["PoolRecord", "in_process_pool", "sealed_pool"]


class PoolRecord:
    """What the pool learnt: the adapter's info, the sandbox of its workers, what they left running."""

    def __init__(self) -> None:
        self.info: AdapterInfo | None = None
        self.sandbox: dict[str, Any] | None = None
        self.leftover: list[LeftoverProcess] = []
        self.mode = "sealed"


@contextlib.contextmanager
def sealed_pool(
    run: RunConfig, config: CapacityConfig, data_bound: dict[str, Any], warmup: Sequence[bytes]
) -> Iterator[tuple[ServingPool, PoolRecord]]:
    """``config.lanes()`` sealed serving workers of ``run.adapter``, each warmed up on ``warmup`` (encoded
    frames); closed, with their sandboxes' directories, on the way out. A batch size the adapter refuses
    is a ValueError naming ``max_batch``."""
    spec = ServingSpec(
        adapter=run.adapter,
        adapter_options=run.adapter_options,
        data_bound=data_bound,
        threads=run.threads,
        torch_seed=run.torch_seed,
        serving=config.serving,
        max_batch=config.lane_batch(),
        memory_limit_mb=run.isolation.memory_limit_mb,
    )
    record = PoolRecord()
    lanes: list[SealedLane] = []
    policies = []
    interrupted = False  # by an exception (Ctrl-C, a failed point): the lanes end without the 5 s wait
    pool: ServingPool | None = None
    try:
        reference = config.f1_reference == "unloaded"
        for _ in range(config.lanes() + reference):  # the reference worker last
            policy = sandbox_policy(run)
            policies.append(policy)
            sandbox = json.dumps({"policy": policy.model_dump(), "mode": run.isolation.sandbox})
            try:
                lane = SealedLane(spec, sandbox, run.isolation.start_timeout_s, run.isolation.frame_timeout_s)
                lanes.append(lane)
                lane.warm(warmup)
            except (ServingError, ServingTimeout) as exc:  # before any point: a clear error, as run's
                raise ValueError(
                    f"adapter {run.adapter!r}: its serving worker failed while starting or warming up: {exc}"
                ) from None
        record.info, record.sandbox = lanes[0].info, lanes[0].sandbox
        serving = lanes[: config.lanes()]
        pool = ServingPool(
            serving,
            lambda k, message: serving[k].request(message),
            [lane.process.pid for lane in serving],
            reference=lanes[-1] if reference else None,
            timeout_s=run.isolation.frame_timeout_s,
        )
        yield pool, record
    except BaseException:
        interrupted = True
        raise
    finally:
        broken = interrupted or (pool is not None and pool.broken)
        for lane in lanes:
            record.leftover.extend(lane.close(at_once=broken))
        for policy in policies:
            discard(policy)


def in_process_pool(
    build: Callable[[], Adapter], config: CapacityConfig, warmup: Sequence[bytes]
) -> tuple[ServingPool, PoolRecord]:
    """The same workers served in this process (one core each, in turn): ``config.lanes()`` cores of
    ``build``'s adapter, warmed up, and the reference core (a separate instance; what the adapter keeps at
    class level is shared in one process)."""
    record = PoolRecord()
    record.mode = "in-process"
    lanes = []
    for _ in range(config.lanes() + (config.f1_reference == "unloaded")):  # the reference worker last
        core = ServingCore(build, config.serving, config.lane_batch())
        core.warm(warmup, config.lane_batch())
        lanes.append(InProcessLane(core))
    record.info = lanes[0].core.adapter.info
    serving = lanes[: config.lanes()]
    reference = lanes[-1] if len(lanes) > len(serving) else None
    return ServingPool(serving, lambda k, message: serving[k].request(message), reference=reference), record
