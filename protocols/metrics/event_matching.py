"""Event lists and their matching, the first half of event-level detection
(:mod:`streambench.protocols.metrics.event_detection` holds the conventions — sed_eval 0.2.x
``EventBasedMetrics`` — and the figures).

Events of one class in one stream are a float64 ``[N, 2]`` array of (onset, offset) seconds
(:func:`as_events`). :func:`events_from_frames` turns a per-frame 0/1 decision into events (a run of
active frames ``i..j`` is ``[t0 + i·T, t0 + (j+1)·T)``), :func:`smooth_events` applies dcase_util's
``MetaDataContainer.process_events`` (drop events shorter than ``min_duration_s``, then merge gaps of
at most ``min_gap_s``; both off by default), and :func:`match_events` pairs reference and detected
events: a maximum matching under sed_eval's onset / offset conditions (its
``event_matching_type='optimal'``), the least summed onset distance among the maximum ones.

Pure numpy (scipy for the assignment, imported when a matching is solved): no I/O. Public functions
validate their arguments and raise ``ValueError`` naming the offending argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import (
    BoolArray,
    FloatArray,
    IntArray,
    check_binary_vector,
    check_finite,
)

__all__ = [
    "PERCENTAGE_OF_LENGTH",
    "T_COLLAR_S",
    "EventMatch",
    "as_events",
    "check_conditions",
    "check_seconds",
    "events_from_frames",
    "first_flag_delays",
    "frame_runs",
    "match_events",
    "match_pairs",
    "smooth_events",
]

T_COLLAR_S = 0.200
"""sed_eval's default onset (and offset) collar, seconds."""
PERCENTAGE_OF_LENGTH = 0.5
"""sed_eval's default share of the reference length allowed as offset tolerance."""


# --------------------------------------------------------------------------------------------------
# events


def as_events(events: npt.ArrayLike, name: str = "events") -> FloatArray:
    """``events`` as a float64 ``[N, 2]`` array of (onset, offset) seconds: finite, offset >= onset. An
    empty sequence is ``[0, 2]``."""
    arr = np.asarray(events)
    if arr.size == 0:
        return np.zeros((0, 2), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"{name} must be an [N, 2] array of (onset, offset) seconds, got shape {arr.shape}")
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(f"{name} must hold real numbers (seconds), got dtype {arr.dtype}")
    out = arr.astype(np.float64)
    check_finite(out.ravel(), name)
    reversed_ = out[:, 1] < out[:, 0]
    if reversed_.any():
        i = int(np.argmax(reversed_))
        raise ValueError(
            f"{name}: event {i} ends before it starts (onset {out[i, 0]!r}, offset {out[i, 1]!r})"
        )
    return out


def frame_runs(active: npt.ArrayLike) -> tuple[IntArray, IntArray]:
    """The runs of active frames of a 0/1 frame sequence: (first frame, one past the last frame) each."""
    frames = check_binary_vector(active, "active")
    edges = np.diff(np.concatenate(([0], frames.astype(np.int8), [0])))
    return np.flatnonzero(edges == 1).astype(np.int64), np.flatnonzero(edges == -1).astype(np.int64)


