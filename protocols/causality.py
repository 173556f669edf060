"""Causality protocol: plans the variant runs and judges their recordings (``../shared/DESIGN.md``,
"Causality" and "Audits"; seed 004 §6.2.3: occlusion test, gradient flow ``∂y_t/∂x_s = 0`` for ``s > t``).

Pure: nothing here calls a model or reads a clock. The harness runs the variants and hands back
:class:`~streambench.protocols.recording.StreamRecording` objects (or, for gradient flow, the support matrix
that the probe ``streambench.adapters.offenders.sequence_gradient_support`` computes); this module compares
them.

Checks, each naming the first offending stream and frame:

* **occlusion** (:func:`plan_occlusion`, :func:`compare_prefix`): the frames after a cut are replaced
  (noise, zeros, or another stream's frames); every prediction *emitted* at a frame ``<= cut`` must be
  unchanged (same ``refers_to``, scores within ``tolerance``). Emission time is what matters: a
  look-ahead model that labels frame ``t - L`` at frame ``t`` is causal.
* **state leak / reset / stream-sequence equivalence** (:func:`compare_recordings`): two recordings
  of the same stream must agree prediction by prediction (fresh vs after another stream; reset twice vs
  once; streaming vs sequence mode).
* **gradient flow** (:func:`plan_gradient`, :func:`judge_gradient`): no sampled output ``y_t`` may
  depend on an input ``x_s`` with ``s > t``.
* **caching audit** (:func:`judge_caching`): a repeated stream must not run markedly faster than unseen
  content of the same cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from streambench.protocols.recording import StreamRecording

__all__ = [
    "CausalityConfig",
    "CausalityReport",
    "CheckResult",
    "Occluder",
    "compare_prefix",
    "compare_recordings",
    "judge_caching",
    "judge_gradient",
    "measured_label",
    "plan_gradient",
    "plan_occlusion",
    "summarize",
]

Occluder = Literal["noise", "zeros", "other_stream"]


class CausalityConfig(BaseModel):
    """What the causality protocol runs and how strictly it judges."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cuts: tuple[float, ...] | None = Field(
        default=None,
        min_length=1,
        description="fixed cut points, as fractions of each stream; None (default): num_cuts random cuts",
    )
    num_cuts: int = Field(default=3, ge=1, description="random cut points per stream (when cuts is None)")
    cut_seed: int | None = Field(
        default=None,
        ge=0,
        description="seed of the random cuts; None: drawn afresh for each run and recorded in its result",
    )
    streams: int = Field(default=3, ge=1, description="streams the checks run on (the first ones)")
    occluders: tuple[Occluder, ...] = Field(
        default=("noise", "zeros", "other_stream"),
        min_length=1,
        description="what replaces the frames after a cut",
    )
    tolerance: float = Field(default=0.0, ge=0.0, description="largest |score difference| still equal")
    sampled_t: int = Field(default=8, ge=1, description="output positions probed by the gradient check")
    caching_ratio: float = Field(
        default=0.5,
        gt=0.0,
        le=1.0,
        description="cache hit: a repeat's caching_quantile latency below ratio x its unseen control's",
    )
    caching_quantile: float = Field(
        default=0.25,
        gt=0.0,
        le=0.5,
        description="the latency quantile the caching audit compares (0.25: a cache serving a quarter of "
        "the frames shows; lower quantiles are also the least disturbed by a busy machine)",
    )
    caching_rounds: int = Field(
        default=8, ge=1, description="interleaved rounds (repeat, unseen control, one-ulp copy) of the audit"
    )
    caching_alpha: float = Field(
        default=0.05, gt=0.0, lt=1.0, description="level of the one-sided sign test over the rounds"
    )
    noise_seed: int = Field(default=0, ge=0, description="seed of the noise occluder (the harness draws it)")
    sealed: bool = Field(
        default=True,
        description="run the checks in a sealed worker (the future not in the adapter's process); "
        "false: in this process, where a model can find the engine's frame list",
    )

    @model_validator(mode="after")
    def _caching_can_fail(self) -> CausalityConfig:
        if 0.5**self.caching_rounds > self.caching_alpha:
            raise ValueError(
                f"caching_rounds={self.caching_rounds} can never reach caching_alpha={self.caching_alpha} "
                "(the sign test's smallest p is 2^-rounds): raise the rounds or the level"
            )
        return self

    @field_validator("cuts")
    @classmethod
    def _cuts_inside(cls, cuts: tuple[float, ...] | None) -> tuple[float, ...] | None:
        for c in cuts or ():
            if not 0.0 < c < 1.0:
                raise ValueError(f"cut fractions must lie in (0, 1), got {c}")
        return cuts


