"""The frame loop: the only code in streambench that calls a model (``../shared/DESIGN.md``, "The engine").

Per stream: ``reset_state()``, then the frames one at a time at batch 1, each ``predict()`` timed at its
boundary with ``time.perf_counter_ns()`` (seed 004 §6.2.3 "计时点": model pre/post-processing
included, decoding and I/O excluded: a stream's frames are decoded before its first frame is timed).
Before the first scored stream the engine warms the model up on a stream that is not scored and then
resets it (seed 004 §6.2.2 "评测前进行 ≥100 帧预热").

The loop is kept lean because its own cost is part of every latency it reports (and of the wall time of
every run): per frame it appends the latency, copies the scores' bytes into one buffer and runs only
the checks that must stop a bad run at once (type, shape, ``refers_to`` range); where each prediction
was emitted and what it labels are rebuilt after the stream, and finiteness is checked there,
vectorised, still naming the frame (``benchmarks/test_engine_overhead.py`` measures what is left).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.adapters.contract import (
    Adapter,
    Frame,
    Prediction,
    PredictOutput,
    ServerTimes,
    StageTimer,
    Stream,
    StreamingAdapter,
)
from streambench.harness.execution.adapter_errors import (
    AdapterCallError,
    AdapterError,
    AdapterOutputError,
    HarnessInterrupt,
)
from streambench.harness.execution.outputs import (
    FLOAT32,
    MAX_REF,
    NoFastPath,
    OddFrames,
    OutputChecks,
    beyond_end,
)
from streambench.harness.execution.paced import feed_paced
from streambench.harness.execution.recorded_extras import Extras, gather_extras
from streambench.harness.execution.sealing import SealedFeed, frames_of, seal_frames
from streambench.harness.instruments.clock import ClockInfo, clock_info
from streambench.harness.instruments.cuda_timing import CudaEventTimer, DeviceTimer, marked
from streambench.harness.instruments.interference import thread_switches
from streambench.protocols.recording import StreamRecording, StreamRole

__all__ = [
    "IN_PROCESS_INTERRUPTS",
    "PROGRESS_INTERVAL_S",
    "AdapterCallError",
    "AdapterError",
    "AdapterOutputError",
    "ClockInfo",
    "Engine",
    "EngineConfig",
    "FrameProgress",
    "FramesDone",
    "clock_info",
    "has_sequence_mode",
]


FramesDone = Callable[[int, int], None]
"""Progress within a stream: (frames done, frames in the stream), called between two frames."""

FrameProgress = Callable[[str, int, "int | None"], None]
"""Progress within a stream as a run reports it: (stream id, frames done, frames in the stream or
``None`` when unknown); the executor (harness/execution/executor.py) passes it to its runner."""

PROGRESS_INTERVAL_S = 0.5
"""How often, about, progress within a stream is reported (twice a second)."""
PROGRESS_INTERVAL_NS = int(PROGRESS_INTERVAL_S * 1e9)

IN_PROCESS_INTERRUPTS: tuple[type[BaseException], ...] = (KeyboardInterrupt, HarnessInterrupt)
"""What the engine passes on out of the adapter's calls in the harness's own process: Ctrl-C and the
signals the harness raises (they can surface inside ``predict()``). Any other exception, a
``BaseException`` too (``SystemExit``, ``GeneratorExit``), is the adapter's failure at that frame. A worker
process ignores SIGINT, so there nothing is passed on: a ``KeyboardInterrupt`` there is the model's own."""


class EngineConfig(BaseModel):
    """How the engine feeds a model."""

    model_config = ConfigDict(extra="forbid")

    warmup_frames: int = Field(
        100, ge=0, description="frames fed before the first scored stream (seed 004: at least 100)"
    )
    pacing: Literal["unpaced", "paced"] = Field(
        "unpaced", description="unpaced: frames as fast as the model takes them; paced: on the wall clock"
    )
    device_timing: bool = Field(
        True, description="CUDA adapters: CUDA event pairs around predict() give the device share"
    )
    paced_policy: Literal["queue", "drop"] = Field(
        "queue", description="paced, when the model falls behind: queue every frame, or drop to the newest"
    )
    cpu_time: Literal["off", "thread", "process"] = Field(
        "off",
        description="also record each predict()'s CPU time: of the calling thread (thread_time_ns) or of "
        "the process (process_time_ns, multi-threaded models); unpaced only; off by default: two CPU "
        "clock reads cost ~0.5 µs per frame (benchmarks/test_engine_overhead.py)",
    )
    record: tuple[Literal["features", "weights"], ...] = Field(
        (), description="also record Prediction.features / .weights (stability, router protocols; unpaced)"
    )


