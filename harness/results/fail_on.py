"""``--fail-on`` rules: ``FIGURE:±FLOOR[%|pp][,...]`` parsed into :class:`FailRule` items (DESIGN.md
"Results"; :mod:`streambench.harness.results.compare` applies them to two runs, harness/results/gate.py to
interleaved rounds). A rule *breaches* when its figure moved in the rule's direction by more than the floor:
relative with ``%``, in percentage points of a share with ``pp``, otherwise absolute."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

__all__ = ["FailOnSpec", "FailOnSpecError", "FailRule", "FigureKeys"]

_KEY = re.compile(r"^[^\s,:]+$")
_THRESHOLD = re.compile(r"^([+-])(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(%|pp)?$")
FigureKeys = Sequence[tuple[str, str]]
"""The figures a rule may name: (regular expression of the keys, how to write them), one per protocol."""


class FailOnSpecError(ValueError):
    """A --fail-on specification that cannot be parsed; names the item."""


class FailRule(BaseModel):
    """``KEY:±FLOOR[%|pp]``: fail when the figure moved in the direction of the sign by more than the floor:
    relative with ``%``, in percentage points of a share (F1, accuracy: ``-1pp`` is -0.01) with ``pp``,
    otherwise absolute in the figure's stored unit (a share as a fraction)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    direction: Literal[1, -1] = Field(description="+1: rising is bad; -1: falling is bad")
    floor: float = Field(gt=0, description="the effect that must be exceeded (a fraction when relative)")
    relative: bool
    points: bool = Field(False, description="written in percentage points (pp): floor is the fraction")

    @field_validator("key")
    @classmethod
    def _key_syntax(cls, key: str) -> str:
        if not _KEY.match(key):
            raise ValueError(f"figure {key!r}: a key has no blank, ',' or ':'")
        return key

    @field_validator("floor")
    @classmethod
    def _finite(cls, floor: float) -> float:
        if not math.isfinite(floor):
            raise ValueError("the floor must be a finite number")
        return floor

    def describe(self) -> str:
        sign = "+" if self.direction > 0 else "-"
        if self.relative:
            return f"{self.key}:{sign}{self.floor * 100:g}%"
        floor = f"{self.floor * 100:g}pp" if self.points else f"{self.floor:g}"
        return f"{self.key}:{sign}{floor}"


class FailOnSpec(BaseModel):
    """The parsed ``--fail-on`` option: comma-separated rules, at most one per figure."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: tuple[FailRule, ...] = ()

    @classmethod
    def parse(cls, text: str | None, figures: FigureKeys = ()) -> FailOnSpec:
        """Parse ``FIGURE:±FLOOR[,...]``; with ``figures`` (each protocol's key pattern and how to write
        it: :func:`streambench.harness.runs.catalog.figure_keys`), a figure no protocol has is refused
        here."""
        if text is None or not text.strip():
            return cls()
        rules: list[FailRule] = []
        for position, raw in enumerate(text.split(","), start=1):
            item = raw.strip()
            where = f"--fail-on item {position} {item!r}"
            key, sep, threshold = item.rpartition(":")
            if not sep or not key:
                raise FailOnSpecError(f"{where}: expected FIGURE:±FLOOR, e.g. p95:+10% or f1@100ms:-1pp")
            match = _THRESHOLD.match(threshold.strip())
            if match is None:
                raise FailOnSpecError(
                    f"{where}: the floor {threshold!r} must be a signed number, optionally a percentage (%) "
                    "or percentage points of a share (pp) (+ fails when the figure rises by more, - when it "
                    "falls by more)"
                )
            sign, suffix = match.group(1), match.group(5) or ""
            number = threshold.strip()[1 : len(threshold.strip()) - len(suffix)]
            relative, points = suffix == "%", suffix == "pp"
            value = float(number) / (100 if suffix else 1)
            if value <= 0:
                raise FailOnSpecError(f"{where}: the floor must be greater than 0")
            try:
                rule = FailRule(
                    key=key.strip(),
                    direction=1 if sign == "+" else -1,
                    floor=value,
                    relative=relative,
                    points=points,
                )
            except ValidationError as exc:
                message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
                raise FailOnSpecError(f"{where}: {message}") from None
            if figures and not any(re.fullmatch(pattern, rule.key) for pattern, _ in figures):
                known = ", ".join(how for _, how in figures)
                raise FailOnSpecError(f"{where}: unknown figure {rule.key!r}; the figures are {known}")
            if any(r.key == rule.key for r in rules):
                raise FailOnSpecError(f"{where}: {rule.key} already has a rule")
            rules.append(rule)
        return cls(rules=tuple(rules))
