"""The workers of a capacity search (issue 28): K sealed serving workers (replicas) or one batching worker,
each started in its own sandbox (harness/execution/sandbox.py, the run's policy: the data set, the
results store and a baseline denied) and warmed up on the public warm-up stream, or the same served in
this process (``--in-process``: tests, and the dispatcher's own cost)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from streambench.adapters.contract import Adapter, AdapterInfo
from streambench.harness.execution.capacity_search import ServingPool
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.load_generator import InProcessLane, SealedLane
from streambench.harness.execution.process_tree import LeftoverProcess
from streambench.harness.execution.sandbox import discard, sandbox_policy
from streambench.harness.execution.serving_worker import ServingCore, ServingSpec
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
    )
    record = PoolRecord()
    lanes: list[SealedLane] = []
    policies = []
    interrupted = False  # by an exception (Ctrl-C, a failed point): the lanes end without the 5 s wait
    try:
        for _ in range(config.lanes()):
            policy = sandbox_policy(run)
            policies.append(policy)
            sandbox = json.dumps({"policy": policy.model_dump(), "mode": run.isolation.sandbox})
            lane = SealedLane(spec, sandbox, run.isolation.start_timeout_s)
            lanes.append(lane)
            lane.warm(warmup)
        record.info, record.sandbox = lanes[0].info, lanes[0].sandbox
        pool = ServingPool(
            lanes, lambda k, message: lanes[k].request(message), [lane.process.pid for lane in lanes]
        )
        yield pool, record
    except BaseException:
        interrupted = True
        raise
    finally:
        for lane in lanes:
            record.leftover.extend(lane.close(at_once=interrupted))
        for policy in policies:
            discard(policy)


def in_process_pool(
    build: Callable[[], Adapter], config: CapacityConfig, warmup: Sequence[bytes]
) -> tuple[ServingPool, PoolRecord]:
    """The same workers served in this process (one core each, in turn): ``config.lanes()`` cores of
    ``build``'s adapter, warmed up."""
    record = PoolRecord()
    record.mode = "in-process"
    lanes = []
    for _ in range(config.lanes()):
        core = ServingCore(build, config.serving, config.lane_batch())
        core.warm(warmup, config.lane_batch())
        lanes.append(InProcessLane(core))
    record.info = lanes[0].core.adapter.info
    return ServingPool(lanes, lambda k, message: lanes[k].request(message)), record
