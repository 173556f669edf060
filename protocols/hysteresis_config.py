"""The router hysteresis protocol's configuration (seed 001): its metrics' settings, the follow-up
experiments it runs and the domain-labelled streams they are built from. Its own module, below both the
plan (:mod:`streambench.protocols.hysteresis_experiments`) and the score
(:mod:`streambench.protocols.hysteresis`), so neither imports the other to know it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from streambench.protocols.metrics.router import DtwCost

__all__ = ["ARMS", "EXPERIMENTS", "Arm", "Experiment", "HysteresisConfig", "StreamSettings"]

Experiment = Literal["b_length", "mix", "aggregation", "hard_label"]
EXPERIMENTS: tuple[Experiment, ...] = ("b_length", "mix", "aggregation", "hard_label")
Arm = Literal["run", "none", "mean", "tail_exp", "soft", "hard", "hard_state"]
ARMS: tuple[Arm, ...] = ("run", "none", "mean", "tail_exp", "soft", "hard", "hard_state")


class StreamSettings(BaseModel):
    """The domain-labelled frames the streams are built from (``harness/datasets/domains.py``)."""

    model_config = ConfigDict(extra="forbid")

    domains: tuple[str, ...] = Field(
        ("A", "B"), min_length=2, description="domain names: A and B are the first two, the rest only classes"
    )
    dim: int = Field(32, ge=2, description="features per frame")
    amplitude: float = Field(1.0, gt=0.0, description="length of the domain signature in a frame")
    noise_std: float = Field(0.2, ge=0.0, description="standard deviation of the per-feature noise")
    fps: float = Field(25.0, gt=0.0, description="frames (tokens) per second")
    seed: int = Field(0, ge=0)


class HysteresisConfig(BaseModel):
    """Seed 001's metrics and experiments; defaults are the seed's values."""

    model_config = ConfigDict(extra="forbid")

    threshold: float = Field(0.9, gt=0.0, le=1.0, description="§1: a domain is active when w ≥ threshold")
    k: int = Field(3, ge=1, description="§1: the threshold must hold for K steps in a row")
    strict: bool = Field(False, description="§1: w > threshold (the seed's prose) instead of ≥ (its formula)")
    dtw_cost: DtwCost = "sum"
    experiments: tuple[Experiment, ...] = Field(EXPERIMENTS, min_length=1, description="which to run")
    len_a: int = Field(64, ge=1, description="frames of each A segment (A1 and A2)")
    b_lengths: tuple[int, ...] = Field((4, 8, 16, 32, 64), min_length=1, description="experiment A")
    len_b: int = Field(32, ge=1, description="the B segment of experiments C and D")
    len_mix: int = Field(32, ge=1, description="frames of a mix segment")
    a_shares: tuple[float, ...] = Field((0.2, 0.5, 0.8), min_length=1, description="experiment B: A share")
    hybrid_a_share: float = Field(0.5, ge=0.0, le=1.0, description="experiment C: the hybrid (mix) stream")
    aggregations: tuple[Literal["none", "mean", "tail_exp"], ...] = ("none", "mean", "tail_exp")
    window: int = Field(8, ge=1, description="experiment C: frames aggregated")
    tail_decay: float = Field(0.7, gt=0.0, le=1.0, description="experiment C: tail_exp decay per frame")
    hard_arms: tuple[Literal["soft", "hard", "hard_state"], ...] = ("soft", "hard", "hard_state")
    repeats: int = Field(4, ge=1, description="streams per setting (different frames); rows are their means")
    streams: StreamSettings = Field(default_factory=StreamSettings)

    @model_validator(mode="after")
    def _shares_in_range(self) -> HysteresisConfig:
        if any(not 0.0 <= p <= 1.0 for p in self.a_shares):
            raise ValueError(f"a_shares must lie in [0, 1], got {list(self.a_shares)}")
        if any(b < 1 for b in self.b_lengths):
            raise ValueError(f"b_lengths must be >= 1, got {list(self.b_lengths)}")
        return self
