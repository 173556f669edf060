"""The comparison's verdict block: for a latency budget B, the most accurate run that fits.

The rule, stated on the page as here (docs/results.md "The report"):

* **fits the budget**: the run's p95 latency of ``predict()`` per frame (the result's
  ``speed.latency.p95_ms``: test streams, numpy's linear method; the figure ``compare --fail-on p95:...``
  gates) is at most B. p95, not the mean: a budget is a promise about (nearly) every frame.
* **accuracy**: the headline F1@Δt (Strict, frame units, micro, algorithmic clock: docs/metrics.md
  "Headline figures") at Δt = B when every run scored that Δt, else at the largest Δt below B that every
  run scored (said on the page). The compute-aware F1 at that Δt (replayed latencies: algorithmic delay
  and compute together) is shown beside it.
* **eligible**: fits, and its measurement-quality verdict is not INVALID (an INVALID run's p95 is not a
  measurement of the model; :mod:`streambench.harness.results.quality`). A run without a recorded verdict
  is eligible, and says so.
* **the most accurate**: the highest F1 estimate; equal estimates go to the lower p95, then the earlier run.
  The runner-up's difference from it carries the MOVER interval of the stored bootstrap intervals
  (:mod:`streambench.harness.report.deltas`): "cannot be told apart" when it includes 0.
* **default budget**: the largest Δt every run scored (the comparison's default Δt as well), so the
  verdict and the Pareto plot speak of one Δt; ``streambench report --budget-ms B`` sets another, and the
  block also lists the choice at every Δt all runs scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streambench.harness.report.deltas import mover_difference
from streambench.harness.report.html import Markup, absent, markup, table
from streambench.harness.report.measurement import verdict_badge
from streambench.harness.report.numbers import latency_ms, percent, signed_points
from streambench.harness.results.files import RunResult
from streambench.harness.results.quality import invalid_reason
from streambench.protocols.metrics.bootstrap import Interval

__all__ = ["Candidate", "Decision", "choose", "decision_delta", "decision_section", "default_budget"]


@dataclass(frozen=True)
class Candidate:
    """One run as the verdict weighs it: its F1@Δt (with the stored interval), compute-aware F1 at the same
    Δt, p95 latency (ms) and, when its measurement is INVALID, why."""

    label: str
    f1: Interval
    aware_f1: float | None
    p95_ms: float
    invalid: str | None = None


@dataclass(frozen=True)
class Decision:
    """The verdict for ``budget_ms``: the chosen run (None: none eligible), the runner-up, and the runs
    left out, over the budget or INVALID."""

    budget_ms: float
    chosen: Candidate | None
    runner_up: Candidate | None
    over_budget: list[Candidate]
    invalid: list[Candidate]


def _common(results: Sequence[RunResult]) -> list[float]:
    return sorted(set.intersection(*(set(r.protocol_config.deltas_ms) for r in results))) if results else []


def default_budget(results: Sequence[RunResult]) -> float | None:
    """The budget when none is given: the largest Δt every run scored (None: they share none)."""
    common = _common(results)
    return common[-1] if common else None


def decision_delta(results: Sequence[RunResult], budget_ms: float) -> float | None:
    """The Δt of the accuracy judged for ``budget_ms``: the budget when every run scored it, else the largest
    Δt below it that every run scored (None: none)."""
    below = [d for d in _common(results) if d <= budget_ms]
    return below[-1] if below else None


def choose(candidates: Sequence[Candidate], budget_ms: float) -> Decision:
    """The most accurate eligible run (module docstring), in ``candidates``' order for ties."""
    invalid = [c for c in candidates if c.invalid is not None]
    over = [c for c in candidates if c.invalid is None and c.p95_ms > budget_ms]
    eligible = [c for c in candidates if c.invalid is None and c.p95_ms <= budget_ms]
    ranked = sorted(enumerate(eligible), key=lambda kc: (-kc[1].f1.estimate, kc[1].p95_ms, kc[0]))
    chosen = ranked[0][1] if ranked else None
    runner_up = ranked[1][1] if len(ranked) > 1 else None
    return Decision(budget_ms, chosen, runner_up, over, invalid)


def _candidates(compared: Sequence[tuple[str, RunResult]], delta: float) -> list[Candidate]:
    out = []
    for label, r in compared:
        f1 = r.metrics.headline.f1_strict[r.protocol_config.deltas_ms.index(delta)]
        try:
            aware: float | None = r.metrics.f1_at(delta, unit="frame_replay")
        except KeyError:
            aware = None
        p95 = r.metrics.overall.speed.latency.p95_ms
        out.append(Candidate(label, f1, aware, p95, invalid_reason(r.measurement_quality)))
    return out


def _runner_up_text(chosen: Candidate, other: Candidate) -> str:
    d = mover_difference(chosen.f1, other.f1)
    if d.low is None or d.high is None:
        return f"Runner-up {other.label}: F1 {percent(other.f1.estimate)} ({signed_points(d.value)})."
    interval = f"{signed_points(d.value)} [{signed_points(d.low)}, {signed_points(d.high)}]"
    level = f"{chosen.f1.confidence:.0%}"
    if d.excludes_zero:
        verdict = f"{chosen.label} is the more accurate at {level}"
    else:
        verdict = f"the interval includes 0: at {level} the two cannot be told apart on these streams"
    return f"Runner-up {other.label}: F1 {percent(other.f1.estimate)}, {interval} from it ({verdict})."


