"""Event-level detection: reference and detected events matched as sound event detection scores them,
with the detection delay, misses, false alarms per hour and event-based F1.

An *event* is an interval ``[onset, offset]`` (seconds) of one class in one stream (sed_eval's "file").
Matching and counting follow sed_eval 0.2.x, ``sed_eval.sound_event.EventBasedMetrics`` (Mesaros,
Heittola & Virtanen, "Metrics for polyphonic sound event detection", Applied Sciences 6(6) 162, 2016,
§2.2 "event-based metrics"):

- **Onset condition**: ``|detected onset - reference onset| <= t_collar`` (sed_eval's default
  ``t_collar`` = 0.200 s; it must be > 0).
- **Offset condition** (``evaluate_offset``): ``|detected offset - reference offset| <= max(t_collar,
  percentage_of_length * (reference offset - reference onset))`` (``percentage_of_length`` in [0, 1],
  default 0.5). sed_eval evaluates onset *and* offset by default; here the offset is optional and off
  by default (onset only, as detection delay and keyword-spotting evaluations count a detection).
- **Matching**: within one stream and one class, a reference and a detected event may pair when the
  conditions hold; each event pairs at most once, and the pairs form a *maximum* matching of that
  bipartite graph — sed_eval's ``event_matching_type='optimal'``, its default (Hopcroft-Karp maximum
  cardinality matching); its ``'greedy'`` mode (the first fitting detection in list order, kept there
  for backward compatibility) is not implemented. The counts are those of every maximum matching;
  among them this module takes one that minimises the summed onset distance (offset distance when only
  offsets are evaluated; :func:`scipy.optimize.linear_sum_assignment`), so the delays are the nearest
  pairing's, where sed_eval's pick depends on list order.
- **Counts per class** (sed_eval's class-wise): matched ``Ntp``, missed ``Nref - Ntp``, false alarms
  ``Nsys - Ntp``. Precision ``Ntp / Nsys`` and recall ``Ntp / Nref`` are undefined (NaN) when their
  denominator is 0, as in sed_eval; F1 ``2PR / (P + R)`` is 0 when both are 0 and NaN when either is NaN.
  The class-wise average (macro F1) is the ``nanmean`` over classes.
- **Overall** (micro): counts summed over classes and streams; overall precision, recall and F1 from
  them, as sed_eval's overall F-measure. sed_eval's error rate is not computed: its substitutions are
  counted among the events the overall matching left over, and which events those are depends on which
  maximum matching its Hopcroft-Karp search happens to return (the order of its input lists), not on
  the events alone.
- **Detection delay** of a matched pair: ``detected onset - reference onset`` (offset delay likewise).
  A detection may precede the reference within the collar: a *negative* delay is kept as it is. Delays
  are summarised by :func:`delay_summary` (median, 90th percentile, min, max).
- **False alarms per hour**: a class's false alarms over the scored duration; the duration of a stream
  is given (the stream's length: what the online protocol passes) or, by default, sed_eval's evaluated
  length of an event-based evaluation: the latest offset of the stream's *reference* events, whatever
  the detections (``EventBasedMetrics.evaluate`` adds ``reference_event_list.max_offset``; 0 for a stream
  without reference events; its segment-based metrics take the latest of both lists instead, which is
  not this convention). A detection past the last reference event counts as a false alarm but lengthens
  nothing: reference [0, 1] s and a detection [5, 9] s are 1 false alarm in 1 s.

Detected events from a frame-wise decision (:func:`events_from_frames`): a run of active frames
``i..j`` is the event ``[t0 + i·T, t0 + (j+1)·T)`` for a frame period ``T``. Optional post-processing
(:func:`smooth_events`, both off by default) follows dcase_util's ``MetaDataContainer.process_events``:
first events shorter than ``min_duration_s`` are dropped, then events separated by a gap of at most
``min_gap_s`` are merged (to the later offset of the two).

Pure numpy (scipy for the assignment): no I/O. Public functions validate their arguments and raise
``ValueError`` naming the offending argument.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import FloatArray, check_finite, check_int
from streambench.protocols.metrics.event_matching import (
    PERCENTAGE_OF_LENGTH,
    T_COLLAR_S,
    EventMatch,
    as_events,
    check_conditions,
    check_seconds,
    events_from_frames,
    frame_runs,
    match_events,
    match_pairs,
    smooth_events,
)

__all__ = [
    "PERCENTAGE_OF_LENGTH",
    "T_COLLAR_S",
    "ClassEvents",
    "DelaySummary",
    "EventDetection",
    "EventMatch",
    "as_events",
    "delay_summary",
    "event_detection",
    "event_prf",
    "events_from_frames",
    "frame_runs",
    "match_events",
    "smooth_events",
]

# --------------------------------------------------------------------------------------------------
# figures


@dataclass(frozen=True, slots=True)
class DelaySummary:
    """Distribution of delays (seconds): sample count, median, 90th percentile (numpy's default linear
    interpolation, Hyndman & Fan type 7), min and max."""

    n: int
    median_s: float
    p90_s: float
    min_s: float
    max_s: float


def delay_summary(delays_s: npt.ArrayLike) -> DelaySummary | None:
    """:class:`DelaySummary` of ``delays_s`` (finite seconds, negative allowed); None when empty."""
    arr = np.asarray(delays_s, dtype=np.float64).ravel()
    check_finite(arr, "delays_s")
    if arr.size == 0:
        return None
    return DelaySummary(
        n=int(arr.size),
        median_s=float(np.median(arr)),
        p90_s=float(np.percentile(arr, 90)),
        min_s=float(arr.min()),
        max_s=float(arr.max()),
    )


def event_prf(matched: int, reference: int, detected: int) -> tuple[float, float, float]:
    """sed_eval's precision ``Ntp / Nsys``, recall ``Ntp / Nref`` and F1: NaN where a denominator is 0,
    F1 0 when precision and recall are both 0 (``sed_eval.metric``)."""
    for name, value in (("matched", matched), ("reference", reference), ("detected", detected)):
        check_int(value, name, minimum=0)
    if matched > min(reference, detected):
        raise ValueError(
            f"matched ({matched}) cannot exceed reference ({reference}) or detected ({detected})"
        )
    precision = math.nan if detected == 0 else matched / detected
    recall = math.nan if reference == 0 else matched / reference
    if precision == 0 and recall == 0:
        return precision, recall, 0.0
    return precision, recall, 2 * precision * recall / (precision + recall)


@dataclass(frozen=True, slots=True)
class ClassEvents:
    """One class over every stream: sed_eval's class-wise counts, and the delays of the matched pairs
    (stream by stream, in reference order)."""

    reference: int
    detected: int
    matched: int
    onset_delays_s: FloatArray
    offset_delays_s: FloatArray

    @property
    def missed(self) -> int:
        return self.reference - self.matched

    @property
    def false_alarms(self) -> int:
        return self.detected - self.matched

    def precision_recall_f1(self) -> tuple[float, float, float]:
        """sed_eval's class-wise precision, recall and F1 (:func:`event_prf`)."""
        return event_prf(self.matched, self.reference, self.detected)

    @property
    def f1(self) -> float:
        return self.precision_recall_f1()[2]