def check_seconds(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number of seconds, got {value!r}")
    out = float(value)
    if not math.isfinite(out) or out < 0:
        raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    return out


def smooth_events(
    events: npt.ArrayLike, *, min_duration_s: float = 0.0, min_gap_s: float = 0.0
) -> FloatArray:
    """dcase_util's ``process_events`` on the events of one class: drop the events shorter than
    ``min_duration_s``, then merge events whose gap is at most ``min_gap_s``; 0 turns either off. The
    result is sorted by onset."""
    ev = as_events(events, "events")
    min_duration = check_seconds(min_duration_s, "min_duration_s")
    min_gap = check_seconds(min_gap_s, "min_gap_s")
    ev = ev[np.argsort(ev[:, 0], kind="stable")]
    if min_duration > 0:
        ev = ev[(ev[:, 1] - ev[:, 0]) >= min_duration]
    if min_gap > 0 and ev.shape[0] > 1:
        reach = np.maximum.accumulate(ev[:, 1])  # the latest offset so far (events may overlap)
        starts = np.concatenate(([True], ev[1:, 0] - reach[:-1] > min_gap))
        group = np.cumsum(starts) - 1
        merged = np.zeros((int(group[-1]) + 1, 2))
        merged[:, 0] = ev[starts, 0]
        np.maximum.at(merged[:, 1], group, ev[:, 1])
        ev = merged
    return ev


def events_from_frames(
    active: npt.ArrayLike,
    frame_period_s: float,
    *,
    t0_s: float = 0.0,
    min_duration_s: float = 0.0,
    min_gap_s: float = 0.0,
) -> FloatArray:
    """Events of a per-frame 0/1 decision: frame ``i`` covers ``[t0 + i·T, t0 + (i+1)·T)``, each run of
    active frames is one event, then :func:`smooth_events` (off by default)."""
    period = check_seconds(frame_period_s, "frame_period_s")
    if period == 0:
        raise ValueError("frame_period_s must be > 0")
    if isinstance(t0_s, bool) or not isinstance(t0_s, (int, float, np.integer, np.floating)):
        raise ValueError(f"t0_s must be a number of seconds, got {t0_s!r}")
    if not math.isfinite(float(t0_s)):
        raise ValueError(f"t0_s must be finite, got {t0_s!r}")
    start, stop = frame_runs(active)
    events = np.column_stack((float(t0_s) + start * period, float(t0_s) + stop * period))
    return smooth_events(events, min_duration_s=min_duration_s, min_gap_s=min_gap_s)


# --------------------------------------------------------------------------------------------------
# matching


@dataclass(frozen=True, slots=True)
class EventMatch:
    """Matched pairs of one class in one stream: ``reference[k]`` pairs with ``detected[k]`` (indices
    into the inputs), ordered by reference index."""

    reference: IntArray
    detected: IntArray

    @property
    def count(self) -> int:
        return int(self.reference.size)


def check_conditions(
    t_collar_s: float, evaluate_onset: bool, evaluate_offset: bool, percentage_of_length: float
) -> None:
    if isinstance(t_collar_s, bool) or not isinstance(t_collar_s, (int, float, np.integer, np.floating)):
        raise ValueError(f"t_collar_s must be a number of seconds, got {t_collar_s!r}")
    if not math.isfinite(float(t_collar_s)) or float(t_collar_s) <= 0:
        raise ValueError(f"t_collar_s must be finite and > 0 (sed_eval's t_collar), got {t_collar_s!r}")
    pol = percentage_of_length
    if (
        isinstance(pol, bool)
        or not isinstance(pol, (int, float, np.integer, np.floating))
        or not 0 <= pol <= 1
    ):
        raise ValueError(f"percentage_of_length must be a number in [0, 1], got {pol!r}")
    if not isinstance(evaluate_onset, bool) or not isinstance(evaluate_offset, bool):
        raise ValueError("evaluate_onset and evaluate_offset must be True or False")
    if not (evaluate_onset or evaluate_offset):
        raise ValueError("evaluate_onset and evaluate_offset cannot both be False")


def _pair_hits(
    ref: FloatArray,
    det: FloatArray,
    r: IntArray,
    d: IntArray,
    collar: float,
    onset: bool,
    offset: bool,
    pol: float,
) -> BoolArray:
    """Which pairs ``(ref[r], det[d])`` meet the conditions, with sed_eval's float expressions."""
    ok = np.ones(r.size, dtype=np.bool_)
    if onset:
        ok &= np.abs(ref[r, 0] - det[d, 0]) <= collar
    if offset:
        ok &= np.abs(ref[r, 1] - det[d, 1]) <= np.maximum(collar, pol * (ref[r, 1] - ref[r, 0]))
    return ok


def _candidate_pairs(
    ref: FloatArray, det: FloatArray, collar: float, onset: bool, offset: bool, pol: float
) -> tuple[IntArray, IntArray]:
    """Every pair meeting the conditions, found through a sorted window on the onsets (offsets when only
    offsets count) and then tested exactly (:func:`_pair_hits`)."""
    column = 0 if onset else 1
    key_r, key_d = ref[:, column], det[:, column]
    tol = np.full(ref.shape[0], collar) if onset else np.maximum(collar, pol * (ref[:, 1] - ref[:, 0]))
    order = np.argsort(key_d, kind="stable")
    sorted_d = key_d[order]
    slack = 1e-9 * (1.0 + np.abs(key_r))  # wider than any rounding of the exact test that follows
    lo = np.searchsorted(sorted_d, key_r - tol - slack, side="left")
    hi = np.searchsorted(sorted_d, key_r + tol + slack, side="right")
    counts = hi - lo
    r = np.repeat(np.arange(ref.shape[0], dtype=np.int64), counts)
    within = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    d = order[np.repeat(lo, counts) + within].astype(np.int64)
    ok = _pair_hits(ref, det, r, d, collar, onset, offset, pol)
    return r[ok], d[ok]


def _maximum_matching(
    r: IntArray, d: IntArray, cost: FloatArray, n_ref: int, n_det: int
) -> tuple[IntArray, IntArray]:
    """A maximum matching of the bipartite graph with edges ``(r, d)`` that has the least summed cost
    among the maximum ones: connected components solved one by one with the assignment algorithm, the
    edges missing from the graph priced above any sum of real edges (so cardinality comes first)."""
    if r.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if np.unique(r).size == r.size and np.unique(d).size == d.size:  # every edge alone: all of them match
        order = np.argsort(r, kind="stable")
        return r[order].astype(np.int64), d[order].astype(np.int64)
    # here, and only for events that compete: scipy (~0.5 s to import) is not paid by every scoring
    from scipy.optimize import linear_sum_assignment
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(r.size), (r, n_ref + d)), shape=(n_ref + n_det, n_ref + n_det))
    _, component = connected_components(graph, directed=False)
    edge_component = component[r]
    sizes = np.bincount(edge_component)
    single = sizes[edge_component] == 1  # a lone edge: its two events match each other
    out_r, out_d = [r[single]], [d[single]]
    rest = np.flatnonzero(~single)
    rest = rest[np.argsort(edge_component[rest], kind="stable")]
    bounds = np.flatnonzero(np.diff(edge_component[rest])) + 1
    for edges in np.split(rest, bounds) if rest.size else []:
        rows, row_of = np.unique(r[edges], return_inverse=True)
        cols, col_of = np.unique(d[edges], return_inverse=True)
        k = min(rows.size, cols.size)
        absent = k * float(cost[edges].max()) + 1.0
        matrix = np.full((rows.size, cols.size), absent)
        real = np.zeros((rows.size, cols.size), dtype=np.bool_)
        matrix[row_of, col_of] = cost[edges]
        real[row_of, col_of] = True
        i, j = linear_sum_assignment(matrix)
        keep = real[i, j]
        out_r.append(rows[i[keep]])
        out_d.append(cols[j[keep]])
    mr, md = np.concatenate(out_r).astype(np.int64), np.concatenate(out_d).astype(np.int64)
    order = np.argsort(mr, kind="stable")
    return mr[order], md[order]


