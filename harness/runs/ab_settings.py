"""What an A/B job is set to besides its two sides and its rounds: the gate (:class:`GateConfig`) and the
synthetic data set both sides run when nothing else names one (:class:`ABData`).

Each field is the one declaration of its default and help (the manner of pyperf, whose command-line
defaults are its constructor's): ``streambench ab`` (harness/cli/options.py, through the generated
harness/cli/option_fields.py), :func:`streambench.ab`, :func:`~streambench.harness.runs.ab.run_ab` and the
``streambench_ab`` fixture take theirs from here; the rounds' own settings are
:class:`~streambench.harness.execution.rounds.RoundsConfig`'s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_GATE", "ABData", "GateConfig", "On"]

On = Literal["wall", "cpu", "both"]
"""The clock the gate judges (``both``: wall time and the thread CPU time of predict())."""


class GateConfig(BaseModel):
    """How the gate judges the pairs of rounds (harness/results/gate.py, harness/results/gate_clocks.py)."""

    model_config = ConfigDict(extra="forbid")

    fail_on: str = Field(
        "p50:+5%", description='the rules, on p50, p95, p99 or mean, e.g. "p50:+5%,p99:+20%"'
    )
    on: On = Field(
        "both",
        description="both: a regression on wall or CPU time, a pass on wall time; wall; cpu: the thread CPU "
        "time of predict()",
    )
    confidence: float = Field(
        0.95, description="two-sided level (whole job): a false alarm at most half of 1 - this"
    )
    pass_confidence: float = Field(
        0.995,
        description="one-sided level of the upper bound a pass needs (whole job): a regression passes at "
        "most 1 - this",
    )
    force: bool = Field(False, description="call a regression even when a side is INVALID")


class ABData(BaseModel):
    """The synthetic data set of a job given no data set (fewer and shorter streams than a run's: the
    rounds cycle over them, ``streams_per_round`` streams a round)."""

    model_config = ConfigDict(extra="forbid")

    num_streams: int = Field(6, ge=1, description="streams in the data set (cycled over rounds)")
    duration_s: float = Field(5.0, gt=0, description="seconds per synthetic stream")


DEFAULT_GATE = GateConfig()
"""The gate's defaults, which a function's parameters name (``on: On = DEFAULT_GATE.on``)."""
