"""Accuracy of a capacity point (protocols/capacity_score.py scores the point with it): F1@deadline of the
loaded outputs, the reference it is held against, and whether the model answered differently under load.

Pure: recorded arrays in, figures out. Definitions followed:

- **F1@Δt** (seed 004 §6.2.2 (1), Strict, micro) at Δt = the deadline; per unit (a frame of a session) the
  latest prediction that refers to it and arrived inside the window counts. The loaded run is scored on the
  computation-aware clock (``t_pred`` = completion of the emitting frame: a late answer costs F1 as in
  deployment), the references on the algorithmic clock (``t_pred`` = arrival of the emitting frame).
- **The reference** (``../shared/DESIGN.md`` "Causality": "'F1 held' is held against the model's own
  unloaded output"): ``unloaded`` (the default) is the model's own output on the same frames served
  unloaded, one frame at a time by a worker that serves nothing else (the harness's replay of a sample of
  the point's sessions), scored with the loaded run's F1 over the same frames: the two differ only by
  what load did to the answers and their timing. ``same_units`` (the loaded run's own outputs on the
  algorithmic clock) and ``one_stream`` (the figure at N = 1) are kept for older configurations; neither
  sees a model that answers differently when it falls behind.
- **Answers changed under load**: the share of the replayed frames whose decisions (every counted class,
  on the algorithmic clock: what was answered, whenever) equal the unloaded ones. A deterministic model
  agrees on every frame whatever the load; one that sheds load (answers "background" when behind) does
  not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from streambench.protocols.capacity import ArrivalSchedule, CapacityConfig
from streambench.protocols.metrics import (
    apply_thresholds,
    class_counts,
    f1_from_counts,
    gather_decisions,
    select_in_window,
    window_bound_ns,
)
from streambench.protocols.metrics.checks import IntArray

__all__ = [
    "AGREEMENT_FLOOR",
    "Outputs",
    "UnloadedReference",
    "agreement_over",
    "f1_over",
    "frame_labels",
    "unit_decisions",
]

AGREEMENT_FLOOR = 0.99
"""Answers changed under load when fewer than 99 % of the replayed frames are decided as unloaded (a
deterministic model agrees on all; the 1 % leaves room for float rounding at the threshold)."""


@dataclass(frozen=True)
class Outputs:
    """Predictions of a point's sessions: the schedule frame that emitted each (``[P]``), the frame of its
    session it labels (``[P]``) and its scores (``[P, C]``), in emission order."""

    pred_frame: IntArray
    pred_refers: IntArray
    pred_scores: np.ndarray


@dataclass(frozen=True)
class UnloadedReference:
    """The model's own unloaded outputs on some of a point's sessions (``frames``: the schedule frames of
    the sessions replayed, ``[F]`` bool), emitted by the schedule frames they answer."""

    outputs: Outputs
    frames: np.ndarray


def frame_labels(schedule: ArrivalSchedule, labels: Sequence[np.ndarray]) -> np.ndarray:
    """The reference labels ``[F, C]`` of every schedule frame (``labels[s]``: source stream ``s``'s)."""
    stacked = np.concatenate([np.asarray(lab, dtype=bool) for lab in labels])
    starts = np.concatenate(([0], np.cumsum([len(lab) for lab in labels])[:-1])).astype(np.int64)
    return stacked[starts[schedule.session_source[schedule.session]] + schedule.frame]


def unit_decisions(
    schedule: ArrivalSchedule,
    outputs: Outputs,
    t_pred_ns: np.ndarray,
    deadline_ms: float,
    config: CapacityConfig,
    num_classes: int,
) -> np.ndarray:
    """Decisions ``[F, C]`` per schedule frame: the latest prediction labelling it whose delay
    ``t_pred - arrival`` lies in ``[0, deadline]`` (Strict), thresholded; none: every class False.
    ``t_pred_ns[p]``: when prediction ``p`` became available (the clock it is scored on)."""
    order = np.lexsort((schedule.frame, schedule.session)).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(schedule.session_frames)[:-1])).astype(np.int64)
    sessions = schedule.session[outputs.pred_frame]
    inside = outputs.pred_refers < schedule.session_frames[sessions]  # a label past the point's cut
    units = order[offsets[sessions[inside]] + outputs.pred_refers[inside]]
    threshold = np.full(num_classes, config.decision_threshold)
    decided = apply_thresholds(outputs.pred_scores[inside], threshold)
    delay = t_pred_ns[inside] - schedule.arrival_ns[units]
    chosen = select_in_window(units, delay, schedule.num_frames, window_bound_ns(deadline_ms), "strict")
    return gather_decisions(chosen, decided, num_classes)


def f1_over(gt: np.ndarray, decisions: np.ndarray, frames: np.ndarray, columns: np.ndarray) -> float:
    """Micro F1 over the ``frames`` mask and the counted ``columns`` (online's headline F1)."""
    return f1_from_counts(class_counts(gt[frames][:, columns], decisions[frames][:, columns]), "micro")


def agreement_over(a: np.ndarray, b: np.ndarray, frames: np.ndarray, columns: np.ndarray) -> float | None:
    """Share of the ``frames`` whose decisions over ``columns`` are equal in ``a`` and ``b`` (None: none)."""
    if not frames.any():
        return None
    same = (a[frames][:, columns] == b[frames][:, columns]).all(axis=1)
    return float(same.mean())