def measured_label(check: str, max_difference: float) -> str:
    """What a check's ``max_difference`` measured, named: the caching audit's is the repeat's speed-up
    over its control (:func:`judge_caching`), every other check's the largest score difference. An
    infinite value is a marker, not a measurement (the adapter failed during the check, a gradient reached
    the past, a repeat took no time): the check's detail says which."""
    if math.isinf(max_difference):
        return "no finite figure: see the detail"
    if check == "caching":
        return f"repeat speed-up {max_difference:.3g}×"
    return f"max |Δscore| {max_difference:.3g}"


class CheckResult(BaseModel):
    """Outcome of one check. ``first_frame`` is the first offending frame (emission index; for gradient
    flow the output position ``t``, with the input position in ``first_source``). ``max_difference``
    is the largest |score difference| seen (``inf`` when the predictions do not even line up: a
    prediction missing, extra, or labelling another frame); 0 for a passed structural check.

    JSON has no ``Infinity`` (RFC 8259): a non-finite ``max_difference`` is written as ``null`` (no finite
    figure; ``detail`` says why) and read back as ``inf``, as is the ``Infinity`` of older files."""

    model_config = ConfigDict(frozen=True)

    name: str
    passed: bool
    first_stream: str | None = None
    first_frame: int | None = None
    first_source: int | None = None
    max_difference: float = Field(
        0.0, description="largest |score difference| (the caching audit: speed-up); null: no finite figure"
    )
    detail: str = ""

    @field_validator("max_difference", mode="before")
    @classmethod
    def _null_is_no_finite_figure(cls, value: object) -> object:
        return math.inf if value is None else value


