"""An exception out of a capacity search (Ctrl-C, a failed point) ends the sealed serving workers at once
(harness/execution/serving_pool.py, ``SealedLane.close(at_once=True)``): a worker inside a batch reads no
stop request before the batch's end, so asking each of K workers first added up to 5 s per worker. A
search that ends normally still asks each worker to stop. The test spies on the requests sent, not on the
wall time, so that a loaded machine cannot decide it."""

from __future__ import annotations

from typing import Any

import psutil
import pytest

from streambench.harness.datasets.synthetic import SyntheticConfig, make_streams
from streambench.harness.execution import load_generator
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.serving_pool import sealed_pool
from streambench.harness.execution.setup import data_bound_of
from streambench.protocols.capacity import CapacityConfig

DATA = SyntheticConfig(seed=11, num_streams=1, duration_s=1)


class _SpiedConnection:
    """The lane's pipe, recording what the parent sends on it."""

    def __init__(self, conn: Any, sent: list[bytes]) -> None:
        self._conn, self._sent = conn, sent

    def send_bytes(self, data: bytes) -> None:
        self._sent.append(bytes(data))
        self._conn.send_bytes(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def _pool_workers(raise_inside: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[bytes], list[int]]:
    """Two replicas of the null adapter and the reference worker (the unloaded replay's); the requests sent
    to them and their pids."""
    sent: list[bytes] = []
    pids: list[int] = []
    real_close = load_generator.SealedLane.close

    def spied_close(lane: load_generator.SealedLane, at_once: bool = False) -> Any:
        lane.conn = _SpiedConnection(lane.conn, sent)  # type: ignore[assignment]
        pids.append(lane.process.pid)
        return real_close(lane, at_once) if at_once else real_close(lane)

    monkeypatch.setattr(load_generator.SealedLane, "close", spied_close)
    streams = make_streams(DATA)
    run = RunConfig(adapter="null", data=DATA)
    config = CapacityConfig(serving="replicas", replicas=2)
    try:
        with sealed_pool(run, config, data_bound_of(streams[0]), []) as (_pool, record):
            assert record.info is not None and record.info.name == "null"
            if raise_inside:
                raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    return sent, pids


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@pytest.mark.processes
def test_an_interrupted_search_ends_its_workers_without_asking_them(monkeypatch: pytest.MonkeyPatch) -> None:
    sent, pids = _pool_workers(raise_inside=True, monkeypatch=monkeypatch)
    assert len(pids) == 3 and all(_gone(pid) for pid in pids)
    assert b"C" not in sent, "a stop request, and its wait of up to 5 s, per worker of an interrupted search"


@pytest.mark.processes
def test_a_search_that_ends_normally_asks_each_worker_to_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    sent, pids = _pool_workers(raise_inside=False, monkeypatch=monkeypatch)
    assert len(pids) == 3 and all(_gone(pid) for pid in pids)
    assert sent == [b"C", b"C", b"C"]
