"""A simulated clock and serving lanes for the capacity loop's tests (harness/execution/load_generator.py,
batcher.py, capacity_search.py): every worker takes a known service time per batch, so what the loop
does is exact and needs no wall clock."""

from __future__ import annotations

import numpy as np

from streambench.adapters.contract import Frame, Stream
from streambench.adapters.registry import create_adapter
from streambench.harness.execution.capacity_search import SourceStreams
from streambench.harness.execution.load_generator import InProcessLane, PointSetup, assign_least_loaded
from streambench.harness.execution.serving_worker import ServingCore, _decode_batch
from streambench.protocols.capacity import arrival_schedule

CLASSES = ("background", "event")


def _stream(name: str, period_ms: float, frames: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    payloads = rng.normal(size=(frames, 4)).astype(np.float32)
    times = np.arange(1, frames + 1) * period_ms / 1000

    def source() -> list[Frame]:
        return [Frame(index=i, t=float(times[i]), inputs={"audio": payloads[i]}) for i in range(frames)]

    labels = np.zeros((frames, 2), dtype=bool)
    labels[:, 0] = True
    return Stream(name, CLASSES, labels, times, source, ("audio",))


class SimLane:
    """A worker whose batch of B frames takes ``service_ns(B)`` on the simulated clock; it records what it
    was sent (time, keys, frame indices) and serves it with a real adapter in this process."""

    def __init__(self, clock: SimClock, core: ServingCore, service_ns: int, per_frame_ns: int = 0) -> None:
        self.clock, self.core = clock, core
        self.service_ns, self.per_frame_ns = service_ns, per_frame_ns
        self.done_at = 0
        self.sent: list[tuple[int, list[int], list[int]]] = []
        self._reply = b""

    def send(self, message: bytes) -> None:
        items = _decode_batch(message)
        self.sent.append((self.clock.t, [k for k, _, _ in items], [f.index for _, _, f in items]))
        size = len(items)
        del items  # frames of this process the peeker was not handed: it would (rightly) object
        self._reply = self.core.serve(message)
        self.done_at = self.clock.t + self.service_ns + self.per_frame_ns * size

    def receive(self) -> bytes:
        return self._reply

    def fileno(self) -> int | None:
        return -1

    def request(self, message: bytes) -> bytes:
        if message[:1] == b"P":
            self.core.prepare(int.from_bytes(message[1:5], "little"))
        else:
            self.core.reset()
        return b""


class SimClock:
    """Time jumps to the next event: a reply or the loop's own deadline."""

    def __init__(self) -> None:
        self.t = 0

    def now(self) -> int:
        return self.t

    def wait(self, busy: list[SimLane], until: int | None) -> list[SimLane]:  # type: ignore[override]
        events = [lane.done_at for lane in busy] + ([until] if until is not None else [])
        assert events, "the loop waited with nothing to wait for"
        self.t = max(self.t, min(events))
        return [lane for lane in busy if lane.done_at <= self.t]


PEEKER = "streambench.adapters.offenders.cross_stream:CrossStreamPeekerAdapter"


def _core(serving: str, max_batch: int, adapter: str = PEEKER, scan_every: int = 1000) -> ServingCore:
    """The cross-stream peeker by default (an honest model with a batch mode; scanning the process only
    every ``scan_every`` calls, the scan being slow in a test process)."""
    bound = {"classes": CLASSES, "input_dims": {"audio": 4}}
    options = {"scan_every": scan_every} if adapter == PEEKER else {}
    return ServingCore(lambda: create_adapter(adapter, options, data_bound=bound), serving, max_batch)


def reference(serving: str = "replicas", max_batch: int = 1, adapter: str = PEEKER) -> InProcessLane:
    """The worker that replays a point's sessions unloaded: a fresh core of the same adapter, served in
    this process (the unloaded reference of F1, harness/execution/capacity_replay.py)."""
    return InProcessLane(_core(serving, max_batch, adapter))


def _setup(sources: SourceStreams, n: int, duration_ns: int, lanes: int, **kw: object) -> PointSetup:
    schedule = arrival_schedule(n, sources.times_ns, duration_ns, sources.period_ns, int(kw.pop("seed", 0)))
    return PointSetup(
        schedule=schedule,
        lane_of_channel=assign_least_loaded(n, lanes),
        encoded=sources.encoded,
        num_classes=int(kw.pop("num_classes", len(CLASSES))),
        deadline_ns=int(kw.pop("deadline_ns", sources.period_ns)),
        max_batch=int(kw.pop("max_batch", 1)),
        max_wait_ns=int(kw.pop("max_wait_ns", 0)),
        policy=kw.pop("policy", "queue"),  # type: ignore[arg-type]
        max_misses=kw.pop("max_misses", None),  # type: ignore[arg-type]
    )