def has_sequence_mode(adapter: object) -> bool:
    """Whether the adapter implements ``predict_sequence`` (not the contract base class's stub)."""
    method = getattr(type(adapter), "predict_sequence", None)
    return callable(method) and method is not StreamingAdapter.predict_sequence


class Engine:
    """Feeds streams to one adapter and records its outputs and latencies."""

    def __init__(
        self,
        adapter: Adapter,
        config: EngineConfig | None = None,
        device_timer: Callable[[int], DeviceTimer] | None = None,
        interrupts: tuple[type[BaseException], ...] = IN_PROCESS_INTERRUPTS,
    ) -> None:
        self.adapter = adapter
        self.config = config or EngineConfig()
        self.interrupts = interrupts  # passed on out of the adapter's calls, never its failure
        info = adapter.info
        if device_timer is None and self.config.device_timing and info.device.startswith("cuda"):
            device_timer = CudaEventTimer
        self.device_timer = device_timer
        self.name = info.name
        self.num_classes = info.num_classes
        self.checks = OutputChecks(self.name, self.num_classes)
        self.warmup_frames_run = 0
        stages = getattr(adapter, "stages", None)
        self.stages: StageTimer | None = stages if isinstance(stages, StageTimer) else None
        server_times = getattr(adapter, "server_times", None)
        self.server_times = server_times if isinstance(server_times, ServerTimes) else None

    def warm_up(self, stream: Stream) -> int:
        """Feed up to ``warmup_frames`` frames of an unscored stream, then reset. Returns frames fed."""
        n = self.config.warmup_frames
        if n == 0:
            return 0
        if stream.num_frames < n:
            raise ValueError(
                f"warm-up stream {stream.stream_id!r} has {stream.num_frames} frames, {n} are needed"
            )
        frames = seal_frames(islice(stream.frames(), n))
        self._reset(stream.stream_id)
        self._feed(frames, stream.stream_id, stream.num_frames)
        self._reset(stream.stream_id)
        self.warmup_frames_run = len(frames)
        return len(frames)

    def run_stream(
        self,
        stream: Stream,
        role: StreamRole = "test",
        untimed: bool = False,
        progress: FramesDone | None = None,
    ) -> StreamRecording:
        """Reset the adapter, feed the stream frame by frame, return what was recorded. Every frame is
        sealed first (:mod:`streambench.harness.execution.sealing`), before the clock starts.

        ``untimed`` (the causality protocol's audit, DESIGN.md "Audits"): the same loop and the same call
        path, with a clock that reads nothing (``latency_ns`` all zeros), no device timer and no pacing,
        so a model sees the same entry points whether it is measured or not.

        ``progress(frames done, frames in the stream)`` is called within the stream about every
        :data:`PROGRESS_INTERVAL_S`, between two frames (never inside a timed ``predict()``)."""
        frames = frames_of(stream)
        fetched = _FetchSwitches(frames) if isinstance(frames, SealedFeed) else None
        if fetched is not None:
            frames = fetched
        if len(frames) != stream.num_frames:
            raise ValueError(
                f"stream {stream.stream_id!r}: frame_source gave {len(frames)} frames, "
                f"frame_times has {stream.num_frames}"
            )
        if len(stream.classes) != self.num_classes:
            raise ValueError(
                f"adapter {self.name!r} declares {self.num_classes} classes, stream "
                f"{stream.stream_id!r} has {len(stream.classes)}"
            )
        self._reset(stream.stream_id)
        if self.stages is not None:
            self.stages.drain()  # stage time of warm-up or reset belongs to no stream
        if self.server_times is not None:
            self.server_times.drain()  # nor does a server's figure of them
        times_ns = np.round(stream.frame_times * 1e9).astype(np.int64)
        t0_ns = round(stream.t0 * 1e9)
        paced_start: np.ndarray | None = None
        timer = self.device_timer(len(frames)) if self.device_timer is not None and not untimed else None
        predict = self.adapter.predict if timer is None else marked(self.adapter.predict, timer)
        outputs: list[Extras] | None = [] if self.config.record else None
        cpu_clock = self.config.cpu_time if not untimed else "off"
        cpu_ns: np.ndarray | None = None
        switches = thread_switches()
        if self.config.pacing == "paced" and not untimed:
            if outputs is not None or cpu_clock != "off":
                raise ValueError("recording features, weights or CPU time needs an unpaced run")
            latency_ns, emitted_at, refers_to, scores, paced_start = feed_paced(
                frames, stream.stream_id, times_ns - t0_ns, predict, self.checks, self.config.paced_policy,
                progress, PROGRESS_INTERVAL_NS, self.interrupts,
            )  # fmt: skip
        elif cpu_clock != "off":
            predict, walls, cpus = _cpu_timed(predict, cpu_clock)
            _, emitted_at, refers_to, scores = self._feed(
                frames, stream.stream_id, len(frames), predict, outputs, progress=progress
            )
            latency_ns, cpu_ns = np.asarray(walls, dtype=np.int64), np.asarray(cpus, dtype=np.int64)
        else:
            latency_ns, emitted_at, refers_to, scores = self._feed(
                frames,
                stream.stream_id,
                len(frames),
                predict,
                outputs,
                _no_clock if untimed else None,
                progress,
            )
        after = thread_switches()
        context_switches = (
            {"voluntary": after[0] - switches[0], "involuntary": after[1] - switches[1]}
            if switches is not None and after is not None
            else {}
        )
        if fetched is not None and context_switches:  # the pipe's switches are no frame's
            context_switches = {
                "voluntary": context_switches["voluntary"] - fetched.voluntary,
                "involuntary": context_switches["involuntary"] - fetched.involuntary,
            }
        extras = gather_extras(outputs, self.config.record, emitted_at, self.checks.error, stream.stream_id)
        inside = beyond_end(refers_to, len(frames))
        if inside is not None:
            emitted_at, refers_to, scores = emitted_at[inside], refers_to[inside], scores[inside]
            extras = {name: value[inside] for name, value in extras.items()}
        device_ns = None
        if timer is not None:  # read after the stream: the loop never waited on the device
            device_ns = np.zeros(len(frames), dtype=np.int64)
            fed = np.flatnonzero(paced_start >= 0) if paced_start is not None else np.arange(len(frames))
            device_ns[fed] = timer.read_ns()
        stage_ns = self.stages.drain() if self.stages is not None else {}
        server_ns = self._server_ns(stream.stream_id, len(frames), paced_start, untimed)
        segment_ns = round(stream.segment_length_s * 1e9) if stream.segment_length_s else None
        return StreamRecording(
            stream_id=stream.stream_id,
            role=role,
            t0_ns=t0_ns,
            segment_length_ns=segment_ns,
            frame_times_ns=times_ns,
            labels=stream.labels,
            latency_ns=latency_ns,
            emitted_at=emitted_at,
            refers_to=refers_to,
            scores=scores,
            stage_ns=stage_ns,
            paced_start_ns=paced_start,
            paced_policy=self.config.paced_policy if paced_start is not None else None,
            device_ns=device_ns,
            server_ns=server_ns,
            beyond_end=0 if inside is None else int((~inside).sum()),
            cpu_ns=cpu_ns,
            cpu_clock=cpu_clock if cpu_clock != "off" else None,
            context_switches=context_switches,
            features=extras.get("features"),
            weights=extras.get("weights"),
        )

    def run_untimed(self, stream: Stream, max_frames: int | None = None) -> StreamRecording:
        """Audit run (DESIGN.md "Audits"): :meth:`run_stream` with ``untimed=True`` — the same loop, no
        clock read, no device timer, no pacing — on the stream or its first ``max_frames`` frames (an
        untimed warm-up). ``latency_ns`` is all zeros (compared, never reported)."""
        if max_frames is not None:
            prefix = list(islice(stream.frames(), max_frames))
            stream = dataclasses.replace(
                stream,
                labels=stream.labels[: len(prefix)],
                frame_times=stream.frame_times[: len(prefix)],
                frame_source=lambda: prefix,
            )
        return self.run_stream(stream, untimed=True)

    def run_sequence(self, stream: Stream) -> StreamRecording:
        """Sequence mode (capability ``sequence``, DESIGN.md "Causality"): reset, then the whole sealed
        stream in one ``predict_sequence()`` call; each prediction must name its frame (``refers_to``) and
        counts as emitted there. Untimed (``latency_ns`` all zeros): for the causality checks, never
        scored. Outputs are validated as in a streaming run, the error naming the frame labelled."""
        frames = seal_frames(stream.frames())
        self._reset(stream.stream_id)
        last = len(frames) - 1
        try:
            out = getattr(self.adapter, "predict_sequence")(frames)  # noqa: B009
        except self.interrupts:
            raise
        except BaseException as exc:
            raise AdapterCallError(
                self.name, stream.stream_id, last, f"predict_sequence() raised {_named(exc)}"
            ) from exc
        if not isinstance(out, list) or any(
            not isinstance(p, Prediction) or p.refers_to is None for p in out
        ):
            raise self.checks.error(
                stream.stream_id, last, "predict_sequence() must return a list of Predictions with refers_to"
            )
        checked = self.checks.full_path(out, stream.stream_id, last, len(frames)) if out else []
        kept = sorted((ref, i) for i, (_, ref, _) in enumerate(checked) if ref < len(frames))
        refs = np.array([ref for ref, _ in kept], dtype=np.int64)
        scores = np.array([checked[i][0] for _, i in kept], dtype=np.float32)
        scores = scores.reshape(len(kept), self.num_classes)
        if not np.isfinite(scores).all():
            raise self.checks.error(stream.stream_id, last, "predict_sequence() scores contain NaN or Inf")
        return StreamRecording(
            stream_id=stream.stream_id,
            role="test",
            t0_ns=round(stream.t0 * 1e9),
            segment_length_ns=None,
            frame_times_ns=np.round(stream.frame_times * 1e9).astype(np.int64),
            labels=stream.labels,
            latency_ns=np.zeros(len(frames), dtype=np.int64),
            emitted_at=refs.copy(),
            refers_to=refs,
            scores=scores,
            beyond_end=len(checked) - len(kept),
        )

    def count_flops(self, stream: Stream) -> tuple[int | None, str | None]:
        """FLOPs of one ``predict()`` on the stream's first frame, by torch's own flop counter.

        Run outside any timed region and followed by a reset. Returns ``(flops, None)``, or
        ``(None, reason)`` when nothing was counted (not a torch model, or only operations the counter
        does not know: it counts matrix products and convolutions).
        """
        if "torch" not in sys.modules:  # a worker imports torch only for a model that does
            return None, "the adapter does not use torch: torch's flop counter cannot count it"
        try:
            from torch.utils.flop_counter import FlopCounterMode
        except ImportError as exc:  # pragma: no cover - torch is a core dependency
            return None, f"torch flop counter unavailable: {exc}"
        frame = seal_frames(islice(stream.frames(), 1))[0]
        self.adapter.reset_state()
        try:
            with FlopCounterMode(display=False) as counter:
                self.adapter.predict(frame)
        except self.interrupts:
            raise
        except BaseException as exc:  # a model failing on this stream is a failed stream, not a failed run
            self.adapter.reset_state()
            return None, (
                f"not counted: predict() raised {type(exc).__name__} on the first frame of "
                f"{stream.stream_id!r}: {exc}"
            )
        self.adapter.reset_state()
        if self.stages is not None:
            self.stages.drain()
        flops = int(counter.get_total_flops())
        if flops == 0:
            return None, "torch's flop counter saw no matrix product or convolution in predict()"
        return flops, None

    def _feed(
        self,
        frames: Sequence[Frame] | SealedFeed,
        stream_id: str,
        stream_length: int,
        predict: Callable[[Frame], PredictOutput] | None = None,
        outputs: list[Extras] | None = None,
        clock: Callable[[], int] | None = None,
        progress: FramesDone | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The timed loop. Everything it does per frame beyond ``predict()`` is harness overhead.

        Per frame: two clock reads around ``predict()`` and nothing else between them; the latency
        appended; then the fast path — exactly one :class:`Prediction` of float32 scores of shape
        ``[C]`` whose ``refers_to`` is unset or a non-negative ``int`` — copies the scores' bytes into
        one growing buffer (an adapter may reuse its output buffer) and notes the frame only when it
        labels another frame: ``emitted_at`` and ``refers_to`` are rebuilt after the stream
        (:class:`~streambench.harness.execution.outputs.OddFrames`). Any other output (``None``, a list,
        scores to convert, a ``refers_to`` to check, or any output while ``outputs`` collects features and
        weights) takes :meth:`~streambench.harness.execution.outputs.OutputChecks.odd_output`, which validates
        it and notes the frame. After the stream, vectorised: the ``[P, C]`` score array and the
        finiteness check naming the first bad frame. The frame of an exception in ``predict()`` is the
        number of latencies recorded before it.

        ``progress``: the frames are fed in chunks (``islice``) and ``progress(frames done, frames)``
        called between two chunks; each chunk is sized from the last one's wall time to last about
        :data:`PROGRESS_INTERVAL_S` (starting at one frame, growing at most fourfold per chunk). Without
        it the loop runs over ``frames`` directly, in one piece.
        """
        num_classes = self.num_classes
        latency: list[int] = []
        keep_latency = latency.append
        score_bytes = bytearray()
        keep_scores: Callable[[Any], object] = score_bytes.__iadd__  # a copy, amortised growth
        odd = OddFrames()
        moved_at, moved_to = odd.moved_frames.append, odd.moved_refs.append
        odd_output = self.checks.odd_output
        predict = predict or self.adapter.predict
        clock = clock or time.perf_counter_ns
        fast_type = Prediction if outputs is None else NoFastPath
        ndarray, float32, max_ref = np.ndarray, FLOAT32, MAX_REF
        passed: tuple[type[BaseException], ...] = (AdapterOutputError, *self.interrupts)
        n = len(frames)
        chunk = 1
        remaining = iter(frames) if progress is not None else None
        batch: Iterable[Frame] = frames if remaining is None else islice(remaining, chunk)
        began = time.perf_counter_ns() if progress is not None else 0  # chunks are sized on the wall clock
        while True:
            before = len(latency)
            try:
                for frame in batch:
                    start = clock()
                    out = predict(frame)
                    keep_latency(clock() - start)
                    if type(out) is fast_type:
                        sc = out.scores
                        if (
                            type(sc) is ndarray
                            and sc.dtype is float32
                            and sc.ndim == 1
                            and len(sc) == num_classes  # shape (C,), without building the shape tuple
                        ):
                            ref = out.refers_to
                            if ref is None or (type(ref) is int and 0 <= ref <= max_ref):
                                try:
                                    keep_scores(sc)
                                except TypeError:  # a strided view exports no single buffer
                                    keep_scores(sc.tobytes())
                                if ref is not None:  # labels another frame (look-ahead, anticipation)
                                    moved_at(len(latency) - 1)
                                    moved_to(ref)
                                continue
                    odd_output(out, len(latency) - 1, stream_id, stream_length, keep_scores, odd, outputs)
            except passed:
                raise
            except BaseException as exc:  # the adapter's own failure: say where it happened, keep the cause
                raise AdapterCallError(
                    self.name, stream_id, len(latency), f"predict() raised {_named(exc)}"
                ) from exc
            if remaining is None or len(latency) - before < chunk:
                break  # the stream is done
            assert progress is not None
            progress(len(latency), n)  # between two frames, outside every timed window
            now = time.perf_counter_ns()
            chunk = max(1, min(4 * chunk, chunk * PROGRESS_INTERVAL_NS // max(now - began, 1)))
            began = now
            batch = islice(remaining, chunk)
        scores = np.frombuffer(score_bytes, dtype=np.float32).reshape(-1, num_classes)
        emitted, refers_to = odd.emitted_and_refers_to(len(latency))
        if not np.isfinite(scores).all():
            first = int(np.argmax(~np.isfinite(scores).all(axis=1)))
            raise self.checks.error(stream_id, int(emitted[first]), "scores contain NaN or Inf")
        return np.asarray(latency, dtype=np.int64), emitted, refers_to, scores

    def _server_ns(
        self, stream_id: str, frames: int, paced_start: np.ndarray | None, untimed: bool
    ) -> np.ndarray | None:
        """The server's figure per frame (-1: none; a frame the pacer dropped has none), drained from the
        adapter's :class:`ServerTimes` after the stream; one per ``predict()`` call, else the adapter's
        error naming the stream."""
        if self.server_times is None:
            return None
        figures = self.server_times.drain()
        if untimed:
            return None
        fed = np.flatnonzero(paced_start >= 0) if paced_start is not None else np.arange(frames)
        if len(figures) != fed.size:
            raise self.checks.error(
                stream_id,
                frames - 1,
                f"server_times holds {len(figures)} figures for {fed.size} predict() calls (one per call)",
            )
        server_ns = np.full(frames, -1, dtype=np.int64)
        server_ns[fed] = figures
        return server_ns

    def _reset(self, stream_id: str) -> None:
        try:
            self.adapter.reset_state()
        except self.interrupts:
            raise
        except BaseException as exc:
            raise AdapterCallError(
                self.name, stream_id, 0, f"reset_state() before the stream raised {_named(exc)}"
            ) from exc


def _named(exc: BaseException) -> str:
    """An exception as the failure records name it: its type, and its message where it has one."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class _FetchSwitches(SealedFeed):
    """A sealed feed's frames, with the timing thread's context switches while each frame is fetched
    counted apart. Fetching is a pipe round trip to the parent (between two ``predict()`` calls, outside
    every timed window): waking the parent preempts this thread whenever the two share a core, about one
    involuntary switch per frame, which says nothing about the frames' time. A stream's
    ``context_switches`` are its total less these. Two ``getrusage`` reads per frame (~0.3 µs each) beside
    the ~40 µs round trip."""

    def __init__(self, feed: SealedFeed) -> None:
        self._feed = feed
        self.voluntary = 0
        self.involuntary = 0

    def __len__(self) -> int:
        return len(self._feed)

    def __iter__(self) -> Iterator[Frame]:
        frames = iter(self._feed)
        while True:
            before = thread_switches()
            frame = next(frames, None)  # the last fetch (the feed's end) is the pipe's too
            after = thread_switches()
            if before is not None and after is not None:
                self.voluntary += after[0] - before[0]
                self.involuntary += after[1] - before[1]
            if frame is None:
                return
            yield frame


def _no_clock() -> int:
    """The untimed run's clock: reads nothing."""
    return 0


def _cpu_timed(
    predict: Callable[[Frame], PredictOutput], which: Literal["thread", "process"]
) -> tuple[Callable[[Frame], PredictOutput], list[int], list[int]]:
    """``predict`` timed on the wall clock and on a CPU clock at once, for ``EngineConfig.cpu_time``.

    The wall clock is read innermost, at the same boundary as the plain loop's; the CPU clock reads
    (~0.24 µs each, a system call: the vDSO does not serve CPU-time clocks) sit outside it, so the wall
    time recorded is not inflated by them. The loop's own wall reading of the wrapper is discarded."""
    wall = time.perf_counter_ns
    cpu = time.thread_time_ns if which == "thread" else time.process_time_ns
    walls: list[int] = []
    cpus: list[int] = []
    keep_wall, keep_cpu = walls.append, cpus.append

    def timed(frame: Frame) -> PredictOutput:
        c0 = cpu()
        w0 = wall()
        out = predict(frame)
        w1 = wall()
        keep_cpu(cpu() - c0)
        keep_wall(w1 - w0)
        return out

    return timed, walls, cpus