def _verdict_text(decision: Decision, delta: float) -> Markup | str:
    budget = f"{decision.budget_ms:g} ms"
    lead = f"For a latency budget of {budget} (p95 latency of predict() at most {budget}), "
    chosen = decision.chosen
    if chosen is None:
        fastest = min(decision.over_budget, key=lambda c: c.p95_ms, default=None)
        text = lead + "no run fits"
        if fastest is not None:
            text += f": the fastest valid run, {fastest.label}, has a p95 of {latency_ms(fastest.p95_ms)}"
        return text + "."
    f1 = chosen.f1
    main = (
        f"the most accurate run that fits is {chosen.label}: F1@{delta:g} ms {percent(f1.estimate)} "
        f"[{percent(f1.low)}, {percent(f1.high)}], p95 {latency_ms(chosen.p95_ms)}."
    )
    text = markup("<strong>{}</strong>", lead + main)
    if decision.runner_up is not None:
        text += " " + _runner_up_text(chosen, decision.runner_up)
    return text


def _left_out(decision: Decision) -> Markup:
    items = [f"{c.label}: p95 {latency_ms(c.p95_ms)} is over the budget" for c in decision.over_budget] + [
        f"{c.label}: not eligible, {c.invalid}" for c in decision.invalid
    ]
    return markup("<p>Left out: {}.</p>", "; ".join(items)) if items else Markup()


def _run_rows(
    candidates: Sequence[Candidate], results: Sequence[RunResult], decision: Decision
) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for c, r in zip(candidates, results, strict=True):
        mark = "not judged (INVALID)" if c.invalid else ("yes" if c.p95_ms <= decision.budget_ms else "no")
        interval = f"[{percent(c.f1.low)}, {percent(c.f1.high)}]"
        f1 = markup('{}<br><span class="nw small">{}</span>', percent(c.f1.estimate), interval)
        span = Markup('<span class="invalid">{}</span>') if c.invalid else Markup("<span>{}</span>")
        aware = (
            span.format(percent(c.aware_f1))
            if c.aware_f1 is not None
            else Markup('<span class="null">— not scored</span>')
        )
        name = markup("<strong>{}</strong>", c.label) if c is decision.chosen else c.label
        p95 = span.format(latency_ms(c.p95_ms))
        rows.append((name, p95, mark, f1, aware, verdict_badge(r.measurement_quality)))
    return rows


def _budgets_table(compared: Sequence[tuple[str, RunResult]], budget_ms: float) -> Markup:
    """The choice at every Δt all runs scored, as a budget: where the answer changes."""
    rows = []
    for delta in _common([r for _, r in compared]):
        d = choose(_candidates(compared, delta), delta)
        chosen = d.chosen
        cells = (
            f"{delta:g} ms",
            chosen.label if chosen else Markup('<span class="null">none fits</span>'),
            percent(chosen.f1.estimate) if chosen else "",
            latency_ms(chosen.p95_ms) if chosen else "",
        )
        rows.append(tuple(markup("<strong>{}</strong>", c) for c in cells) if delta == budget_ms else cells)
    return table(["budget (= Δt)", "most accurate that fits", "its F1@Δt", "its p95"], rows)


def decision_section(pairs: Sequence[tuple[str, RunResult]], budget_ms: float | None) -> Markup:
    """The verdict block for the runs (each with its label): the sentence, why runs were left out, the runs
    as weighed, how the budget was set, and the choice at each other budget."""
    results = [r for _, r in pairs]
    given = budget_ms is not None
    budget = budget_ms if budget_ms is not None else default_budget(results)
    if budget is None:
        return absent("no Δt scored by every run, so no default budget: choose one with --budget-ms")
    delta = decision_delta(results, budget)
    if delta is None:
        return absent(f"no Δt at or below the budget of {budget:g} ms was scored by every run")
    candidates = _candidates(pairs, delta)
    decision = choose(candidates, budget)
    how = (
        markup("The budget of {:g} ms was given (--budget-ms).", budget)
        if given
        else markup(
            "The budget is the largest Δt every run scored ({:g} ms), as no --budget-ms was given: "
            "<code>streambench report RUN... --budget-ms B</code> judges for another.",
            budget,
        )
    )
    accuracy = (
        f"Accuracy: the headline F1@{delta:g} ms (Strict, frame units, micro, algorithmic clock)"
        + ("" if delta == budget else ", the largest Δt below the budget that every run scored")
        + "; the compute-aware F1 (the run's latencies replayed, so algorithmic delay and compute count "
        "together) beside it. A run fits when its p95 latency of predict() is within the budget; a run "
        "whose measurement is INVALID is not eligible. Ties go to the lower p95."
    )
    fingerprints = {r.fingerprint for r in results}
    machines = (
        markup(
            '<p class="warn">The runs were timed in {} environments: each p95 says how the run did on its '
            "own machine.</p>",
            len(fingerprints),
        )
        if len(fingerprints) > 1
        else Markup()
    )
    headers = [
        "run",
        "p95 latency",
        "fits",
        f"F1@{delta:g} ms",
        f"F1@{delta:g} ms compute-aware",
        "measurement",
    ]
    return (
        markup('<p class="verdict">{}</p>', _verdict_text(decision, delta))
        + _left_out(decision)
        + machines
        + table(headers, _run_rows(candidates, results, decision))
        + markup('<p class="small">{} {}</p>', accuracy, how)
        + Markup("<h4>The choice at each Δt every run scored, as the budget</h4>")
        + _budgets_table(pairs, budget)
    )
