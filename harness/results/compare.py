"""Comparing two runs: the change in each headline figure, and the regression gate (DESIGN.md "Results").

* Runs whose environment fingerprints differ (:func:`streambench.harness.instruments.manifest.fingerprint`)
  are not
  compared unless forced: their latencies measure different machines.
* ``--fail-on`` rules (:class:`FailOnSpec`), e.g. ``p95:+10%,f1@100ms:-0.01``: a figure *breaches* its rule
  when it moved in the rule's direction by more than the floor (relative, ``%``, or absolute).
* A latency figure (:data:`streambench.harness.headline.LATENCY_KEYS`) is called a regression only when it
  breaches
  its floor **and** a one-sided Mann–Whitney U test (Mann & Whitney 1947; ``scipy.stats.mannwhitneyu``,
  asymptotic normal approximation with continuity correction for large samples) over the two runs'
  per-frame latencies agrees at level ``alpha`` — in the direction that makes the figure worse. The
  effect floor keeps a tiny, significant shift from failing the gate; the rank test keeps a few outliers
  moving a tail percentile from failing it.
* A latency regression is not called when either run's measurement-quality verdict is INVALID
  (:mod:`streambench.harness.results.quality`; MLPerf LoadGen's VALID / INVALID) unless forced: the figure is
  then "not called" and ``streambench compare`` exits 3 (inconclusive).
* Other figures (F1, accuracy, energy, causality checks) are regressions when they breach their floor.
* Runs that scored different data (their data hashes differ) are compared, with a note. Two runs whose
  synthetic streams were drawn from **different secret seeds** (the default: each run
  draws its own, so no model can have trained on it) scored two draws of the same distribution: the
  note says so. A figure scored against the labels (F1, accuracy, EER, checks: everything but the
  timings and energy, :data:`COST_KEYS`) then moves with the draw as well as with the model, so its
  regression is not called unless forced (exit 3, as for an INVALID measurement): to gate on scores,
  run both runs with one ``--seed`` (marked ``public seed``). Timings and energy are gated as before:
  the draws have the same number and shape of frames, and the note says the content differs.

Pure but for scipy: the caller loads the runs and their per-frame samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, Field

from streambench.harness.results.fail_on import FailOnSpec, FailOnSpecError, FailRule, FigureKeys
from streambench.harness.results.framing import PER_FRAME_KEYS, framing_note
from streambench.harness.results.headline import LATENCY_KEYS, Figure, RunHeadline
from streambench.harness.results.quality import invalid_reason, refusal

__all__ = [
    "COST_KEYS",
    "Comparison",
    "FailOnSpec",
    "FailOnSpecError",
    "FailRule",
    "FigureChange",
    "FigureKeys",
    "FingerprintMismatchError",
    "RankTest",
    "compare_each",
    "compare_runs",
    "data_note",
    "exit_code",
]

COST_KEYS = LATENCY_KEYS | {"energy"}
"""What a run cost (timings, energy): not scored against the data's labels, so gated whatever data the
two runs drew; every other figure is a score of the data."""


class FingerprintMismatchError(ValueError):
    """The two runs were measured in different environments."""


class RankTest(BaseModel):
    """One-sided Mann–Whitney U test of the per-frame latencies (head against base)."""

    method: str = "Mann-Whitney U, one-sided (scipy.stats.mannwhitneyu)"
    alternative: Literal["greater", "less"] = Field(description="head latencies greater / less than base")
    statistic: float
    p_value: float
    alpha: float
    n_base: int
    n_head: int
    agrees: bool


class FigureChange(BaseModel):
    """A figure in both runs and how it changed; ``verdict`` says why it is (not) a regression."""

    key: str
    label: str
    unit: str
    better: Literal["higher", "lower"]
    base: Figure | None
    head: Figure | None
    change: float | None = Field(description="head - base; null when either is missing")
    relative: float | None = Field(description="(head - base) / |base|; null when base is 0 or missing")
    rule: FailRule | None
    breached: bool
    rank_test: RankTest | None
    regression: bool
    verdict: str


class Comparison(BaseModel):
    base: RunHeadline
    head: RunHeadline
    forced: bool
    fingerprint_note: str | None
    alpha: float
    rules: tuple[FailRule, ...]
    changes: list[FigureChange]
    regressions: list[str]
    refusal: str | None = Field(
        None,
        description="why regressions were not called: a run's measurement is INVALID (timings), or the runs "
        "scored different data (scores)",
    )
    latency_note: str | None = Field(
        None, description="with a rule on a latency figure: what a comparison of two separate runs cannot see"
    )
    data_note: str | None = Field(
        None, description="how the data the two runs scored differ (e.g. two draws from secret seeds)"
    )
    invalid_timing: str | None = Field(
        None,
        description="why the changes of the timings (LATENCY_KEYS) are not measurements of the models: a "
        "run's measurement-quality verdict is INVALID (said whether or not forced, whatever the rules)",
    )


LATENCY_GATE_NOTE = (
    "the two runs were measured at different times: a change of the machine's load between them reads as "
    "a change of latency, and no test over their frames can tell the two apart; for a CI gate on latency "
    "use `streambench ab` (base and head in interleaved rounds of one job)"
)
"""Said whenever ``--fail-on`` gates a latency figure (unchanged code failed this gate 4 of 5
times on a busy machine)."""


def data_note(base: RunHeadline, head: RunHeadline) -> str | None:
    """How the data of the two runs differ, None when they are the same or either run does not say
    (an index entry written before data records; data without a recorded hash)."""
    if base.data is None or head.data is None or base.data.hash is None or head.data.hash is None:
        return None
    if base.data.hash == head.data.hash:
        return None
    if base.data.seed_kind == head.data.seed_kind == "secret" and base.data.kind == head.data.kind:
        return (
            f"different draws of the {base.data.kind} set (secret seeds): a change in a score mixes the "
            "models' and the draws'"
        )
    return (
        f"different data: {base.run} scored {base.data.kind} {base.data.hash[:12]}, {head.run} "
        f"{head.data.kind} {head.data.hash[:12]}: a change in a score mixes the models' and the data's"
    )


def _rank_test(
    base_ns: npt.NDArray[np.int64],
    head_ns: npt.NDArray[np.int64],
    alternative: Literal["greater", "less"],
    alpha: float,
) -> RankTest:
    from scipy.stats import mannwhitneyu  # here: scipy.stats costs half a second of every CLI start

    result = mannwhitneyu(head_ns, base_ns, alternative=alternative)
    p_value = float(result.pvalue)
    return RankTest(
        alternative=alternative,
        statistic=float(result.statistic),
        p_value=p_value,
        alpha=alpha,
        n_base=int(base_ns.size),
        n_head=int(head_ns.size),
        agrees=p_value < alpha,
    )


def _change(
    key: str,
    base: Figure | None,
    head: Figure | None,
    rule: FailRule | None,
    samples: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None,
    alpha: float,
) -> FigureChange:
    shown = base or head
    assert shown is not None
    fields = {
        "key": key,
        "label": shown.label,
        "unit": shown.unit,
        "better": shown.better,
        "base": base,
        "head": head,
    }
    missing = [
        f"{'null' if fig is not None else 'absent'} in {side}"
        for side, fig in (("base", base), ("head", head))
        if fig is None or fig.value is None
    ]
    if missing:
        # A gated figure one run has and the other lacks fails the gate (a CI gate must not pass because
        # the head stopped reporting it); null in both runs (e.g. energy on a machine without sensors) is
        # not compared, and says so.
        lost = rule is not None and len(missing) == 1
        lead = "not compared: "
        if lost and rule is not None:
            lead = f"REGRESSION: gated by {rule.describe()} but "
        return FigureChange(
            **fields,
            change=None,
            relative=None,
            rule=rule,
            breached=lost,
            rank_test=None,
            regression=lost,
            verdict=lead + ", ".join(missing),
        )
    assert base is not None and head is not None and base.value is not None and head.value is not None
    change = head.value - base.value
    relative = change / abs(base.value) if base.value != 0 else None
    if rule is None:
        return FigureChange(
            **fields,
            change=change,
            relative=relative,
            rule=None,
            breached=False,
            rank_test=None,
            regression=False,
            verdict="no rule",
        )
    if rule.points and shown.unit != "%":
        raise FailOnSpecError(
            f"--fail-on {rule.describe()}: pp (percentage points) is for shares such as F1 and accuracy; "
            f"{key} is not one: write a relative floor (e.g. {key}:{'+' if rule.direction > 0 else '-'}5%)"
        )
    effect = relative if rule.relative else change
    if effect is None:
        breached, verdict = False, "base is 0: a relative floor cannot be applied"
    else:
        breached = effect * rule.direction > rule.floor
        verdict = f"breaches {rule.describe()}" if breached else f"within {rule.describe()}"
    test = None
    regression = breached
    if breached and key in LATENCY_KEYS:
        # the figure worsens with latency for lower-is-better keys (p95, rtf) and improves for fps
        worse_latency = rule.direction if shown.better == "lower" else -rule.direction
        if samples is None:
            regression, verdict = False, verdict + "; no per-frame samples, so no rank test: not called"
        else:
            test = _rank_test(samples[0], samples[1], "greater" if worse_latency > 0 else "less", alpha)
            regression = test.agrees
            verdict += (
                f"; rank test agrees (p = {test.p_value:.3g} < {alpha:g})"
                if test.agrees
                else f"; rank test disagrees (p = {test.p_value:.3g} ≥ {alpha:g}): not a regression"
            )
    return FigureChange(
        **fields,
        change=change,
        relative=relative,
        rule=rule,
        breached=breached,
        rank_test=test,
        regression=regression,
        verdict=("REGRESSION: " if regression else "") + verdict,
    )


def compare_runs(
    base: RunHeadline,
    head: RunHeadline,
    spec: FailOnSpec | None = None,
    base_latency_ns: npt.ArrayLike | None = None,
    head_latency_ns: npt.ArrayLike | None = None,
    alpha: float = 0.01,
    force: bool = False,
) -> Comparison:
    """Every figure of either run, in the base's order then the head's new ones, judged by ``spec``."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    spec = spec or FailOnSpec()
    note = None
    if base.fingerprint is not None and head.fingerprint is not None and base.fingerprint != head.fingerprint:
        if not force:
            raise FingerprintMismatchError(
                f"environment fingerprints differ: {base.run} has {base.fingerprint}, {head.run} has "
                f"{head.fingerprint}; their latencies measure different environments "
                "(`streambench env` shows what the fingerprint covers). Compare anyway with --force"
            )
        note = f"forced: environment fingerprints differ ({base.fingerprint} vs {head.fingerprint})"
    elif base.fingerprint is None or head.fingerprint is None:
        note = "; ".join(
            f"{h.run}: {h.fingerprint_reason or 'no fingerprint'}"
            for h in (base, head)
            if h.fingerprint is None
        )
    if base.execution is not None and head.execution is not None and base.execution != head.execution:
        if not force:
            raise FingerprintMismatchError(
                f"{base.run} ran its adapter {base.execution}, {head.run} {head.execution}: an in-process "
                "model shares the harness's clock, data and labels, a sealed one does not; their figures "
                "do not compare (run both the same way, or compare anyway with --force)"
            )
        mixed = f"forced: the adapters ran {base.execution} and {head.execution}"
        note = f"{note}; {mixed}" if note else mixed
    keys = [f.key for f in base.figures] + [f.key for f in head.figures if base.figure(f.key) is None]
    for rule in spec.rules:
        if rule.key not in keys:
            raise FailOnSpecError(
                f"--fail-on {rule.describe()}: neither {base.run} nor {head.run} has the figure "
                f"{rule.key!r}; their figures: {', '.join(keys)}"
            )
    rules = {r.key: r for r in spec.rules}
    samples = None
    if base_latency_ns is not None and head_latency_ns is not None:
        samples = (np.asarray(base_latency_ns, dtype=np.int64), np.asarray(head_latency_ns, dtype=np.int64))
    changes = [_change(k, base.figure(k), head.figure(k), rules.get(k), samples, alpha) for k in keys]
    differs = data_note(base, head)
    framing = framing_note(base, head)  # frames of another size or rate
    if framing is not None:
        differs = f"{differs}; {framing}" if differs else framing
    measurement = None if force else refusal({base.run: base.measurement, head.run: head.measurement})
    scores = None
    if differs is not None and not force:
        scores = f"{differs}; a regression of a score is not called (one --seed for both runs, or --force)"
    refusals = []
    for refused, judged in (
        (measurement, LATENCY_KEYS),  # the timings of an INVALID measurement
        (scores, {key for key in keys if key not in COST_KEYS}),  # the scores of different data
        (None if force or framing is None else f"{framing} (--force calls it)", PER_FRAME_KEYS),
    ):
        if refused is None or not any(c.regression and c.key in judged for c in changes):
            continue
        refusals.append(refused)
        changes = [
            c.model_copy(update={"regression": False, "verdict": f"not called ({c.verdict}): {refused}"})
            if c.regression and c.key in judged
            else c
            for c in changes
        ]
    return Comparison(
        base=base,
        head=head,
        forced=force,
        fingerprint_note=note,
        alpha=alpha,
        rules=spec.rules,
        changes=changes,
        regressions=[c.key for c in changes if c.regression],
        refusal="; ".join(refusals) or None,
        latency_note=LATENCY_GATE_NOTE if any(r.key in LATENCY_KEYS for r in spec.rules) else None,
        data_note=differs,
        invalid_timing=_invalid_timing(base, head),
    )