@dataclass(frozen=True, slots=True)
class EventDetection:
    """Event-based figures over streams and classes (module docstring)."""

    classes: tuple[ClassEvents, ...]
    duration_s: float

    @property
    def reference(self) -> int:
        return sum(c.reference for c in self.classes)

    @property
    def detected(self) -> int:
        return sum(c.detected for c in self.classes)

    @property
    def matched(self) -> int:
        return sum(c.matched for c in self.classes)

    def precision_recall_f1(self) -> tuple[float, float, float]:
        """Overall (micro) precision, recall and F1."""
        return event_prf(self.matched, self.reference, self.detected)

    @property
    def macro_f1(self) -> float:
        """sed_eval's class-wise average F1: the mean over the classes whose F1 is defined; NaN if none."""
        values = np.array([c.f1 for c in self.classes])
        return float(values[~np.isnan(values)].mean()) if (~np.isnan(values)).any() else math.nan

    def false_alarms_per_hour(self, class_index: int) -> float:
        """False alarms of a class per hour of scored duration; NaN when the duration is 0."""
        fa = self.classes[class_index].false_alarms
        return math.nan if self.duration_s == 0 else fa * 3600.0 / self.duration_s


def _stream_lists(value: object, name: str) -> list[list[FloatArray]]:
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a sequence of streams, each a sequence of per-class event arrays")
    out = []
    for s, per_class in enumerate(value):
        if not isinstance(per_class, Sequence) or isinstance(per_class, (str, bytes)):
            raise ValueError(f"{name}[{s}] must be a sequence of per-class [N, 2] event arrays")
        out.append([as_events(ev, f"{name}[{s}][{c}]") for c, ev in enumerate(per_class)])
    return out


