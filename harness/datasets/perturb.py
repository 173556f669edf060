"""Seeded, composable perturbations of streams (``../shared/DESIGN.md`` "Perturbations", seed 004 §6.2.2 (3)).

Three injectors, each a pydantic config with a ``kind`` discriminator and a ``seed``:

- :class:`MissingModality` — Missing-Rate@p%: exactly ``round(p * T)`` steps (half rounded up), drawn
  at random without replacement, lose one modality: its payload becomes zeros of the same shape and
  dtype (``mode="zero"``) or ``None`` (``mode="none"``, the contract's "missing").
- :class:`AudioDelay` — Audio-Delay@Δt: the audio lags the video by Δt. Feature streams can only be
  shifted by whole frames, so the shift is ``round(Δt / frame period)`` frames (half rounded up); the
  resolution (the frame period) and the effective delay are recorded in ``meta["perturbations"]``
  (``resolution_ms``, ``effective_delay_ms``, ``shift_frames``). Frame ``i`` carries the audio
  payload of frame ``i - shift``; for ``i < shift`` there is no audio yet, so the payload is ``None``
  (missing). ``Frame.timestamps["audio"]`` is the capture time of the payload used (for the first
  ``shift`` frames: the time it would have been captured, before the stream start).
- :class:`Jitter` — Jitter@±δ: each frame's per-modality capture time is displaced by an independent
  ``U(-δ, δ)`` draw; the payload is what a clock so displaced would have captured. Two methods,
  recorded as ``method`` in ``meta["perturbations"]``:

  * ``"rendered"``: the stream has a sensor model (``Stream.capture``, the synthetic data set has one)
    and the jitter is the first perturbation applied to it; the payload is ``capture(m, i, s)`` — the
    signal at the displaced time with the frame's own noise.
  * ``"interpolated"``: otherwise, the linear interpolation between the two frames whose capture times
    bracket the displaced time (clamped to the first / last frame at the ends; non-floating payloads
    take the nearer frame; if a frame with non-zero weight has a ``None`` payload the result is
    ``None``). Caveat: interpolation also averages the two frames' independent noise, so on noisy
    features a small jitter can make the input *cleaner* than the original.

  ``Frame.timestamps[modality]`` is the displaced time. ``δ = 0`` is the identity. A positive
  displacement reads up to ``δ`` into the next frame: the jittered stream is what a model with a
  jittery clock would be fed, and the look-ahead is the perturbation's, not the model's.

:func:`perturb` wraps a stream; the new ``frame_source`` applies the injectors in order, lazily (one
pass over the upstream frames, bounded buffers). Randomness for stream ``k`` comes from
``numpy.random.default_rng([p.seed, k, CODE])`` with a fixed code per injector kind, so a seed gives
the same perturbation bit for bit and different streams get different draws. Two injectors of the
same kind with the same seed draw the same numbers (e.g. the same missing steps for two modalities):
give them different seeds for independent draws.

Times: ``Stream`` times are in seconds, configs in milliseconds.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from streambench.adapters.contract import Frame, Stream
from streambench.protocols.perturbations import (
    AudioDelay,
    Jitter,
    MissingModality,
    Perturbation,
    describe,
    parse_perturbations,
)

__all__ = [
    "AudioDelay",
    "Jitter",
    "MissingModality",
    "Perturbation",
    "describe",
    "parse_perturbations",
    "perturb",
]

_CODE_MISSING = 1
_CODE_AUDIO_DELAY = 2
_CODE_JITTER = 3
_UNIFORM_TOLERANCE = 1e-6


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5 + 1e-9)


# -------------------------------------------------------------------------------------- helpers


def _require_modality(stream: Stream, modality: str) -> None:
    if modality not in stream.modalities:
        raise ValueError(
            f"stream {stream.stream_id!r} has no modality {modality!r} (its modalities: {stream.modalities})"
        )


def _capture_time(frame: Frame, modality: str) -> float:
    if frame.timestamps is not None and modality in frame.timestamps:
        return float(frame.timestamps[modality])
    return float(frame.t)


def _with(frame: Frame, inputs: dict[str, Any], timestamps: dict[str, float] | None) -> Frame:
    return Frame(index=frame.index, t=frame.t, inputs=inputs, timestamps=timestamps)


def _frame_period(stream: Stream) -> float:
    """The stream's frame period (seconds); the frame rate must be uniform."""
    times = stream.frame_times
    if times.size == 1:
        return float(times[0] - stream.t0)
    diffs = np.diff(times)
    period = float(np.median(diffs))
    if np.max(np.abs(diffs - period)) > _UNIFORM_TOLERANCE * max(period, 1e-3):
        raise ValueError(
            f"stream {stream.stream_id!r}: an audio delay needs a uniform frame rate "
            f"(frame periods range {diffs.min():g} .. {diffs.max():g} s)"
        )
    return period


