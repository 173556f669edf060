"""Event-level detection metrics (protocols/metrics/event_detection.py, event_matching.py): hand-computed
cases, and agreement with sed_eval's ``EventBasedMetrics`` on random event lists.

sed_eval 0.2.1 installs from PyPI but does not import on a current setuptools (its dependency dcase_util
imports ``pkg_resources``, which setuptools 81 removed; it also brings numba and librosa, whose numpy cap
would hold the dev environment's numpy back), so it is not a ``dev`` dependency. The agreement test runs
against ``_SedEvalReference`` below: a TEST-ONLY REFERENCE TRANSCRIPTION of sed_eval 0.2.x
(TUT-ARG/sed_eval, ``sed_eval/sound_event.py`` ``EventBasedMetrics.evaluate`` with
``event_matching_type='optimal'``, its class-wise and overall counts, its evaluated length and
``results``; ``sed_eval/metric.py``; ``sed_eval/util/event_matching.py`` ``bipartite_match``, itself from
mir_eval), loop for loop, with dict events as sed_eval takes them. It is never imported by product code.
Where sed_eval is installed, :func:`test_the_evaluated_length_is_sed_evals_own` checks the length against
sed_eval itself (``pkg_resources`` stubbed: dcase_util only imports it).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from streambench.protocols.metrics.event_detection import (
    delay_summary,
    event_detection,
    event_prf,
    events_from_frames,
    frame_runs,
    match_events,
    smooth_events,
)

# --------------------------------------------------------------------------------------------------
# hand-computed cases


def test_a_detection_within_the_collar_matches_and_its_delay_is_detected_minus_reference() -> None:
    result = event_detection([[[[1.0, 2.0]]]], [[[[1.05, 2.1]]]], durations_s=[10.0])
    (speech,) = result.classes
    assert (speech.reference, speech.detected, speech.matched, speech.missed, speech.false_alarms) == (
        1,
        1,
        1,
        0,
        0,
    )
    assert speech.onset_delays_s.tolist() == pytest.approx(
        [0.05]
    ) and speech.offset_delays_s.tolist() == pytest.approx([0.1])
    assert result.precision_recall_f1() == (1.0, 1.0, 1.0)


def test_a_detection_before_the_onset_within_the_collar_has_a_negative_delay() -> None:
    match = match_events([[1.0, 2.0]], [[0.85, 2.0]])
    assert match.reference.tolist() == [0] and match.detected.tolist() == [0]
    result = event_detection([[[[1.0, 2.0]]]], [[[[0.85, 2.0]]]])
    assert result.classes[0].onset_delays_s.tolist() == pytest.approx([-0.15])


def test_outside_the_collar_is_one_miss_and_one_false_alarm_per_hour_of_audio() -> None:
    # detected 300 ms late with a 200 ms collar: missed, and the detection is a false alarm
    result = event_detection([[[[1.0, 2.0]]], [[]]], [[[[1.3, 2.0]]], [[]]], durations_s=[900.0, 900.0])
    speech = result.classes[0]
    assert (speech.matched, speech.missed, speech.false_alarms) == (0, 1, 1)
    assert result.false_alarms_per_hour(0) == pytest.approx(2.0)  # 1 in 1800 s
    assert speech.onset_delays_s.size == 0
    assert result.precision_recall_f1() == (0.0, 0.0, 0.0)
    wider = event_detection([[[[1.0, 2.0]]]], [[[[1.3, 2.0]]]], t_collar_s=0.31)
    assert wider.classes[0].matched == 1


def test_optimal_matching_finds_the_pairing_greedy_misses() -> None:
    # detection X (0.15) fits both references, Y (-0.15) only A: greedy in list order gives A-X and loses B;
    # the maximum matching is A-Y, B-X
    reference, detected = [[0.0, 1.0], [0.3, 1.0]], [[0.15, 1.0], [-0.15, 1.0]]
    match = match_events(reference, detected)
    assert match.reference.tolist() == [0, 1] and match.detected.tolist() == [1, 0]
    result = event_detection([[reference]], [[detected]])
    assert result.classes[0].onset_delays_s.tolist() == pytest.approx([-0.15, -0.15])


def test_among_maximum_matchings_the_nearest_pairing_is_taken() -> None:
    # both pairings match two events; the nearest gives delays 0.05 and 0.05, not 0.15 and -0.05
    result = event_detection([[[[0.0, 1.0], [0.1, 1.0]]]], [[[[0.15, 1.0], [0.05, 1.0]]]])
    assert sorted(result.classes[0].onset_delays_s.tolist()) == pytest.approx([0.05, 0.05])


def test_the_offset_collar_is_the_larger_of_the_collar_and_half_the_reference_length() -> None:
    reference = [[0.0, 1.0]]
    # offset 0.6 s late: beyond max(0.2, 0.5 * 1.0)
    assert match_events(reference, [[0.0, 1.6]], evaluate_offset=True).count == 0
    assert match_events(reference, [[0.0, 1.6]]).count == 1  # onset only (the default)
    assert match_events(reference, [[0.0, 1.45]], evaluate_offset=True).count == 1
    # a short event: the 0.2 s collar is the larger
    assert match_events([[0.0, 0.1]], [[0.0, 0.29]], evaluate_offset=True).count == 1
    assert match_events([[0.0, 0.1]], [[0.0, 0.31]], evaluate_offset=True).count == 0
    assert match_events([[0.0, 1.0]], [[0.0, 1.6]], evaluate_offset=True, percentage_of_length=0.0).count == 0
    # offsets only: onsets far apart still match
    assert match_events(reference, [[0.5, 1.1]], evaluate_onset=False, evaluate_offset=True).count == 1


def test_overall_figures_sum_the_classes_and_macro_averages_them() -> None:
    # "dog" at 2 s detected as "cat": a miss of dog and a false alarm of cat (no label crosses classes)
    reference = [[[[0.0, 1.0], [2.0, 3.0]], [[5.0, 6.0]]]]
    detected = [[[[0.1, 1.0]], [[2.05, 3.0]]]]
    result = event_detection(reference, detected)
    dog, cat = result.classes
    assert (dog.matched, dog.missed, dog.false_alarms) == (1, 1, 0)
    assert (cat.matched, cat.missed, cat.false_alarms) == (0, 1, 1)
    p, r, f = result.precision_recall_f1()
    assert (p, r) == pytest.approx((1 / 2, 1 / 3)) and f == pytest.approx(2 * p * r / (p + r))
    # macro: dog F1 2/3 (P 1, R 1/2), cat F1 0
    assert result.macro_f1 == pytest.approx((2 / 3 + 0.0) / 2)


def test_undefined_precision_and_recall_are_nan_as_sed_eval_and_macro_skips_them() -> None:
    assert event_prf(0, 0, 0)[0] != event_prf(0, 0, 0)[0]  # NaN
    p, r, f = event_prf(0, 3, 0)
    assert math.isnan(p) and r == 0.0 and math.isnan(f)
    assert event_prf(0, 3, 2) == (0.0, 0.0, 0.0)
    # class 1 has neither reference nor detection: left out of the class-wise average
    result = event_detection([[[[0.0, 1.0]], []]], [[[[0.0, 1.0]], []]])
    assert math.isnan(result.classes[1].f1) and result.macro_f1 == 1.0
    empty = event_detection([[[]]], [[[]]])
    assert math.isnan(empty.macro_f1) and math.isnan(empty.precision_recall_f1()[2])
    with pytest.raises(ValueError, match=r"matched \(2\) cannot exceed"):
        event_prf(2, 1, 5)


def test_default_duration_is_sed_evals_evaluated_length() -> None:
    """sed_eval 0.2.1, ``sed_eval/sound_event.py``, ``EventBasedMetrics.evaluate``: ``self.evaluated_length
    += reference_event_list.max_offset`` per file: the latest offset of the *reference* events, 0 for a
    file without any; a detection past it lengthens nothing (its ``SegmentBasedMetrics`` takes the latest of
    both lists, which is not this convention). Reference [0, 1] s, a detection [5, 9] s: one false alarm in
    1 s, 3600 per hour (before: 9 s, the latest of both, 400 per hour)."""
    issue = event_detection([[[[0.0, 1.0]]]], [[[[5.0, 9.0]]]])
    assert issue.duration_s == 1.0
    assert issue.false_alarms_per_hour(0) == pytest.approx(3600.0)
    result = event_detection([[[[0.0, 1.0]]], [[[0.0, 2.0]]]], [[[[5.0, 6.0]]], [[]]])
    assert result.duration_s == 1.0 + 2.0
    assert result.false_alarms_per_hour(0) == pytest.approx(1 * 3600 / 3.0)
    no_reference = event_detection([[[]], [[[0.5, 3.0]]]], [[[[2.0, 7.0]]], [[]]])
    assert no_reference.duration_s == 0.0 + 3.0  # the first stream's detection counts, adds no length
    assert math.isnan(event_detection([[[]]], [[[]]]).false_alarms_per_hour(0))
    given = event_detection([[[[0.0, 1.0]]]], [[[[5.0, 9.0]]]], durations_s=[10.0])
    assert given.duration_s == 10.0  # the online protocol passes each stream's length


def test_events_from_frames_and_frame_runs() -> None:
    active = [0, 1, 1, 0, 1, 0, 0, 0, 1, 1]
    start, stop = frame_runs(active)
    assert start.tolist() == [1, 4, 8] and stop.tolist() == [3, 5, 10]
    events = events_from_frames(active, 0.1, t0_s=1.0)
    assert np.allclose(events, [[1.1, 1.3], [1.4, 1.5], [1.8, 2.0]])
    assert events_from_frames([0, 0], 0.1).shape == (0, 2)
    # dcase_util's order: short events dropped first (the 1-frame one), then gaps merged
    assert np.allclose(events_from_frames(active, 0.1, min_duration_s=0.15), [[0.1, 0.3], [0.8, 1.0]])
    merged = events_from_frames(active, 0.1, min_gap_s=0.15)
    assert np.allclose(merged, [[0.1, 0.5], [0.8, 1.0]])
    assert np.allclose(events_from_frames(active, 0.1, min_gap_s=0.35), [[0.1, 1.0]])


def test_smooth_events_merges_overlaps_to_the_later_offset() -> None:
    merged = smooth_events([[2.0, 3.0], [0.0, 5.0], [5.05, 6.0]], min_gap_s=0.1)
    assert np.allclose(merged, [[0.0, 6.0]])
    assert smooth_events([[0.0, 1.0], [1.0, 2.0]]).tolist() == [[0.0, 1.0], [1.0, 2.0]]  # 0: off


def test_delay_summary() -> None:
    summary = delay_summary([0.3, -0.1, 0.1, 0.2, 0.0])
    assert summary is not None
    assert (summary.n, summary.median_s, summary.min_s, summary.max_s) == (5, 0.1, -0.1, 0.3)
    assert summary.p90_s == pytest.approx(0.26)  # linear: 0.2 + 0.6 * (0.3 - 0.2)
    assert delay_summary([]) is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: match_events([[1.0, 0.5]], []), r"reference: event 0 ends before it starts"),
        (lambda: match_events([[0.0, 1.0, 2.0]], []), r"reference must be an \[N, 2\] array"),
        (lambda: match_events([], [[0.0, float("nan")]]), r"detected contains NaN"),
        (lambda: match_events([], [], t_collar_s=0.0), r"t_collar_s must be finite and > 0"),
        (lambda: match_events([], [], percentage_of_length=1.5), r"percentage_of_length must be"),
        (lambda: match_events([], [], evaluate_onset=False), r"cannot both be False"),
        (lambda: events_from_frames([0, 2], 0.1), r"active must contain only 0 and 1"),
        (lambda: events_from_frames([0, 1], 0.0), r"frame_period_s must be > 0"),
        (lambda: smooth_events([], min_gap_s=-1.0), r"min_gap_s must be finite and >= 0"),
        (lambda: event_detection([[[]]], [[[], []]]), r"stream 0: reference has 1 and detected 2 classes"),
        (lambda: event_detection([[[]]], []), r"detected has 0 streams, reference 1"),
        (lambda: event_detection([[[]]], [[[]]], durations_s=[1.0, 2.0]), r"durations_s has 2 entries"),
        (lambda: event_detection([[[]]], [[[]]], durations_s=[-1.0]), r"durations_s\[0\] must be finite"),
        (lambda: event_detection([[[[0.0, "a"]]]], [[[]]]), r"reference\[0\]\[0\] must hold real numbers"),
    ],
)
def test_bad_input_names_the_argument(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_a_long_stream_is_matched_component_by_component() -> None:
    # 2000 events, every detection 50 ms late, 10 % of them dropped and 100 extra false alarms far away
    rng = np.random.default_rng(7)
    onsets = np.cumsum(rng.uniform(1.0, 3.0, 2000))
    reference = np.column_stack((onsets, onsets + 0.5))
    kept = reference[rng.random(2000) > 0.1] + 0.05
    extra = np.column_stack((onsets[:100] + 0.6, onsets[:100] + 0.7))
    result = event_detection([[reference]], [[np.concatenate((kept, extra))]])
    speech = result.classes[0]
    assert speech.matched == kept.shape[0] and speech.false_alarms == 100
    assert np.allclose(speech.onset_delays_s, 0.05)


# --------------------------------------------------------------------------------------------------
# agreement with sed_eval (TEST-ONLY REFERENCE TRANSCRIPTION, module docstring)


def _sed_eval_bipartite_match(graph: dict[int, list[int]]) -> dict[int, int]:
    """sed_eval.util.event_matching.bipartite_match (Hopcroft-Karp, after mir_eval): left -> neighbours
    in; right vertex -> its left match out. Transcribed for this test only."""
    matching: dict[int, int] = {}
    for u in graph:
        for v in graph[u]:
            if v not in matching:
                matching[v] = u
                break
    while True:
        preds: dict[int, list[int]] = {}
        unmatched: list[int] = []
        pred: dict[int, Any] = {u: unmatched for u in graph}
        for v in matching:
            del pred[matching[v]]
        layer = list(pred)
        while layer and not unmatched:
            new_layer: dict[int, list[int]] = {}
            for u in layer:
                for v in graph[u]:
                    if v not in preds:
                        new_layer.setdefault(v, []).append(u)
            layer = []
            for v in new_layer:
                preds[v] = new_layer[v]
                if v in matching:
                    layer.append(matching[v])
                    pred[matching[v]] = v
                else:
                    unmatched.append(v)
        if not unmatched:
            return matching

        for v in unmatched:
            _recurse(v, preds, pred, unmatched, matching)


def _recurse(
    v: int, preds: dict[int, list[int]], pred: dict[int, Any], unmatched: list[int], matching: dict[int, int]
) -> bool:
    """bipartite_match's inner ``recurse`` (a closure there; its variables passed here): search backward
    through the layers for an alternating path."""
    if v in preds:
        candidates = preds[v]
        del preds[v]
        for u in candidates:
            if u in pred:
                pu = pred[u]
                del pred[u]
                if pu is unmatched or _recurse(pu, preds, pred, unmatched, matching):
                    matching[v] = u
                    return True
    return False


class _SedEvalReference:
    """sed_eval.sound_event.EventBasedMetrics (event_matching_type='optimal',
    empty_system_output_handling None): evaluate() file by file, then the overall and class-wise
    results. Transcribed for this test only."""

    def __init__(
        self, labels: list[str], t_collar: float, percentage_of_length: float, onset: bool, offset: bool
    ) -> None:
        self.labels, self.t_collar, self.pol = labels, t_collar, percentage_of_length
        self.onset, self.offset = onset, offset
        self.overall = {"Nref": 0.0, "Nsys": 0.0, "Ntp": 0.0}
        self.evaluated_length = 0.0
        self.class_wise = {c: {"Nref": 0.0, "Nsys": 0.0, "Ntp": 0.0, "Nfp": 0.0, "Nfn": 0.0} for c in labels}

    def validate_onset(self, ref: dict[str, Any], est: dict[str, Any]) -> bool:
        return math.fabs(ref["onset"] - est["onset"]) <= self.t_collar

    def validate_offset(self, ref: dict[str, Any], est: dict[str, Any]) -> bool:
        annotated_length = ref["offset"] - ref["onset"]
        return math.fabs(ref["offset"] - est["offset"]) <= max(self.t_collar, self.pol * annotated_length)

    def _hit_matrix(self, refs: list[dict[str, Any]], ests: list[dict[str, Any]], labels: bool) -> np.ndarray:
        hit = np.ones((len(refs), len(ests)), dtype=bool)
        for j in range(len(refs)):
            for i in range(len(ests)):
                if labels:
                    hit[j, i] = refs[j]["event_label"] == ests[i]["event_label"]
        if self.onset:
            onset_hit = np.zeros((len(refs), len(ests)), dtype=bool)
            for j in range(len(refs)):
                for i in range(len(ests)):
                    onset_hit[j, i] = self.validate_onset(refs[j], ests[i])
            hit *= onset_hit
        if self.offset:
            offset_hit = np.zeros((len(refs), len(ests)), dtype=bool)
            for j in range(len(refs)):
                for i in range(len(ests)):
                    offset_hit[j, i] = self.validate_offset(refs[j], ests[i])
            hit *= offset_hit
        return hit

    @staticmethod
    def _match(hit: np.ndarray) -> list[tuple[int, int]]:
        graph: dict[int, list[int]] = {}
        for ref_i, est_i in zip(*np.where(hit), strict=True):
            graph.setdefault(int(est_i), []).append(int(ref_i))
        return sorted(_sed_eval_bipartite_match(graph).items())

    def evaluate(self, refs: list[dict[str, Any]], ests: list[dict[str, Any]]) -> None:
        self.evaluated_length += max((e["offset"] for e in refs), default=0)  # MetaDataContainer.max_offset
        n_sys, n_ref = len(ests), len(refs)
        matching = self._match(self._hit_matrix(refs, ests, labels=True))
        n_tp = len(matching)  # sed_eval's substitutions and error rate follow: not compared (see the module)
        self.overall["Nref"] += n_ref
        self.overall["Nsys"] += n_sys
        self.overall["Ntp"] += n_tp
        for label in self.labels:
            class_refs = [e for e in refs if e["event_label"] == label]
            class_ests = [e for e in ests if e["event_label"] == label]
            class_tp = len(self._match(self._hit_matrix(class_refs, class_ests, labels=False)))
            counts = self.class_wise[label]
            counts["Nref"] += len(class_refs)
            counts["Nsys"] += len(class_ests)
            counts["Ntp"] += class_tp
            counts["Nfp"] += len(class_ests) - class_tp
            counts["Nfn"] += len(class_refs) - class_tp

    @staticmethod
    def _f(n_tp: float, n_sys: float, n_ref: float) -> tuple[float, float, float]:
        precision = np.nan if n_sys == 0 else float(n_tp / float(n_sys))
        recall = np.nan if n_ref == 0 else float(n_tp / float(n_ref))
        if precision == 0 and recall == 0:
            return precision, recall, 0.0
        return precision, recall, float(2 * precision * recall / (precision + recall))

    def results(self) -> dict[str, Any]:
        o = self.overall
        class_f = [self._f(c["Ntp"], c["Nsys"], c["Nref"])[2] for c in self.class_wise.values()]
        return {
            "overall_f": self._f(o["Ntp"], o["Nsys"], o["Nref"]),
            "class_wise_average_f": float(np.nanmean(class_f)) if not np.all(np.isnan(class_f)) else np.nan,
            "evaluated_length": self.evaluated_length,
            "counts": dict(o),
            "class_wise": {k: dict(v) for k, v in self.class_wise.items()},
        }


def _random_case(rng: np.random.Generator) -> tuple[list[list[np.ndarray]], list[list[np.ndarray]], int]:
    """Streams of events on a coarse grid (so that onsets land exactly on the collar's edge) or drawn
    freely; detections are most references jittered (some made zero-length) and a few anywhere."""
    n_classes, n_streams = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    grid = bool(rng.random() < 0.5)

    def times(n: int) -> np.ndarray:
        return np.round(rng.uniform(0, 10, n) / 0.05) * 0.05 if grid else rng.uniform(0, 10, n)

    refs, dets = [], []
    for _ in range(n_streams):
        r_stream, d_stream = [], []
        for _ in range(n_classes):
            onsets = times(int(rng.integers(0, 7)))
            lengths = (
                np.round(rng.uniform(0.05, 2.0, onsets.size) / 0.05) * 0.05
                if grid
                else rng.uniform(0.0, 2.0, onsets.size)
            )
            ref = np.column_stack((onsets, onsets + lengths))
            near = ref[rng.random(ref.shape[0]) < 0.7]
            jitter = (
                (np.round(rng.normal(0, 0.15, near.shape) / 0.05) * 0.05)
                if grid
                else rng.normal(0, 0.15, near.shape)
            )
            moved = near + jitter
            moved[:, 1] = np.maximum(moved[:, 1], moved[:, 0])
            free_on = times(int(rng.integers(0, 4)))
            free = np.column_stack((free_on, free_on + rng.uniform(0, 1.5, free_on.size)))
            r_stream.append(ref)
            d_stream.append(np.concatenate((moved, free)))
        refs.append(r_stream)
        dets.append(d_stream)
    return refs, dets, n_classes


def _as_sed_eval_list(stream: list[np.ndarray], labels: list[str]) -> list[dict[str, Any]]:
    """A stream's events as sed_eval's dict list, in this module's order: onset, class, offset."""
    rows = [(float(on), c, float(off)) for c, ev in enumerate(stream) for on, off in ev]
    rows.sort(key=lambda x: (x[0], x[1], x[2]))
    return [{"event_label": labels[c], "onset": on, "offset": off} for on, c, off in rows]


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9


@pytest.mark.parametrize("seed", range(4))
def test_agrees_with_sed_eval_event_based_metrics_on_random_event_lists(seed: int) -> None:
    """60 random cases per seed (240 in all), each under a drawn collar, offset rule and length share."""
    rng = np.random.default_rng(1000 + seed)
    for case in range(60):
        refs, dets, n_classes = _random_case(rng)
        labels = [f"c{c}" for c in range(n_classes)]
        collar = float(rng.choice([0.05, 0.2, 0.25, 0.5]))
        pol = float(rng.choice([0.0, 0.5, 1.0]))
        onset, offset = [(True, False), (True, True), (False, True)][int(rng.integers(0, 3))]
        reference = _SedEvalReference(labels, collar, pol, onset, offset)
        for r_stream, d_stream in zip(refs, dets, strict=True):
            reference.evaluate(_as_sed_eval_list(r_stream, labels), _as_sed_eval_list(d_stream, labels))
        expected = reference.results()
        ours = event_detection(
            refs,
            dets,
            t_collar_s=collar,
            evaluate_onset=onset,
            evaluate_offset=offset,
            percentage_of_length=pol,
        )
        where = f"seed {seed} case {case} (collar {collar}, pol {pol}, onset {onset}, offset {offset})"
        for c, label in enumerate(labels):
            counts = expected["class_wise"][label]
            mine = ours.classes[c]
            assert (mine.reference, mine.detected, mine.matched) == (
                counts["Nref"],
                counts["Nsys"],
                counts["Ntp"],
            ), where
            assert (mine.false_alarms, mine.missed) == (counts["Nfp"], counts["Nfn"]), where
        overall = expected["counts"]
        assert ours.matched == overall["Ntp"], where
        for a, b in zip(ours.precision_recall_f1(), expected["overall_f"], strict=True):
            assert _close(a, b), where
        assert _close(ours.macro_f1, expected["class_wise_average_f"]), where
        assert ours.duration_s == pytest.approx(expected["evaluated_length"], abs=1e-12), where


def test_the_evaluated_length_is_sed_evals_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hand case and random lists against sed_eval 0.2.1's own ``EventBasedMetrics`` where it is
    installed (not a dev dependency: module docstring): the evaluated length and the overall F-measure.
    dcase_util imports ``pkg_resources`` and never uses it here: a stub stands in for this test only."""
    import importlib.util
    import sys
    import types

    if importlib.util.find_spec("pkg_resources") is None:
        monkeypatch.setitem(sys.modules, "pkg_resources", types.ModuleType("pkg_resources"))
    sed_eval = pytest.importorskip("sed_eval")
    import dcase_util

    Streams = list[list[np.ndarray]]

    def sed_eval_figures(refs: Streams, dets: Streams, labels: list[str]) -> Any:
        metrics = sed_eval.sound_event.EventBasedMetrics(
            event_label_list=labels, t_collar=0.2, evaluate_onset=True, evaluate_offset=False
        )
        for s, (r_stream, d_stream) in enumerate(zip(refs, dets, strict=True)):
            files = [
                dcase_util.containers.MetaDataContainer(
                    [{**event, "filename": f"s{s}.wav"} for event in _as_sed_eval_list(stream, labels)]
                )
                for stream in (r_stream, d_stream)
            ]
            metrics.evaluate(reference_event_list=files[0], estimated_event_list=files[1])
        return metrics

    hand = sed_eval_figures([[np.array([[0.0, 1.0]])]], [[np.array([[5.0, 9.0]])]], ["x"])
    assert hand.evaluated_length == 1.0 == event_detection([[[[0.0, 1.0]]]], [[[[5.0, 9.0]]]]).duration_s
    rng = np.random.default_rng(7)
    for _ in range(30):
        refs, dets, n_classes = _random_case(rng)
        labels = [f"c{c}" for c in range(n_classes)]
        theirs = sed_eval_figures(refs, dets, labels)
        ours = event_detection(refs, dets)
        assert ours.duration_s == pytest.approx(theirs.evaluated_length, abs=1e-9)
        overall = theirs.results_overall_metrics()["f_measure"]
        assert _close(ours.precision_recall_f1()[2], overall["f_measure"])