def match_events(
    reference: npt.ArrayLike,
    detected: npt.ArrayLike,
    *,
    t_collar_s: float = T_COLLAR_S,
    evaluate_onset: bool = True,
    evaluate_offset: bool = False,
    percentage_of_length: float = PERCENTAGE_OF_LENGTH,
) -> EventMatch:
    """The matched pairs of one class in one stream: a maximum matching under sed_eval's conditions, the
    least summed onset distance among the maximum ones (module
    :mod:`~streambench.protocols.metrics.event_detection`, "Matching")."""
    check_conditions(t_collar_s, evaluate_onset, evaluate_offset, percentage_of_length)
    ref, det = as_events(reference, "reference"), as_events(detected, "detected")
    return match_pairs(
        ref, det, float(t_collar_s), evaluate_onset, evaluate_offset, float(percentage_of_length)
    )


def match_pairs(
    ref: FloatArray, det: FloatArray, collar: float, onset: bool, offset: bool, pol: float
) -> EventMatch:
    """:func:`match_events` on inputs already validated (:func:`as_events`, :func:`check_conditions`)."""
    r, d = _candidate_pairs(ref, det, collar, onset, offset, pol)
    column = 0 if onset else 1
    cost = np.abs(det[d, column] - ref[r, column])
    mr, md = _maximum_matching(r, d, cost, ref.shape[0], det.shape[0])
    return EventMatch(reference=mr, detected=md)


def first_flag_delays(ref: FloatArray, det: FloatArray, collar: float) -> FloatArray:
    """How late the model first flagged each reference event, on time or not: for each event that some
    detection flags — one starting no earlier than its onset minus ``collar`` and before the next event's
    onset (the stream's end for the last) — the first such detection's onset minus the event's onset, in
    seconds. Events in onset order, as :func:`match_pairs` takes them (``[N, 2]`` onset, offset)."""
    if ref.shape[0] == 0 or det.shape[0] == 0:
        return np.zeros(0, dtype=np.float64)
    order = np.argsort(ref[:, 0], kind="stable")
    onsets = ref[order, 0]
    until = np.append(onsets[1:], np.inf)
    starts = np.sort(det[:, 0])
    first = np.searchsorted(starts, onsets - collar, side="left")
    found = first < starts.size
    found[found] = starts[first[found]] < until[found]
    return np.asarray(starts[first[found]] - onsets[found], dtype=np.float64)