class CausalityReport(BaseModel):
    """All checks of a run; passed when every check passed."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    checks: tuple[CheckResult, ...]
    failed: tuple[str, ...]


def summarize(checks: Sequence[CheckResult]) -> CausalityReport:
    failed = tuple(c.name for c in checks if not c.passed)
    return CausalityReport(passed=not failed, checks=tuple(checks), failed=failed)


def plan_occlusion(
    num_frames: int, config: CausalityConfig, seed: int = 0, stream_index: int = 0
) -> list[int]:
    """Cut frame indices for a stream of ``num_frames`` frames; frames with index ``> cut`` are occluded,
    so every cut lies in ``[0, T - 2]`` (at least one frame follows it). Sorted, distinct.

    By default the cuts are drawn at random: ``num_cuts`` distinct indices, uniformly from ``[0, T - 2]``,
    by ``numpy.random.default_rng([seed, stream_index])``: anywhere, different for every stream and every
    run (the harness draws ``seed`` per run and records it), so a model cannot learn where the audit
    looks. With fixed ``cuts`` fractions: ``floor(fraction * T)``, clipped to ``[0, T - 2]``."""
    if num_frames < 2:
        return []
    if config.cuts is not None:
        return sorted({min(max(math.floor(f * num_frames), 0), num_frames - 2) for f in config.cuts})
    rng = np.random.default_rng([seed, stream_index])
    picks = rng.choice(num_frames - 1, size=min(config.num_cuts, num_frames - 1), replace=False)
    return sorted(int(c) for c in picks)


def plan_gradient(num_frames: int, config: CausalityConfig) -> list[int]:
    """Output positions to probe: ``sampled_t`` positions spread evenly over ``[0, T - 2]`` (the last
    frame has no future to leak from), de-duplicated."""
    if num_frames < 2:
        return []
    picks = np.linspace(0, num_frames - 2, num=min(config.sampled_t, num_frames - 1))
    return sorted({round(float(p)) for p in picks})


def _prefix(rec: StreamRecording, upto: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    emitted = np.asarray(rec.emitted_at, dtype=np.int64)
    keep = slice(None) if upto is None else emitted <= upto
    scores = np.asarray(rec.scores, dtype=np.float64)
    return emitted[keep], np.asarray(rec.refers_to, dtype=np.int64)[keep], scores[keep]


def _compare(
    a: StreamRecording, b: StreamRecording, upto: int | None, tolerance: float, name: str
) -> CheckResult:
    ea, ra, sa = _prefix(a, upto)
    eb, rb, sb = _prefix(b, upto)
    if sa.shape[1:] != sb.shape[1:]:
        raise ValueError(f"{name}: recordings have {sa.shape[1:]} vs {sb.shape[1:]} classes")
    common = min(ea.size, eb.size)
    aligned = (ea[:common] == eb[:common]) & (ra[:common] == rb[:common])
    # predictions line up up to the first structural mismatch
    n_ok = common if aligned.all() else int(np.argmin(aligned))
    structural_frame: int | None = None
    if n_ok < common:
        structural_frame = int(min(ea[n_ok], eb[n_ok]))
    elif ea.size != eb.size:
        longer = ea if ea.size > eb.size else eb
        structural_frame = int(longer[common])
    diff = np.abs(sa[:n_ok] - sb[:n_ok]).max(axis=1) if n_ok else np.zeros(0)
    max_diff = float(diff.max()) if diff.size else 0.0
    bad = diff > tolerance
    score_frame = int(ea[int(np.argmax(bad))]) if bad.any() else None
    where = "" if upto is None else f" emitted at frames <= {upto}"
    if structural_frame is None and score_frame is None:
        return CheckResult(
            name=name,
            passed=True,
            max_difference=max_diff,
            detail=f"{ea.size} predictions{where} agree (max |diff| {max_diff:.3g} <= {tolerance:g})",
        )
    candidates = [f for f in (structural_frame, score_frame) if f is not None]
    first = min(candidates)
    if structural_frame is not None and structural_frame <= first:
        max_diff = math.inf
        detail = (
            f"predictions{where} do not line up from frame {first} on "
            f"({ea.size} vs {eb.size} predictions, or a different refers_to)"
        )
    else:
        idx = int(np.argmax(bad))
        detail = (
            f"scores of the prediction emitted at frame {first} (refers_to {int(ra[idx])}) differ by "
            f"{float(diff[idx]):.3g} > {tolerance:g}; max |diff|{where} {max_diff:.3g}"
        )
    return CheckResult(
        name=name,
        passed=False,
        first_stream=a.stream_id,
        first_frame=first,
        max_difference=max_diff,
        detail=detail,
    )


def compare_prefix(
    clean: StreamRecording, occluded: StreamRecording, cut: int, tolerance: float = 0.0
) -> CheckResult:
    """Occlusion: predictions emitted at frames ``<= cut`` must be identical in both recordings.

    Names the first emitted frame whose predictions differ and the largest |score difference|."""
    if clean.num_frames != occluded.num_frames:
        raise ValueError(
            f"occlusion of {clean.stream_id!r}: {clean.num_frames} vs {occluded.num_frames} frames"
        )
    return _compare(clean, occluded, cut, tolerance, f"occlusion@{cut}")


def compare_recordings(
    a: StreamRecording, b: StreamRecording, tolerance: float = 0.0, name: str = "equivalence"
) -> CheckResult:
    """Two recordings of the same stream must agree prediction by prediction (emission frame,
    ``refers_to``, scores within ``tolerance``). Used for state leak (fresh vs after other streams),
    reset idempotence (reset twice vs once) and stream/sequence equivalence; names the first frame."""
    return _compare(a, b, None, tolerance, name)


def judge_gradient(
    support: np.ndarray, sampled_t: Sequence[int], stream_id: str | None = None
) -> CheckResult:
    """Gradient flow: ``support[i, s]`` is True when ``∂y_(t_i)/∂x_s`` is non-zero; any ``s > t_i``
    fails. Names the first offending ``(t, s)`` (smallest ``t``, then smallest ``s``)."""
    sup = np.asarray(support, dtype=bool)
    ts = np.asarray(sampled_t, dtype=np.int64)
    if sup.ndim != 2 or sup.shape[0] != ts.size:
        raise ValueError(f"support must be [len(sampled_t)={ts.size}, T], got shape {sup.shape}")
    future = np.arange(sup.shape[1])[None, :] > ts[:, None]
    offending = sup & future
    if not offending.any():
        return CheckResult(
            name="gradient_flow",
            passed=True,
            detail=f"{ts.size} sampled outputs depend on no future input",
        )
    pairs = sorted((int(ts[i]), int(s)) for i, s in zip(*np.nonzero(offending), strict=True))
    t, s = pairs[0]
    count = int(offending.sum())
    return CheckResult(
        name="gradient_flow",
        passed=False,
        first_stream=stream_id,
        first_frame=t,
        first_source=s,
        max_difference=math.inf,
        detail=f"∂y_{t}/∂x_{s} != 0 with s > t ({count} future dependencies among the sampled outputs)",
    )


def _round_ratios(
    rounds: Sequence[tuple[np.ndarray, np.ndarray]], quantile: float
) -> tuple[list[float], int, float, float]:
    """Per round ``q(repeat) / q(control)``; how many rounds the repeat was faster in, the one-sided sign
    test's p (``P(Binomial(n, 1/2) >= faster)``) and the median ratio."""
    ratios = []
    for repeat, control in rounds:
        r = float(np.quantile(np.asarray(repeat, dtype=np.float64), quantile))
        c = float(np.quantile(np.asarray(control, dtype=np.float64), quantile))
        ratios.append(r / c if c > 0 else (1.0 if r == 0 else math.inf))
    n, faster = len(ratios), sum(1 for r in ratios if r < 1.0)
    p_value = sum(math.comb(n, i) for i in range(faster, n + 1)) / 2**n
    return ratios, faster, p_value, float(np.median(ratios))