# ------------------------------------------------------------------------------------ injectors


def _missing(
    frames: Iterable[Frame], p: MissingModality, num_frames: int, stream_index: int
) -> Iterator[Frame]:
    count = _round_half_up(p.rate * num_frames)
    rng = np.random.default_rng([p.seed, stream_index, _CODE_MISSING])
    hit = np.zeros(num_frames, dtype=bool)
    hit[rng.choice(num_frames, size=count, replace=False)] = True
    for i, frame in enumerate(frames):
        if i >= num_frames or not hit[i]:
            yield frame
            continue
        payload = frame.inputs.get(p.modality)
        inputs = dict(frame.inputs)
        if payload is not None:
            inputs[p.modality] = np.zeros_like(np.asarray(payload)) if p.mode == "zero" else None
        timestamps = None if frame.timestamps is None else dict(frame.timestamps)
        yield _with(frame, inputs, timestamps)


def _delay(frames: Iterable[Frame], modality: str, shift: int, period: float) -> Iterator[Frame]:
    if shift == 0:
        yield from frames
        return
    past: deque[tuple[Any, float]] = deque()  # (payload, capture time) of the last `shift` frames
    for i, frame in enumerate(frames):
        captured = _capture_time(frame, modality)
        if i < shift:
            payload, when = None, captured - shift * period
        else:
            payload, when = past.popleft()
        past.append((frame.inputs.get(modality), captured))
        inputs = dict(frame.inputs)
        inputs[modality] = payload
        timestamps = {} if frame.timestamps is None else dict(frame.timestamps)
        timestamps[modality] = when
        yield _with(frame, inputs, timestamps)


def _interpolate(a: Any, b: Any, w: float) -> Any:
    """``(1 - w) a + w b``; ``w`` is in ``[0, 1]``."""
    if w == 0.0:
        return a
    if w == 1.0:
        return b
    if a is None or b is None:
        return None
    arr_a, arr_b = np.asarray(a), np.asarray(b)
    if not (np.issubdtype(arr_a.dtype, np.floating) and np.issubdtype(arr_b.dtype, np.floating)):
        return a if w < 0.5 else b
    if arr_a.shape != arr_b.shape:
        raise ValueError(f"jitter: payload shapes differ between frames ({arr_a.shape} vs {arr_b.shape})")
    mixed = (1.0 - w) * arr_a.astype(np.float64) + w * arr_b.astype(np.float64)
    return mixed.astype(np.result_type(arr_a.dtype, arr_b.dtype))


def _jitter(
    frames: Iterable[Frame],
    modalities: tuple[str, ...],
    delta_s: float,
    num_frames: int,
    rng: np.random.Generator,
) -> Iterator[Frame]:
    if delta_s == 0.0 or not modalities:
        yield from frames
        return
    offsets = rng.uniform(-delta_s, delta_s, size=(len(modalities), num_frames))
    upstream = iter(frames)
    buf: deque[Frame] = deque()  # upstream frames buf[0] .. buf[-1], indices base .. base + len - 1
    base = 0
    exhausted = False

    def fetch() -> bool:
        nonlocal exhausted
        if exhausted:
            return False
        try:
            buf.append(next(upstream))
        except StopIteration:
            exhausted = True
            return False
        return True

    i = 0
    while True:
        while base + len(buf) <= i:
            if not fetch():
                return
        frame = buf[i - base]
        # Drop frames no future bracket can use: capture times are non-decreasing, so every future
        # displaced time of modality m is >= c_m(i) - delta.
        while base < i and all(
            _capture_time(buf[1], m) <= _capture_time(frame, m) - delta_s for m in modalities
        ):
            buf.popleft()
            base += 1
        inputs = dict(frame.inputs)
        timestamps = {} if frame.timestamps is None else dict(frame.timestamps)
        for k, m in enumerate(modalities):
            u = float(offsets[k, i]) if i < num_frames else 0.0
            s = _capture_time(frame, m) + u
            while _capture_time(buf[-1], m) < s and fetch():
                pass
            times = [_capture_time(f, m) for f in buf]
            if np.any(np.diff(times) < 0):
                raise ValueError(f"jitter: capture times of modality {m!r} are not non-decreasing")
            if s <= times[0]:
                payload = buf[0].inputs.get(m)
            elif s >= times[-1]:
                payload = buf[-1].inputs.get(m)
            else:
                j = int(np.searchsorted(times, s, side="right")) - 1  # times[j] <= s < times[j + 1]
                w = (s - times[j]) / (times[j + 1] - times[j])
                payload = _interpolate(buf[j].inputs.get(m), buf[j + 1].inputs.get(m), w)
            inputs[m] = payload
            timestamps[m] = s
        yield _with(frame, inputs, timestamps)
        i += 1


