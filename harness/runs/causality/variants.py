"""The causality protocol's variant streams and the adapter instances it runs them on
(harness/runs/causality/checks.py; ``../shared/DESIGN.md``, "Causality" and "Audits").

* Variants: :func:`occlude` (the frames after a cut replaced), :func:`nudge` (every payload moved by a
  few ulps: the caching audit's second control; its verdict uses the unseen control of
  :mod:`streambench.harness.runs.causality.caching`), :func:`donor_for` (the stream whose frames replace
  them).
* :class:`AuditRunner`: the instance the checks run streams on. By default (``sealed``) every run goes
  to one sealed worker (:mod:`streambench.harness.execution.sealed_feed`): the frames reach the adapter one at
  a time and the future does not exist in its process, so no cheat can read it, audited or not, and the
  adapter sees the same entry points for every stream (the worker's request loop, the engine's
  ``run_stream``). A fresh instance is a new adapter built in that worker (:meth:`IsolatedEngine.rebuild`,
  warmed up like the first); :meth:`AuditRunner.fresh_process` starts another worker, for the checks
  that must tell module-level state from nondeterminism. In process (``sealed=False``) the runs go
  through an :class:`~streambench.harness.execution.engine.Engine` here; the planted :class:`PeekingAdapter`'s
  back door is filled before each run, as an offender that reads the real future would.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.catalog import make_warmup_stream
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine
from streambench.harness.execution.executor import ProgressHook
from streambench.harness.execution.isolation import IsolatedEngine
from streambench.harness.execution.setup import build_adapter
from streambench.protocols.causality import CausalityConfig, CheckResult, compare_prefix
from streambench.protocols.recording import StreamRecording

__all__ = [
    "AuditRunner",
    "aggregate_runs",
    "donor_for",
    "nudge",
    "nudge_payload",
    "occlude",
    "occlusion_runs",
]


def occlude(stream: Stream, cut: int, occluder: str, donor: Stream | None = None, seed: int = 0) -> Stream:
    """The stream with every frame after ``cut`` replaced: seeded Gaussian noise, zeros, or the donor's
    frame of the same index (``occluder="other_stream"``, the donor must be at least as long)."""
    if occluder == "other_stream" and donor is None:
        raise ValueError("the other_stream occluder needs a donor stream")

    def replace(frame: Frame, donor_frames: Sequence[Frame]) -> Frame:
        if frame.index <= cut:
            return frame
        if occluder == "other_stream":
            inputs: dict[str, Any] = dict(donor_frames[frame.index].inputs)
        else:
            rng = np.random.default_rng([seed, cut, frame.index])
            inputs = {}
            for name, payload in frame.inputs.items():
                if payload is None:
                    inputs[name] = None
                    continue
                arr = np.asarray(payload)
                if occluder == "zeros":
                    inputs[name] = np.zeros_like(arr)
                else:
                    inputs[name] = rng.standard_normal(arr.shape).astype(arr.dtype)
        return dataclasses.replace(frame, inputs=inputs)

    def frames() -> list[Frame]:
        donor_frames = list(donor.frames()) if donor is not None and occluder == "other_stream" else []
        return [replace(f, donor_frames) for f in stream.frames()]

    return dataclasses.replace(stream, frame_source=frames, stream_id=f"{stream.stream_id}~{occluder}@{cut}")


def nudge_payload(payload: Any, ulps: int) -> Any:
    """One payload moved ``ulps`` units in the last place (see :func:`nudge`); non-numeric ones unchanged."""
    if not isinstance(payload, np.ndarray):
        return payload
    if payload.dtype.kind == "f":
        out, up = payload, np.array(np.inf, dtype=payload.dtype)  # the target in the payload's dtype
        for _ in range(ulps):
            out = np.nextafter(out, up)
        return out
    if payload.dtype.kind in "iu":
        top = np.iinfo(payload.dtype).max
        return np.where(payload <= top - ulps, payload + ulps, payload - ulps).astype(payload.dtype)
    return payload


def nudge(stream: Stream, ulps: int) -> Stream:
    """The stream with every numeric payload moved ``ulps`` units in the last place: floats up by
    ``numpy.nextafter`` in their own dtype, integers by ``ulps`` (down where that would overflow). The
    same work for an honest model, other bytes for a cache keyed on them (but not for a cache that rounds
    its key: the caching audit's verdict uses
    :func:`~streambench.harness.runs.causality.caching.unseen_control`); other payloads unchanged."""

    def frames() -> list[Frame]:
        return [
            dataclasses.replace(f, inputs={k: nudge_payload(v, ulps) for k, v in f.inputs.items()})
            for f in stream.frames()
        ]

    return dataclasses.replace(stream, frame_source=frames, stream_id=f"{stream.stream_id}~ulp{ulps}")


def donor_for(config: RunConfig, all_streams: Sequence[Stream], k: int, num_frames: int) -> Stream:
    """The next stream of the data set, or the warm-up stream when there is no other long enough one."""
    if len(all_streams) > 1:
        other = all_streams[(k + 1) % len(all_streams)]
        if other.num_frames >= num_frames:
            return other
    return make_warmup_stream(config.data, num_frames)


class AuditRunner:
    """Runs streams on one adapter instance at a time, sealed (a worker) or in this process; counts the
    runs for the progress hook. Every instance is warmed up as a scored run is (``warmup_frames`` of the
    configuration), so the checks see the adapter after a realistic start, not a cold one."""

    def __init__(
        self, config: RunConfig, sample: Stream, sealed: bool, planned: int, progress: ProgressHook | None
    ) -> None:
        engine = config.engine.model_copy(update={"pacing": "unpaced"})  # paced drops make runs differ
        self.config = config.model_copy(update={"engine": engine, "isolate": sealed})
        self.sample = sample
        self.sealed = sealed
        self.planned = planned
        self.done = 0
        self.progress = progress
        self._worker: IsolatedEngine | None = None
        self._engine: Engine | None = None
        n = engine.warmup_frames
        self._warmup = make_warmup_stream(config.data, n) if n else None

    def fresh(self) -> None:
        """A new adapter instance, warmed up; later :meth:`run` calls use it."""
        if self.sealed:
            if self._worker is None:
                self._worker = self._start()
            else:
                self._worker.rebuild()
            return
        self._engine = Engine(build_adapter(self.config, self.sample), self.config.engine)
        if self._warmup is not None:
            self._engine.warm_up(self._warmup)

    def _start(self) -> IsolatedEngine:
        isolation = self.config.isolation.model_copy(update={"sealed": True})
        worker = IsolatedEngine(self.config, isolation)
        try:
            worker.warm_up()
        except BaseException:
            worker.close()
            raise
        return worker

    def fresh_process(self) -> AuditRunner:
        """Another runner whose first instance lives in a new worker process (sealed only)."""
        other = AuditRunner(self.config, self.sample, self.sealed, self.planned, None)
        other.fresh()
        return other

    def run(self, stream: Stream, untimed: bool = False, resets: int = 1) -> StreamRecording:
        """One run of ``stream`` on the current instance (``untimed``: no clock read; ``resets``: how many
        ``reset_state()`` calls precede it, the engine's own included)."""
        if self._worker is not None:
            recording = self._worker.run(stream, untimed=untimed, resets=resets)
        else:
            assert self._engine is not None, "call fresh() first"
            engine = self._engine
            for _ in range(resets - 1):
                engine.adapter.reset_state()
            # the planted offender's module (torch and all) is loaded only when a run built one from it
            offender: Any = getattr(sys.modules.get("streambench.adapters.offenders"), "PeekingAdapter", None)
            peeking = offender is not None and isinstance(engine.adapter, offender)
            if peeking:
                offender.leak(stream.frames())
            try:
                recording = engine.run_stream(stream, untimed=untimed)
            finally:
                if peeking:
                    offender.unleak()
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, max(self.planned, self.done), stream.stream_id)
        return recording

    def close(self) -> None:
        if self._worker is not None:
            self._worker.close()
            self._worker = None