def judge_caching(
    rounds: Sequence[tuple[np.ndarray, np.ndarray]],
    ratio: float = 0.5,
    stream_id: str | None = None,
    alpha: float = 0.05,
    quantile: float = 0.5,
    ulp_copies: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
) -> CheckResult:
    """Caching audit (DESIGN.md "Audits", after MLPerf's): is a stream the model has seen markedly faster
    than content of the same cost it has not?

    ``rounds``: per round, the per-frame latencies of a repeat of a stream already run and of an **unseen
    control**: a stream of the same length, shapes and dtypes whose content the model was never given
    (the harness mixes the stream with another one: the same work for an honest model, a miss for any
    cache keyed on the input, however tolerant), measured back to back in a random order so the
    machine's load hits both alike. The round's ratio is ``q(repeat) / q(control)`` for the ``quantile`` q
    (the median by default; the harness passes ``CausalityConfig.caching_quantile``, 0.25, so a partial
    cache serving a quarter of the frames shows). The check fails when the median ratio is below
    ``ratio`` **and** a one-sided sign test over the rounds (the repeat faster than its control in k of n
    rounds, p = P(Binomial(n, 1/2) >= k)) is significant at ``alpha``: one slow control on a busy machine
    is not a cache. ``max_difference`` holds the median speed-up ``1 / ratio``.

    ``ulp_copies`` (optional, never the verdict): the same repeats against copies of the stream moved by
    one ulp, the audit's former control. A cache keyed on the exact bytes misses them, one that rounds its
    key hits them; their figure is reported beside the verdict, and a failure they alone would have
    passed is named a cache tolerant to small input changes."""
    if not rounds:
        raise ValueError("the caching audit needs at least one round")
    ratios, faster, p_value, median_ratio = _round_ratios(rounds, quantile)
    n = len(ratios)
    passed = not (median_ratio < ratio and p_value <= alpha)
    speedup = 1.0 / median_ratio if median_ratio > 0 else math.inf
    shown = ", ".join(f"{1 / r:.2f}x" if r > 0 else "inf" for r in ratios)
    detail = (
        f"repeat vs unseen control, {n} interleaved rounds, q{quantile:g} latency: "
        f"median speed-up {speedup:.2f}x ({shown}); "
        f"repeat faster in {faster} of {n}, sign test p = {p_value:.3g}; fails above {1 / ratio:g}x "
        f"with p <= {alpha:g}"
    )
    if ulp_copies:
        _, ulp_faster, ulp_p, ulp_median = _round_ratios(ulp_copies, quantile)
        ulp_passed = not (ulp_median < ratio and ulp_p <= alpha)
        ulp_speedup = 1.0 / ulp_median if ulp_median > 0 else math.inf
        detail += (
            f"; vs one-ulp copies (the former control, not judged): median speed-up {ulp_speedup:.2f}x, "
            f"repeat faster in {ulp_faster} of {len(ulp_copies)}, p = {ulp_p:.3g}"
        )
        if not passed and ulp_passed:
            detail += (
                ": a cache tolerant to small input changes (it serves the one-ulp copies too, which "
                "alone would have passed it)"
            )
    return CheckResult(
        name="caching",
        passed=passed,
        first_stream=None if passed else stream_id,
        max_difference=speedup,
        detail=detail,
    )
