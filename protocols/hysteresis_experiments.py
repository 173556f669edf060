"""The four follow-up experiments of seed 001 ("Следующие эксперименты" A-D) as a stream plan and rows.

* ``b_length`` (A): A→B→A with B of 4, 8, 16, 32, 64 frames: lag(A→B), lag(B→A), return-gap.
  The seed expects lag(B→A) and the return-gap to grow with the length of B.
* ``mix`` (B): A→MIX→A with A shares 0.2, 0.5, 0.8 (the seed's 0.2/0.8, 0.5/0.5, 0.8/0.2): the
  return-gap after the mix (the seed expects its maximum near 0.5/0.5) and the mix entropy.
* ``aggregation`` (C): the router's weights aggregated by a wrapper (none, mean pooling, tail-weighted
  exponential): lag asymmetry on A→B→A and, on a hybrid A→MIX(0.5)→A stream, the mix entropy.
* ``hard_label`` (D): soft gating (the adapter as it is) against a hard label, the one-hot argmax of the
  per-frame domain probabilities (``hard``), and, for contrast, the one-hot argmax of the stateful
  routing weights (``hard_state``). The seed expects return-gap ≈ 0 for the hard label.

Every forward stream has a control A→A with the same A frames (seed 001 §3). Each setting runs
``repeats`` times on different frames; a row is the mean over the repeats (a lag over the repeats where
it is defined, with the count where it is not). An *arm* names the wrapper the harness puts around the
run's adapter (``run``/``soft``: none). Pure: no model, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.protocols.hysteresis_config import ARMS, EXPERIMENTS, Arm, Experiment, HysteresisConfig

__all__ = ["ARMS", "EXPERIMENTS", "Arm", "Experiment", "PlannedStream", "Row", "plan", "summarise"]

Part = Literal["forward", "control", "hybrid"]
Layout = Literal["aba", "control", "mix"]
_Part = tuple[Part, Layout, int, float]  # part, layout, middle length, A share of the middle

TITLES: dict[str, str] = {
    "b_length": "A. hysteresis against the length of B",
    "mix": "B. memory of the mix against its degree (A share / B share)",
    "aggregation": "C. weight aggregation",
    "hard_label": "D. hard label against soft gating",
}


class PlannedStream(BaseModel):
    """One stream of the plan: which layout, for which row (experiment, setting, arm), which repeat."""

    model_config = ConfigDict(frozen=True)

    stream_id: str
    experiment: Experiment
    setting: str
    arm: Arm
    repeat: int
    part: Part
    layout: Layout
    len_a: int = Field(description="frames of A1 and of A2")
    len_mid: int = Field(description="frames of the middle segment (B or MIX); 0 for the control")
    a_share: float = Field(description="share of A frames in the middle segment")

    @property
    def row_key(self) -> tuple[str, str, str]:
        return (self.experiment, self.setting, self.arm)

    def bounds(self) -> tuple[int, int, int]:
        """``(end of A1, start of the middle segment, start of A2)``, frame indices."""
        return self.len_a, self.len_a, self.len_a + self.len_mid


def _share_label(p: float) -> str:
    return f"{p:g}/{1 - p:g}"


def plan(config: HysteresisConfig) -> list[PlannedStream]:
    """The streams of the selected experiments, in run order (experiment, setting, arm, repeat, part)."""
    out: list[PlannedStream] = []
    a = config.len_a

    def add(exp: Experiment, setting: str, arm: Arm, parts: Sequence[_Part]) -> None:
        for r in range(config.repeats):
            for part, layout, mid, share in parts:
                out.append(
                    PlannedStream(
                        stream_id=f"{exp}/{setting}/{arm}/{part}/r{r}",
                        experiment=exp,
                        setting=setting,
                        arm=arm,
                        repeat=r,
                        part=part,
                        layout=layout,
                        len_a=a,
                        len_mid=mid,
                        a_share=share,
                    )
                )

    control: _Part = ("control", "control", 0, 1.0)
    for exp in config.experiments:
        if exp == "b_length":
            for b in config.b_lengths:
                add(exp, str(b), "run", [("forward", "aba", b, 0.0), control])
        elif exp == "mix":
            for p in config.a_shares:
                add(exp, _share_label(p), "run", [("forward", "mix", config.len_mix, p), control])
        elif exp == "aggregation":
            for agg in config.aggregations:
                parts = [
                    ("forward", "aba", config.len_b, 0.0),
                    ("hybrid", "mix", config.len_mix, config.hybrid_a_share),
                    control,
                ]
                add(exp, agg, agg, parts)  # type: ignore[arg-type]
        else:
            for arm in config.hard_arms:
                add(exp, arm, arm, [("forward", "aba", config.len_b, 0.0), control])
    return out


class Row(BaseModel):
    """One setting of one experiment: seed 001's metrics, means over the repeats."""

    experiment: Experiment
    setting: str
    arm: Arm
    repeats: int
    lag_ab: float | None = Field(description="mean switch-lag A→B over the repeats where it is defined")
    lag_ab_undefined: int = Field(description="repeats without a stable switch to B")
    lag_ba: float | None
    lag_ba_undefined: int
    asymmetry: float | None = Field(description="mean lag(B→A) − lag(A→B) where both are defined")
    gap_cosine: float
    gap_euclidean: float
    gap_dtw: float
    loop_area: float
    control_gap_cosine: float
    mix_entropy: float | None


def _mean(values: Sequence[float | None]) -> tuple[float | None, int]:
    known = [v for v in values if v is not None]
    return (float(np.mean(known)) if known else None), len(values) - len(known)


def summarise(key: tuple[str, str, str], measures: Sequence[Mapping[str, Any]]) -> Row:
    """The row of ``key`` from the per-repeat measures (``StreamMeasures.model_dump()``)."""
    col = {name: [m[name] for m in measures] for name in measures[0]}
    lag_ab, ab_undef = _mean(col["lag_ab"])
    lag_ba, ba_undef = _mean(col["lag_ba"])
    experiment, setting, arm = key
    return Row(
        experiment=experiment,
        setting=setting,
        arm=arm,
        repeats=len(measures),
        lag_ab=lag_ab,
        lag_ab_undefined=ab_undef,
        lag_ba=lag_ba,
        lag_ba_undefined=ba_undef,
        asymmetry=_mean(col["asymmetry"])[0],
        gap_cosine=float(np.mean(col["gap_cosine"])),
        gap_euclidean=float(np.mean(col["gap_euclidean"])),
        gap_dtw=float(np.mean(col["gap_dtw"])),
        loop_area=float(np.mean(col["loop_area"])),
        control_gap_cosine=float(np.mean(col["control_gap_cosine"])),
        mix_entropy=_mean(col["mix_entropy"])[0],
    )
