"""The A/B gate on two clocks of the same pairs: wall time and the CPU time of the thread that ran
``predict()`` (harness/results/gate.py judges one clock).

On a shared machine a round's wall time also holds the time another process had the core; its CPU time
does not. Where that is the noise, CPU time sees a slowdown sooner. It cannot see a slowdown spent
waiting (a lock, I/O, another thread's work), so it may call a regression but never a pass:

* a rule **regresses** when either clock's interval says so, each clock judged with half the false-alarm
  rate (the caller's ``confidence`` for each is ``1 - (1 - confidence) / 2``: Bonferroni over the two
  clocks, so a false alarm on unchanged code stays within the job's rate);
* it **passes** only on wall time (latency's truth), at the full ``pass_confidence``;
* otherwise it is inconclusive, with wall time's reason and CPU time's estimate beside it.

Each verdict names the clock that decided it (:attr:`RuleVerdict.clock`).
"""

from __future__ import annotations

from streambench.harness.results.gate import EXIT_CODES, GateResult, RuleVerdict, overall_verdict

__all__ = ["both_clocks", "split_confidence"]


def split_confidence(confidence: float) -> float:
    """The two-sided level each clock is judged at, so that the two false-alarm rates sum to the job's."""
    return 1.0 - (1.0 - confidence) / 2.0


def _rule(wall: RuleVerdict, cpu: RuleVerdict) -> RuleVerdict:
    if wall.verdict == "regression":
        return wall
    if cpu.verdict == "regression":
        return cpu.model_copy(
            update={"clock": "cpu", "reason": f"on CPU time: {cpu.reason}; on wall time: {wall.verdict}"}
        )
    if wall.verdict == "no regression":
        return wall
    ratio = cpu.effect.ratio
    shown = "none" if ratio is None else f"{(ratio - 1) * 100:+.1f} %"
    return wall.model_copy(update={"reason": f"{wall.reason} (CPU time {shown}: no regression called on it)"})


def both_clocks(wall: GateResult, cpu: GateResult) -> GateResult:
    """The gate over the rules of ``wall`` and ``cpu`` (judged on the same pairs, rules and levels)."""
    if [r.rule for r in wall.rules] != [r.rule for r in cpu.rules] or wall.pairs != cpu.pairs:
        raise ValueError("both clocks must be judged on the same pairs and rules")
    rules = [_rule(w, c) for w, c in zip(wall.rules, cpu.rules, strict=True)]
    overall = overall_verdict(rules)
    return wall.model_copy(
        update={
            "verdict": overall,
            "exit_code": EXIT_CODES[overall],
            "clock": "both",
            "rules": rules,
            "reasons": [r.reason for r in rules if r.verdict == overall],
        }
    )
