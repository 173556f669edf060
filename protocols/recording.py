"""What a run records for each stream: the raw material every protocol scores.

The engine fills one :class:`StreamRecording` per stream; protocols compute metrics from it without
calling a model, so a saved run can be re-scored (``../shared/DESIGN.md``, "Layout").
Times are integers in nanoseconds on the stream clock (``frame_times_ns``, each the nearest ns to the
true time) so that delay windows such as ``0 <= delay <= 200 ms`` are compared on integers, never through
float arithmetic, with the 1 ns rounding tolerance of protocols/metrics/delay.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

StreamRole = Literal["test", "validation"]

_ARRAY_FIELDS = (
    "frame_times_ns",
    "labels",
    "latency_ns",
    "emitted_at",
    "refers_to",
    "scores",
)


@dataclass(slots=True)
class StreamRecording:
    """The outputs of one stream, in emission order.

    - ``frame_times_ns`` ``[T]`` int64: arrival time of each frame (end of its capture interval).
    - ``t0_ns``: start of the stream's first capture interval.
    - ``labels`` ``[T, C]`` bool: the reference, multi-hot over the stream's classes.
    - ``latency_ns`` ``[T]`` int64: host wall time of each ``predict()`` call.
    - ``emitted_at`` ``[P]`` int64: index of the frame whose ``predict()`` returned prediction p.
    - ``refers_to`` ``[P]`` int64: index of the frame prediction p labels.
    - ``scores`` ``[P, C]`` float32: the per-class scores of prediction p.
    - ``stage_ns``: host time per named stage inside ``predict()``, summed over the stream.
    - ``paced_start_ns`` ``[T]`` int64 (paced runs only): when each ``predict()`` started on the stream
      clock relative to ``t0`` (frames are released at their arrival time); ``-1`` for a frame the
      pacer dropped (``paced_policy`` "drop"), whose latency is then 0 and not a measurement.
    - ``device_ns`` ``[T]`` int64 (CUDA adapters only): device time of each ``predict()`` from a CUDA
      event pair recorded around it.
    - ``server_ns`` ``[T]`` int64 (adapters of a served model only, their
      :class:`~streambench.adapters.contract.ServerTimes`): the server's own model-only time of each frame
      as its reply stated it, -1 where it stated none; the engine's ``latency_ns`` of such an adapter is
      the frame's end-to-end time on the client's clock.
    - ``features`` ``[P, K]`` and ``weights`` ``[P, M]`` (only when the engine was asked to record them,
      ``EngineConfig.record``): ``Prediction.features`` (top-k indices, or an activation vector) and
      ``Prediction.weights`` (a distribution over domains) of prediction p, for the stability and router
      protocols (seeds 000, 001).
    - ``beyond_end``: predictions dropped because their ``refers_to`` lay at or beyond the stream's end
      (an anticipating model cannot know where a stream ends; not an error, but counted).
    - ``cpu_ns`` ``[T]`` int64 (only when the engine was asked, ``EngineConfig.cpu_time``): CPU time of
      each ``predict()`` on ``cpu_clock`` ("thread": the thread that called it, ``time.thread_time_ns``;
      "process": the whole process, ``time.process_time_ns``, for multi-threaded models).
    - ``context_switches``: the timing thread's voluntary / involuntary context switches during the
      stream (``getrusage``; in a sealed worker less those while fetching frames from the parent, the
      pipe's), empty where not readable.
    - ``host_ns`` ``[T]`` int64 (sealed runs only): each frame timed by the parent process, from handing
      the frame to the worker until the worker asked for the next one (its output taken); the pipe's
      floor is not subtracted here (harness/execution/host_timing.py). ``host_reset_ns``: the parent's
      time from the stream's request to its first frame asked for (``reset_state()``);
      ``host_wall_ns``: from the request to the recording's arrival; ``worker_cpu_ns``: the worker's CPU
      time over all its threads meanwhile, those that exited included (``/proc``);
      ``worker_main_cpu_ns``: of that, its main thread's, which runs the engine (the rest is the model's
      own other threads).
    """

    stream_id: str
    role: StreamRole
    t0_ns: int
    segment_length_ns: int | None
    frame_times_ns: np.ndarray
    labels: np.ndarray
    latency_ns: np.ndarray
    emitted_at: np.ndarray
    refers_to: np.ndarray
    scores: np.ndarray
    stage_ns: dict[str, int] = field(default_factory=dict)
    paced_start_ns: np.ndarray | None = None
    paced_policy: str | None = None
    device_ns: np.ndarray | None = None
    server_ns: np.ndarray | None = None
    features: np.ndarray | None = None
    weights: np.ndarray | None = None
    beyond_end: int = 0
    cpu_ns: np.ndarray | None = None
    cpu_clock: str | None = None
    context_switches: dict[str, int] = field(default_factory=dict)
    host_ns: np.ndarray | None = None
    host_reset_ns: int | None = None
    host_wall_ns: int | None = None
    worker_cpu_ns: int | None = None
    worker_main_cpu_ns: int | None = None

    @property
    def num_frames(self) -> int:
        return int(self.frame_times_ns.size)

    @property
    def num_predictions(self) -> int:
        return int(self.emitted_at.size)

    @property
    def duration_ns(self) -> int:
        return int(self.frame_times_ns[-1] - self.t0_ns)


@dataclass(slots=True)
class FailedStream:
    """A planned stream the adapter failed on (it raised, broke the contract, hung or crashed): no
    output of it is kept, only what scoring it as answered wrongly needs (its clock and its reference
    labels, from the data set the harness holds, never from the adapter) and the error.

    The online protocol scores every frame of it as the complement of its labels
    (``protocols/online_units.py``); ``frame`` is where it failed (None: before its first frame).
    """

    stream_id: str
    role: StreamRole
    t0_ns: int
    segment_length_ns: int | None
    frame_times_ns: np.ndarray
    labels: np.ndarray
    frame: int | None = None
    error: str = ""

    @property
    def num_frames(self) -> int:
        return int(self.frame_times_ns.size)


def to_arrays(recordings: Sequence[StreamRecording]) -> dict[str, np.ndarray]:
    """Flatten recordings into named arrays for ``numpy.savez`` (keys ``s{i}/<field>``)."""
    out: dict[str, np.ndarray] = {}
    for i, rec in enumerate(recordings):
        for name in _ARRAY_FIELDS:
            out[f"s{i}/{name}"] = getattr(rec, name)
        out[f"s{i}/meta"] = np.array(
            [rec.stream_id, rec.role, str(rec.t0_ns), str(rec.segment_length_ns or "")]
        )
        out[f"s{i}/stage_names"] = np.array(list(rec.stage_ns), dtype=str)
        out[f"s{i}/stage_ns"] = np.array(list(rec.stage_ns.values()), dtype=np.int64)
        if rec.device_ns is not None:
            out[f"s{i}/device_ns"] = rec.device_ns
        if rec.server_ns is not None:
            out[f"s{i}/server_ns"] = rec.server_ns
        for extra in ("features", "weights"):
            if getattr(rec, extra) is not None:
                out[f"s{i}/{extra}"] = getattr(rec, extra)
        if rec.beyond_end:
            out[f"s{i}/beyond_end"] = np.array(rec.beyond_end, dtype=np.int64)
        if rec.cpu_ns is not None:
            out[f"s{i}/cpu_ns"] = rec.cpu_ns
            out[f"s{i}/cpu_clock"] = np.array(rec.cpu_clock or "thread")
        if rec.context_switches:
            out[f"s{i}/switch_names"] = np.array(list(rec.context_switches), dtype=str)
            out[f"s{i}/switches"] = np.array(list(rec.context_switches.values()), dtype=np.int64)
        if rec.host_ns is not None:  # with its stream's parent-side figures, -1 where unknown
            out[f"s{i}/host_ns"] = rec.host_ns
            edges = (rec.host_reset_ns, rec.host_wall_ns, rec.worker_cpu_ns, rec.worker_main_cpu_ns)
            out[f"s{i}/host_stream_ns"] = np.array([-1 if v is None else v for v in edges], dtype=np.int64)
        if rec.paced_start_ns is not None:
            out[f"s{i}/paced_start_ns"] = rec.paced_start_ns
            out[f"s{i}/paced_policy"] = np.array(rec.paced_policy or "queue")
    return out


def from_arrays(arrays: Mapping[str, np.ndarray]) -> list[StreamRecording]:
    """Inverse of :func:`to_arrays`."""
    recordings = []
    i = 0
    while f"s{i}/meta" in arrays:
        stream_id, role, t0, seg = (str(x) for x in arrays[f"s{i}/meta"])
        fields = {name: np.asarray(arrays[f"s{i}/{name}"]) for name in _ARRAY_FIELDS}
        names = arrays.get(f"s{i}/stage_names", np.array([], dtype=str))
        totals = arrays.get(f"s{i}/stage_ns", np.array([], dtype=np.int64))
        stages = {str(n): int(v) for n, v in zip(names, totals, strict=True)}
        switch_names = np.asarray(arrays.get(f"s{i}/switch_names", np.array([], dtype=str)))
        switch_counts = np.asarray(arrays.get(f"s{i}/switches", np.array([], dtype=np.int64)))
        if switch_counts.dtype.kind not in "iu" or switch_names.dtype.kind != "U":
            raise ValueError(f"stream {stream_id!r}: context switch counts must be integers named by strings")
        switches = {str(n): int(v) for n, v in zip(switch_names, switch_counts, strict=True)}
        if any(v < 0 for v in switches.values()):
            raise ValueError(f"stream {stream_id!r}: negative context switch counts {switches}")
        if set(switches) - {"voluntary", "involuntary"}:
            raise ValueError(f"stream {stream_id!r}: unknown context switch kinds {sorted(switches)}")
        cpu_clock = str(arrays[f"s{i}/cpu_clock"]) if f"s{i}/cpu_clock" in arrays else None
        if cpu_clock not in (None, "thread", "process"):
            raise ValueError(f"stream {stream_id!r}: unknown CPU clock {cpu_clock!r}")
        if role not in ("test", "validation"):
            raise ValueError(f"stream {stream_id!r}: unknown role {role!r} in recorded arrays")
        host_ns, edges = _host_timing(arrays, f"s{i}", stream_id)
        recordings.append(
            StreamRecording(
                stream_id=stream_id,
                role=role,  # type: ignore[arg-type]
                t0_ns=int(t0),
                segment_length_ns=int(seg) if seg else None,
                stage_ns=stages,
                paced_start_ns=np.asarray(arrays[f"s{i}/paced_start_ns"])
                if f"s{i}/paced_start_ns" in arrays
                else None,
                paced_policy=str(arrays[f"s{i}/paced_policy"]) if f"s{i}/paced_policy" in arrays else None,
                device_ns=np.asarray(arrays[f"s{i}/device_ns"]) if f"s{i}/device_ns" in arrays else None,
                server_ns=np.asarray(arrays[f"s{i}/server_ns"]) if f"s{i}/server_ns" in arrays else None,
                features=np.asarray(arrays[f"s{i}/features"]) if f"s{i}/features" in arrays else None,
                weights=np.asarray(arrays[f"s{i}/weights"]) if f"s{i}/weights" in arrays else None,
                beyond_end=_count(arrays, f"s{i}/beyond_end", stream_id),
                cpu_ns=np.asarray(arrays[f"s{i}/cpu_ns"]) if f"s{i}/cpu_ns" in arrays else None,
                cpu_clock=cpu_clock,
                context_switches=switches,
                host_ns=host_ns,
                host_reset_ns=edges[0],
                host_wall_ns=edges[1],
                worker_cpu_ns=edges[2],
                worker_main_cpu_ns=edges[3],
                **fields,
            )
        )
        i += 1
    return recordings


def _count(arrays: Mapping[str, np.ndarray], key: str, stream_id: str) -> int:
    """A recorded non-negative count (a 0-d integer array); 0 when absent."""
    if key not in arrays:
        return 0
    value = np.asarray(arrays[key])
    if value.ndim != 0 or value.dtype.kind not in "iu" or int(value) < 0:
        raise ValueError(f"stream {stream_id!r}: {key} must be one non-negative integer, got {value!r}")
    return int(value)


def _host_timing(
    arrays: Mapping[str, np.ndarray], prefix: str, stream_id: str
) -> tuple[np.ndarray | None, list[int | None]]:
    """The parent's per-frame figures and its stream figures (reset, wall, worker CPU, its main thread's
    CPU; files written before the last have three): both or neither."""
    has_frames, has_edges = f"{prefix}/host_ns" in arrays, f"{prefix}/host_stream_ns" in arrays
    if has_frames != has_edges:
        missing = "host_stream_ns" if has_frames else "host_ns"
        raise ValueError(f"stream {stream_id!r}: {prefix}/{missing} is missing (the parent times both)")
    if not has_frames:
        return None, [None, None, None, None]
    edges = np.asarray(arrays[f"{prefix}/host_stream_ns"])
    if edges.shape not in ((3,), (4,)) or edges.dtype.kind not in "iu" or (edges < -1).any():
        raise ValueError(f"stream {stream_id!r}: {prefix}/host_stream_ns must be 4 integers >= -1: {edges!r}")
    values = [None if v < 0 else int(v) for v in edges]
    return np.asarray(arrays[f"{prefix}/host_ns"]), [*values, None][:4]


def failed_to_arrays(failed: Sequence[FailedStream]) -> dict[str, np.ndarray]:
    """The failed streams as named arrays (keys ``f{i}/<field>``), beside :func:`to_arrays`' ``s{i}``:
    a failed stream is saved with its labels and clock and no prediction, so a saved run re-scores it."""
    out: dict[str, np.ndarray] = {}
    for i, item in enumerate(failed):
        frame = "" if item.frame is None else str(item.frame)
        out[f"f{i}/meta"] = np.array(
            [item.stream_id, item.role, str(item.t0_ns), str(item.segment_length_ns or ""), frame, item.error]
        )
        out[f"f{i}/frame_times_ns"] = item.frame_times_ns
        out[f"f{i}/labels"] = item.labels
    return out


def failed_from_arrays(arrays: Mapping[str, np.ndarray]) -> list[FailedStream]:
    """Inverse of :func:`failed_to_arrays` (none in a file written before failed streams were saved)."""
    failed = []
    i = 0
    while f"f{i}/meta" in arrays:
        stream_id, role, t0, seg, frame, error = (str(x) for x in arrays[f"f{i}/meta"])
        if role not in ("test", "validation"):
            raise ValueError(f"failed stream {stream_id!r}: unknown role {role!r} in recorded arrays")
        failed.append(
            FailedStream(
                stream_id=stream_id,
                role=role,  # type: ignore[arg-type]
                t0_ns=int(t0),
                segment_length_ns=int(seg) if seg else None,
                frame_times_ns=np.asarray(arrays[f"f{i}/frame_times_ns"]),
                labels=np.asarray(arrays[f"f{i}/labels"]),
                frame=int(frame) if frame else None,
                error=error,
            )
        )
        i += 1
    return failed
