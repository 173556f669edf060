"""The causality checks of an adapter's sequence mode (seed 004 §6.2.3: gradient flow
``∂y_t/∂x_s = 0`` for ``s > t``; DESIGN.md "Causality").

A sequence mode is ``predict_sequence(frames) -> list[Prediction]`` (capability ``"sequence"``, each
prediction naming its frame with ``refers_to``), run by :meth:`Engine.run_sequence`. It is checked, never
skipped silently:

* **stream_sequence**: the sequence mode's predictions equal the streaming mode's, frame by frame
  (within :data:`SEQUENCE_TOLERANCE`: float sums are taken in another order).
* **sequence_perturbation**: for sampled positions ``t``, the inputs after ``t`` are replaced by noise and
  the predictions labelling frames ``<= t`` must not change. This catches what gradients miss: a future
  tap behind ``.detach()``, symmetric padding, a non-differentiable look-ahead.
* **gradient_flow**: where the adapter also exposes a differentiable sequence function
  (``sequence_outputs(inputs [T, D]) -> [T, C]`` and ``stack(frames) -> [T, D]``), no sampled output may
  depend on a later input (:func:`streambench.adapters.offenders.sequence_gradient_support`).

An adapter that declares ``"sequence"`` but has no working ``predict_sequence`` fails
(``sequence_mode``): a sequence mode that cannot be checked is not a pass. An adapter that declares none
has these checks listed in ``skipped`` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from streambench.adapters.contract import Adapter, Frame, Stream
from streambench.adapters.offenders import sequence_gradient_support
from streambench.harness.execution.config import RunConfig
from streambench.harness.execution.engine import Engine, has_sequence_mode
from streambench.harness.execution.sealing import seal_frames
from streambench.harness.runs.causality.variants import occlude
from streambench.protocols.causality import (
    CausalityConfig,
    CheckResult,
    compare_prefix,
    compare_recordings,
    judge_gradient,
    plan_gradient,
)
from streambench.protocols.recording import StreamRecording

__all__ = ["SEQUENCE_CHECKS", "SEQUENCE_TOLERANCE", "SequencePlan", "sequence_checks", "sequence_plan"]

SEQUENCE_TOLERANCE = 1e-5
"""Largest |score difference| between streaming and sequence mode (or two sequence runs) still counted
as equal (float32 sums are taken in another order in the two modes)."""

SEQUENCE_CHECKS = ("stream_sequence", "sequence_perturbation", "gradient_flow")


@dataclass(frozen=True)
class SequencePlan:
    """Which sequence checks run (``run``), which are skipped and why, and the failure of a declared
    sequence mode that cannot be checked."""

    run: tuple[str, ...] = ()
    skipped: dict[str, str] = field(default_factory=dict)
    failure: CheckResult | None = None


def _differentiable(adapter: Adapter) -> bool:
    return callable(getattr(adapter, "sequence_outputs", None)) and callable(getattr(adapter, "stack", None))


def sequence_plan(adapter: Adapter) -> SequencePlan:
    """What the adapter's sequence mode allows to check (module docstring). The capability ``"sequence"``
    is the declaration: without it there is no sequence mode, whatever methods the class has."""
    name = type(adapter).__name__
    if "sequence" not in adapter.info.capabilities:
        reason = f"adapter {name} declares no sequence mode (capability 'sequence' with predict_sequence())"
        return SequencePlan(skipped=dict.fromkeys(SEQUENCE_CHECKS, reason))
    if not has_sequence_mode(adapter):
        failure = CheckResult(
            name="sequence_mode",
            passed=False,
            detail=f"adapter {name} declares the capability 'sequence' but has no predict_sequence(): a "
            "declared sequence mode that cannot be checked is a failure",
        )
        return SequencePlan(failure=failure, skipped=dict.fromkeys(SEQUENCE_CHECKS, "no predict_sequence()"))
    if _differentiable(adapter):
        return SequencePlan(run=SEQUENCE_CHECKS)
    reason = (
        f"adapter {name} has no differentiable sequence function (sequence_outputs + stack); "
        "sequence_perturbation checks the sequence mode instead"
    )
    return SequencePlan(run=SEQUENCE_CHECKS[:2], skipped={"gradient_flow": reason})


def sequence_checks(
    config: RunConfig, adapter: Adapter, stream: Stream, causality: CausalityConfig, plan: SequencePlan
) -> list[CheckResult]:
    """Run the planned sequence checks on ``adapter`` (in this process: they need its methods)."""
    engine = Engine(adapter, config.engine.model_copy(update={"pacing": "unpaced", "warmup_frames": 0}))
    tolerance = max(causality.tolerance, SEQUENCE_TOLERANCE)
    streamed = engine.run_stream(stream)
    sequence = engine.run_sequence(stream)
    checks = [
        compare_recordings(streamed, sequence, tolerance, name="stream_sequence").model_copy(
            update={"first_stream": None}
        )
    ]
    if not checks[0].passed:
        checks[0] = checks[0].model_copy(update={"first_stream": stream.stream_id})
    checks.append(_perturbation(engine, stream, sequence, causality, tolerance))
    if "gradient_flow" in plan.run:
        checks.append(_gradient(adapter, stream, causality))
    return checks


def _perturbation(
    engine: Engine, stream: Stream, clean: StreamRecording, causality: CausalityConfig, tolerance: float
) -> CheckResult:
    positions = plan_gradient(stream.num_frames, causality)
    results = []
    for t in positions:
        variant = occlude(stream, t, "noise", seed=causality.noise_seed)
        results.append(compare_prefix(clean, engine.run_sequence(variant), t, tolerance))
    failed = [r for r in results if not r.passed]
    if not failed:
        return CheckResult(
            name="sequence_perturbation",
            passed=True,
            max_difference=max((r.max_difference for r in results), default=0.0),
            detail=f"inputs after {len(positions)} sampled positions replaced by noise: every earlier "
            "prediction of the sequence mode unchanged",
        )
    first = min(failed, key=lambda r: r.first_frame if r.first_frame is not None else -1)
    return CheckResult(
        name="sequence_perturbation",
        passed=False,
        first_stream=stream.stream_id,
        first_frame=first.first_frame,
        max_difference=max(r.max_difference for r in failed),
        detail=f"{len(failed)} of {len(positions)} perturbations after t changed a prediction labelling a "
        f"frame <= t (seen by no gradient when the model detaches it); first, {first.name}: {first.detail}",
    )


def _gradient(adapter: Adapter, stream: Stream, causality: CausalityConfig) -> CheckResult:
    import torch

    model_fn: Callable[[torch.Tensor], torch.Tensor] = getattr(adapter, "sequence_outputs")  # noqa: B009
    stack: Callable[[Sequence[Frame]], torch.Tensor] = getattr(adapter, "stack")  # noqa: B009
    frames = seal_frames(stream.frames())
    sampled = plan_gradient(len(frames), causality)
    if not sampled:
        return CheckResult(name="gradient_flow", passed=True, detail="stream too short to probe")
    support = sequence_gradient_support(model_fn, stack(frames), sampled)
    return judge_gradient(support, sampled, stream_id=stream.stream_id)