def event_detection(
    reference: Sequence[Sequence[npt.ArrayLike]],
    detected: Sequence[Sequence[npt.ArrayLike]],
    *,
    durations_s: Sequence[float] | None = None,
    t_collar_s: float = T_COLLAR_S,
    evaluate_onset: bool = True,
    evaluate_offset: bool = False,
    percentage_of_length: float = PERCENTAGE_OF_LENGTH,
) -> EventDetection:
    """Event-based figures of ``detected`` against ``reference``: ``reference[s][c]`` are the events
    (``[N, 2]`` onset, offset seconds) of class ``c`` in stream ``s``; ``durations_s[s]`` the stream's
    scored duration (default: sed_eval's event-based evaluated length, the latest offset of the stream's
    reference events)."""
    check_conditions(t_collar_s, evaluate_onset, evaluate_offset, percentage_of_length)
    refs, dets = _stream_lists(reference, "reference"), _stream_lists(detected, "detected")
    if len(refs) != len(dets):
        raise ValueError(f"detected has {len(dets)} streams, reference {len(refs)}")
    if not refs:
        raise ValueError("reference holds no stream")
    n_classes = len(refs[0])
    for s, (r, d) in enumerate(zip(refs, dets, strict=True)):
        if len(r) != n_classes or len(d) != n_classes:
            raise ValueError(
                f"stream {s}: reference has {len(r)} and detected {len(d)} classes, expected {n_classes}"
            )
    if n_classes == 0:
        raise ValueError("reference has no class")
    if durations_s is None:
        durations = [max((float(ev[:, 1].max()) for ev in r if ev.size), default=0.0) for r in refs]
    else:
        if len(durations_s) != len(refs):
            raise ValueError(
                f"durations_s has {len(durations_s)} entries, expected one per stream ({len(refs)})"
            )
        durations = [check_seconds(x, f"durations_s[{s}]") for s, x in enumerate(durations_s)]
    collar, pol = float(t_collar_s), float(percentage_of_length)
    matched = np.zeros(n_classes, dtype=np.int64)
    onset_delays: list[list[FloatArray]] = [[] for _ in range(n_classes)]
    offset_delays: list[list[FloatArray]] = [[] for _ in range(n_classes)]
    for r_stream, d_stream in zip(refs, dets, strict=True):
        for c in range(n_classes):
            ref, det = r_stream[c], d_stream[c]
            m = match_pairs(ref, det, collar, evaluate_onset, evaluate_offset, pol)
            matched[c] += m.count
            onset_delays[c].append(det[m.detected, 0] - ref[m.reference, 0])
            offset_delays[c].append(det[m.detected, 1] - ref[m.reference, 1])
    classes = tuple(
        ClassEvents(
            reference=sum(r[c].shape[0] for r in refs),
            detected=sum(d[c].shape[0] for d in dets),
            matched=int(matched[c]),
            onset_delays_s=np.concatenate(onset_delays[c]),
            offset_delays_s=np.concatenate(offset_delays[c]),
        )
        for c in range(n_classes)
    )
    return EventDetection(classes=classes, duration_s=float(sum(durations)))