def occlusion_runs(
    runner: AuditRunner,
    streams: Sequence[Stream],
    all_streams: Sequence[Stream],
    cuts: dict[str, list[int]],
    causality: CausalityConfig,
    clean: dict[str, StreamRecording] | None = None,
) -> list[CheckResult]:
    """Per stream, a clean run (or the recording given in ``clean``) and one run per cut and occluder,
    each on a fresh instance."""
    results: list[CheckResult] = []
    for k, stream in enumerate(streams):
        if clean is not None and stream.stream_id in clean:
            reference = clean[stream.stream_id]
        else:
            runner.fresh()
            reference = runner.run(stream)
        index = next(i for i, s in enumerate(all_streams) if s.stream_id == stream.stream_id)
        donor = donor_for(runner.config, all_streams, index if clean is not None else k, stream.num_frames)
        for cut in cuts[stream.stream_id]:
            for occluder in causality.occluders:
                variant = occlude(stream, cut, occluder, donor, seed=causality.noise_seed)
                runner.fresh()
                result = compare_prefix(reference, runner.run(variant), cut, causality.tolerance)
                results.append(
                    result.model_copy(
                        update={
                            "first_stream": stream.stream_id if not result.passed else None,
                            "detail": f"{occluder}: {result.detail}",
                        }
                    )
                )
    return results


def aggregate_runs(results: Sequence[CheckResult], causality: CausalityConfig, name: str) -> CheckResult:
    if not results:
        return CheckResult(name=name, passed=True, detail="no stream long enough to cut")
    failed = [r for r in results if not r.passed]
    max_diff = max(r.max_difference for r in results)
    if not failed:
        return CheckResult(
            name=name,
            passed=True,
            max_difference=max_diff,
            detail=f"{len(results)} occluded runs: every prefix unchanged "
            f"(max |diff| {max_diff:.3g} <= {causality.tolerance:g})",
        )
    first = failed[0]
    max_diff = max(r.max_difference for r in failed)
    return CheckResult(
        name=name,
        passed=False,
        first_stream=first.first_stream,
        first_frame=first.first_frame,
        max_difference=max_diff,
        detail=f"{len(failed)} of {len(results)} occluded runs changed the past; first, "
        f"{first.name}, {first.detail}",
    )
