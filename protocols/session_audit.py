"""Audits inside the scored session (DESIGN.md "Causality": "audits run on the scored
instance after its real history, entry points that look the same to the model whether it is scored or
audited").

While an online run scores its streams, a few audit variants of them are interleaved at random among
the scored streams, in the same worker, through the same entry points: to the adapter each is one more
stream under a fresh opaque token. Two kinds:

- ``replay``: a scored stream fed again, unchanged. Its predictions must equal the scored run's (a model
  that behaves one way when it thinks it is scored and another when audited is caught by the pair);
- ``occlusion``: a scored stream whose frames after a hidden cut are another stream's (noise where no
  other stream is as long), so the copy looks like data. The predictions
  emitted at frames ``<= cut`` must equal the scored run's (a model whose outputs depend on the future,
  or on which stream it believes it is in beyond what it has seen, is caught).

Since each variant may come before or after its source, the model cannot tell which of two identical
prefixes is scored: it passes only by behaving the same on both, i.e. honestly on the scored one.
This module is pure: it plans the variants (:func:`plan_session_audit`) and judges the recorded
outputs (:func:`judge_session_audit`); the harness runs them (harness/runs/session_audit.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from streambench.protocols.causality import CheckResult, compare_prefix, compare_recordings
from streambench.protocols.recording import StreamRecording

__all__ = [
    "AuditVariant",
    "SessionAuditConfig",
    "SessionAuditResult",
    "judge_session_audit",
    "plan_session_audit",
]


class SessionAuditConfig(BaseModel):
    """How many variants an online run interleaves, and how close their predictions must be."""

    model_config = ConfigDict(extra="forbid")

    share: float = Field(0.1, ge=0, le=1, description="variants per scored stream (rounded up)")
    minimum: int = Field(2, ge=0, description="at least this many variants (when there are streams)")
    tolerance: float = Field(
        1e-4, ge=0, description="largest |score difference| between a variant and its scored stream"
    )


class AuditVariant(BaseModel):
    """One audit variant: which scored stream it copies, how, and where in the run it is fed (before the
    ``before``-th scored stream of this session; past the last one: after every scored stream)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    kind: Literal["replay", "occlusion"]
    cut: int | None = Field(None, description="occlusion: frames after it are another stream's")
    before: int = Field(ge=0)


class SessionAuditResult(BaseModel):
    """``result.json``'s ``session_audit``: the seed (drawn per run, written after scoring), the variants,
    one check per variant, and the verdict (None: not audited, ``skipped`` says why)."""

    model_config = ConfigDict(extra="forbid")

    seed: int | None = None
    variants: list[AuditVariant] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    passed: bool | None = None
    skipped: str | None = None


def plan_session_audit(
    streams: Sequence[tuple[str, int]], seed: int, config: SessionAuditConfig
) -> list[AuditVariant]:
    """Variants for ``streams`` (id, frames) in the order they are to be run: ``ceil(share * n)`` (at
    least ``minimum``, at most ``n``) distinct source streams drawn at random, half replays and half
    occlusions (random cut in ``[0, T - 2]``), each fed at a random position among the scored streams."""
    n = len(streams)
    if n == 0:
        return []
    count = min(n, max(config.minimum, int(np.ceil(config.share * n))))
    if count == 0:
        return []
    rng = np.random.default_rng([seed, 0xA0D17])
    sources = rng.choice(n, size=count, replace=False)
    kinds = rng.permutation(["replay" if k % 2 == 0 else "occlusion" for k in range(count)])
    variants = []
    for index, kind in zip(sources, kinds, strict=True):
        stream_id, frames = streams[int(index)]
        occluded = kind == "occlusion" and frames >= 2
        cut = int(rng.integers(0, frames - 1)) if occluded else None
        position = int(rng.integers(0, n + 1))
        chosen: Literal["replay", "occlusion"] = "occlusion" if occluded else "replay"
        variants.append(AuditVariant(source=stream_id, kind=chosen, cut=cut, before=position))
    return sorted(variants, key=lambda v: v.before)


def judge_session_audit(
    scored: Mapping[str, StreamRecording],
    failed: Mapping[str, tuple[int | None, str]],
    audited: Sequence[tuple[AuditVariant, StreamRecording | str]],
    config: SessionAuditConfig,
    seed: int,
) -> SessionAuditResult:
    """One check per variant against its scored stream (``scored``: recordings by stream id; ``failed``:
    the frame (None: before the first) and error of each scored stream that failed; ``audited``: each
    variant with its recording, or its error). A variant and its source must agree: both answered and
    equal (in full, or up to the cut), or both failed (a replay of a failed stream that answers is a
    finding, and so is the reverse; an occluded copy may answer only where the source failed after
    the cut, on frames the copy does not share)."""
    checks = []
    for variant, outcome in audited:
        name = f"session_{variant.kind}" + (f"@{variant.cut}" if variant.cut is not None else "")
        source = scored.get(variant.source)
        if source is None:
            failure = failed.get(variant.source)
            if failure is None:
                continue  # its source was not run in this session (an interrupted run)
            frame, error = failure
            answered = not isinstance(outcome, str)
            after_cut = variant.cut is not None and frame is not None and frame > variant.cut
            checks.append(
                CheckResult(
                    name=name,
                    passed=not answered or after_cut,
                    first_stream=variant.source,
                    detail=f"the scored stream failed ({error}); its audit variant "
                    + ("answered: the model behaves differently when audited" if answered else "failed too"),
                )
            )
            continue
        if isinstance(outcome, str):
            checks.append(
                CheckResult(
                    name=name,
                    passed=False,
                    first_stream=variant.source,
                    detail=f"the scored stream was answered; its audit variant failed: {outcome}",
                )
            )
            continue
        if variant.cut is None:
            check = compare_recordings(source, outcome, config.tolerance, name)
        else:
            check = compare_prefix(source, outcome, variant.cut, config.tolerance).model_copy(
                update={"name": name}
            )
        checks.append(check.model_copy(update={"first_stream": variant.source}))
    return SessionAuditResult(
        seed=seed,
        variants=[variant for variant, _ in audited],
        checks=checks,
        passed=all(c.passed for c in checks) if checks else None,
        skipped=None if checks else "no audit variant was run",
    )