def _jitter_rendered(
    frames: Iterable[Frame],
    modalities: tuple[str, ...],
    delta_s: float,
    num_frames: int,
    rng: np.random.Generator,
    capture: Callable[[str, int, float], Any],
) -> Iterator[Frame]:
    if delta_s == 0.0 or not modalities:
        yield from frames
        return
    offsets = rng.uniform(-delta_s, delta_s, size=(len(modalities), num_frames))  # same draws as above
    for i, frame in enumerate(frames):
        inputs = dict(frame.inputs)
        timestamps = {} if frame.timestamps is None else dict(frame.timestamps)
        for k, m in enumerate(modalities):
            s = _capture_time(frame, m) + (float(offsets[k, i]) if i < num_frames else 0.0)
            inputs[m] = capture(m, i, s)
            timestamps[m] = s
        yield _with(frame, inputs, timestamps)


# --------------------------------------------------------------------------------------- perturb


def perturb(stream: Stream, perturbations: Sequence[Perturbation], stream_index: int = 0) -> Stream:
    """A new stream whose frames are ``stream``'s with ``perturbations`` applied in order, lazily.

    Same id, classes, labels, times, modalities; ``meta`` is a copy with a ``"perturbations"`` list
    (earlier entries kept, so nested calls compose) of the configs as dicts, with the audio delay's
    ``resolution_ms``, ``effective_delay_ms`` and ``shift_frames`` and the jitter's ``method``. The new
    stream has no ``capture``: its payloads are no longer the sensor's.
    """
    if stream_index < 0:
        raise ValueError(f"stream_index must be >= 0, got {stream_index}")
    configs = parse_perturbations(perturbations)
    num_frames = stream.num_frames
    records: list[dict[str, Any]] = []
    stages: list[Any] = []
    pristine = not stream.meta.get("perturbations")
    for position, p in enumerate(configs):
        record = p.model_dump(mode="json")
        if isinstance(p, MissingModality):
            _require_modality(stream, p.modality)
            record["count"] = _round_half_up(p.rate * num_frames)
            stages.append(lambda fr, p=p: _missing(fr, p, num_frames, stream_index))
        elif isinstance(p, AudioDelay):
            _require_modality(stream, p.modality)
            period = _frame_period(stream)
            shift = _round_half_up(p.delay_ms / (period * 1000.0))
            record.update(
                resolution_ms=period * 1000.0, effective_delay_ms=shift * period * 1000.0, shift_frames=shift
            )
            stages.append(lambda fr, m=p.modality, shift=shift, period=period: _delay(fr, m, shift, period))
        else:
            modalities = stream.modalities if p.modalities is None else p.modalities
            for m in modalities:
                _require_modality(stream, m)

            capture = stream.capture if pristine and position == 0 else None
            record["method"] = "rendered" if capture is not None else "interpolated"

            def jitter_stage(
                fr: Iterable[Frame],
                p: Jitter = p,
                mods: tuple[str, ...] = modalities,
                capture: Callable[[str, int, float], Any] | None = capture,
            ) -> Any:
                rng = np.random.default_rng([p.seed, stream_index, _CODE_JITTER])
                if capture is not None:
                    return _jitter_rendered(fr, mods, p.delta_ms / 1000.0, num_frames, rng, capture)
                return _jitter(fr, mods, p.delta_ms / 1000.0, num_frames, rng)

            stages.append(jitter_stage)
        records.append(record)

    source = stream.frame_source

    def frame_source() -> Iterator[Frame]:
        frames: Iterable[Frame] = source()
        for stage in stages:
            frames = stage(frames)
        return iter(frames)

    meta = dict(stream.meta)
    meta["perturbations"] = [*stream.meta.get("perturbations", []), *records]
    return Stream(
        stream_id=stream.stream_id,
        classes=stream.classes,
        labels=stream.labels,
        frame_times=stream.frame_times,
        frame_source=frame_source,
        modalities=stream.modalities,
        t0=stream.t0,
        segment_length_s=stream.segment_length_s,
        meta=meta,
    )
