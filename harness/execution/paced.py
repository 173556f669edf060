"""The paced feed: frames released on the wall clock at their stream time (``../shared/DESIGN.md``, "The
engine": paced; seed 004 §6.2.3 "计时点"). Called by
:meth:`streambench.harness.execution.engine.Engine.run_stream` for ``EngineConfig.pacing = "paced"``; the
unpaced loop stays in the engine."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from streambench.adapters.contract import Frame, PredictOutput
from streambench.harness.execution.adapter_errors import AdapterCallError, AdapterOutputError
from streambench.harness.execution.outputs import OutputChecks
from streambench.harness.execution.sealing import SealedFeed
from streambench.harness.instruments.clock import wait_until

__all__ = ["PACED_LEAD_NS", "feed_paced"]

PACED_LEAD_NS = 2_000_000
"""The first frame of a paced stream arrives 2 ms after the pacer starts."""


def feed_paced(
    frames: Sequence[Frame] | SealedFeed,
    stream_id: str,
    arrival_ns: np.ndarray,
    predict: Callable[[Frame], PredictOutput],
    checks: OutputChecks,
    policy: Literal["queue", "drop"],
    progress: Callable[[int, int], None] | None,
    progress_interval_ns: int,
    interrupts: tuple[type[BaseException], ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Frames released on the wall clock at their stream time.

    One worker: a frame is fed when it has arrived and the model is free. Under ``queue`` every frame is
    fed, late if the model fell behind; under ``drop`` a frame whose successor has already arrived is
    skipped (drop to the newest). Returns latency, emitted_at, refers_to, scores (as the unpaced loop) plus
    when each ``predict()`` started (stream clock relative to t0; -1 = dropped), so latency can be counted
    from arrival (no coordinated omission). Outputs go through the full validation path: a paced frame
    waits anyway, so the fast path buys nothing here. ``progress(frames done, frames)`` is called after a
    frame once ``progress_interval_ns`` has passed since the last call. ``interrupts``: what is passed on
    out of ``predict()``, never taken for the adapter's failure (the engine's).
    """
    n = len(frames)
    latency = np.zeros(n, dtype=np.int64)
    started = np.full(n, -1, dtype=np.int64)
    kept: list[tuple[np.ndarray, int, int]] = []
    clock = time.perf_counter_ns
    drop = policy == "drop"
    base = clock() + PACED_LEAD_NS  # the stream clock's t0 on the wall clock
    report_at, reporting = base + progress_interval_ns, False
    i = -1
    passed: tuple[type[BaseException], ...] = (AdapterOutputError, *interrupts)
    try:
        for i, frame in enumerate(frames):
            wait_until(base + int(arrival_ns[i]), clock)
            if drop and i + 1 < n and clock() >= base + int(arrival_ns[i + 1]):
                continue  # a newer frame is already there: drop this one
            start = clock()
            out = predict(frame)
            end = clock()
            latency[i] = end - start
            started[i] = start - base
            if out is not None:
                checked = checks.full_path(out, stream_id, i, n)
                kept.extend((sc.copy(), i, ref) for sc, ref, _ in checked)
            if progress is not None and end >= report_at:
                reporting = True  # the hook's own failure is no adapter's
                progress(i + 1, n)  # after the frame, before the next one's wait
                reporting = False
                report_at = clock() + progress_interval_ns
    except passed:
        raise
    except BaseException as exc:
        if reporting:
            raise
        text = f": {exc}" if str(exc) else ""
        raise AdapterCallError(
            checks.adapter_name, stream_id, i, f"predict() raised {type(exc).__name__}{text}"
        ) from exc
    scores = np.array([sc for sc, _, _ in kept], dtype=np.float32).reshape(len(kept), checks.num_classes)
    emitted = np.array([e for _, e, _ in kept], dtype=np.int64)
    bad = ~np.isfinite(scores).all(axis=1)
    if bad.any():
        raise checks.error(stream_id, int(emitted[int(np.argmax(bad))]), "scores contain NaN or Inf")
    return latency, emitted, np.array([r for _, _, r in kept], dtype=np.int64), scores, started