def _invalid_timing(base: RunHeadline, head: RunHeadline) -> str | None:
    found = [(h.run, invalid_reason(h.measurement)) for h in (base, head)]
    return "; ".join(f"{run}: {why}" for run, why in found if why) or None


def compare_each(
    base: RunHeadline,
    heads: Sequence[RunHeadline],
    spec: FailOnSpec | None = None,
    base_latency_ns: npt.ArrayLike | None = None,
    heads_latency_ns: Sequence[npt.ArrayLike | None] | None = None,
    alpha: float = 0.01,
    force: bool = False,
) -> list[Comparison]:
    """The base against each head in turn (:func:`compare_runs`: every pair is gated by ``spec`` as two
    runs are), in the heads' order."""
    samples = list(heads_latency_ns) if heads_latency_ns is not None else [None] * len(heads)
    if len(samples) != len(heads):
        raise ValueError(f"{len(heads)} heads but {len(samples)} latency samples")
    return [
        compare_runs(base, head, spec, base_latency_ns, head_ns, alpha=alpha, force=force)
        for head, head_ns in zip(heads, samples, strict=True)
    ]


def exit_code(comparisons: Sequence[Comparison]) -> int:
    """``streambench compare``'s exit code over every pair: 1 when any pair has a regression, else 3 when
    any pair saw a regression it did not call (inconclusive), else 0."""
    if any(c.regressions for c in comparisons):
        return 1
    return 3 if any(c.refusal for c in comparisons) else 0
