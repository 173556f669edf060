"""The caching audit (``../shared/DESIGN.md``, "Audits": running one stream twice must not be markedly
faster the second time), run on an :class:`~streambench.harness.runs.causality.variants.AuditRunner` and
judged by :func:`streambench.protocols.causality.judge_caching`.

Stream A runs once on a fresh (warmed-up) instance, then ``caching_rounds`` rounds each run, in a seeded
random order, a **repeat** of A, an **unseen control** (:func:`unseen_control`) and a **one-ulp copy** of A
(:func:`~streambench.harness.runs.causality.variants.nudge`). The verdict compares the repeat with the unseen
control; the one-ulp copy, the audit's former control, is reported beside it and decides nothing.

Why the control is unseen content: a control must cost an honest model what A costs and
be a miss for every cache. A one-ulp copy costs the same, but a cache whose key forgives a few ulps (the
payload rounded, :class:`streambench.adapters.offenders.rounding_cache.RoundingCacheAdapter`) serves it as
fast as the repeat, and passes. What was weighed for the unseen control:

* another stream of the data set, as it is: a data set may have fewer streams than there are rounds, and
  the earlier checks have given the worker its streams already (a cache kept in module state outlives
  the instance, and would hit them);
* A's frames in another order: every payload is one the model has seen, a per-frame cache hits them all;
* random sign flips of A's values: new bytes, but outside the data's domain (negative pixels, spectra or
  probabilities), where an honest model can take another path (a log's NaN, a gate that opens);
* **chosen**: A mixed with another stream, frame by frame: ``(1 - w) * A + w * B`` per numeric payload,
  B another stream of the data set (the warm-up stream when A is the only one) read from frame
  ``offset`` on and cycled to A's length, ``w`` in ``[0.5, 0.75]``, distinct in every round
  (:func:`control_share`). A convex mix stays in the data's domain (ranges, signs, sums), keeps A's frame
  indices, times, shapes, dtypes and missing modalities, so an honest model does the same work; it is
  content no earlier run gave (however often B ran, the mix differs from it and from A by a large part
  of their difference, not by ulps), and a different content in every round, so no control is served
  from another's entries. Integer payloads are rounded and clipped to their dtype. A payload the partner
  cannot change (missing there, of another shape, complex into real, not numeric, or equal to A's) is
  moved by ulps no one-ulp copy uses: at worst the former control, for that payload.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from streambench.adapters.contract import Frame, Stream
from streambench.harness.datasets.catalog import make_warmup_stream
from streambench.harness.execution.config import RunConfig
from streambench.harness.runs.causality.variants import AuditRunner, nudge, nudge_payload
from streambench.protocols.causality import CausalityConfig, CheckResult, judge_caching

__all__ = ["caching_audit", "caching_partners", "caching_rounds", "control_share", "unseen_control"]

Rounds = list[tuple[np.ndarray, np.ndarray]]


def control_share(round_index: int, rounds: int) -> float:
    """The partner stream's share of the unseen control of round ``round_index`` of ``rounds``: evenly
    spaced over ``[0.5, 0.75]``, so no two rounds' controls coincide."""
    return 0.5 + 0.25 * round_index / max(1, rounds - 1)


def caching_partners(
    config: RunConfig, all_streams: Sequence[Stream], stream: Stream, rounds: int
) -> list[Stream]:
    """The stream mixed into each round's control: the data set's other streams in turn (the warm-up
    stream when ``stream`` is the only one)."""
    others = [s for s in all_streams if s.stream_id != stream.stream_id]
    if not others:
        others = [make_warmup_stream(config.data, stream.num_frames)]
    return [others[r % len(others)] for r in range(rounds)]


def _mixed(a: Any, b: Any, share: float, fallback_ulps: int) -> Any:
    if not isinstance(a, np.ndarray) or a.dtype.kind not in "fciu":
        return a  # nothing numeric to change (None: the modality stays missing)
    mixable = (
        isinstance(b, np.ndarray)
        and b.shape == a.shape
        and b.dtype.kind in "fciu"
        and (b.dtype.kind != "c" or a.dtype.kind == "c")
    )
    if not mixable:
        return nudge_payload(a, fallback_ulps)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    mix = (1.0 - share) * a.astype(wide) + share * b.astype(wide)
    if a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        mix = np.clip(np.rint(mix), info.min, info.max)
    out = mix.astype(a.dtype)
    return nudge_payload(a, fallback_ulps) if np.array_equal(out, a) else out


def unseen_control(
    stream: Stream, partner: Stream, share: float, offset: int = 0, fallback_ulps: int = 1
) -> Stream:
    """``stream``'s frames (indices, times, modalities) with every numeric payload replaced by
    ``(1 - share) * payload + share * partner's``, the partner's frames read from ``offset`` on and cycled
    to the stream's length; a payload the partner cannot change is moved ``fallback_ulps`` ulps instead.
    The caching audit's control: see the module's docstring."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"share must lie in (0, 1), got {share}")

    def frames() -> list[Frame]:
        source = [f.inputs for f in partner.frames()]
        out = []
        for i, frame in enumerate(stream.frames()):
            other = source[(i + offset) % len(source)]
            inputs = {k: _mixed(v, other.get(k), share, fallback_ulps) for k, v in frame.inputs.items()}
            out.append(dataclasses.replace(frame, inputs=inputs))
        return out

    sid = f"{stream.stream_id}~mix[{partner.stream_id}@{share:.3f}+{offset}]"
    return dataclasses.replace(stream, frame_source=frames, stream_id=sid)


def caching_rounds(
    runner: AuditRunner, stream: Stream, partners: Sequence[Stream], causality: CausalityConfig
) -> tuple[Rounds, Rounds]:
    """Run ``stream`` once on a fresh (warmed-up) instance, then one round per partner: a repeat of it, its
    unseen control and a one-ulp copy, in a seeded random order. Returns the per-frame latencies of
    (repeat, unseen control) and of (repeat, one-ulp copy), round by round."""
    runner.fresh()
    runner.run(stream)
    order = np.random.default_rng([causality.noise_seed, 0xCA])
    rounds = len(partners)
    unseen: Rounds = []
    copies: Rounds = []
    for r, partner in enumerate(partners):
        runs = {
            "repeat": stream,
            "unseen": unseen_control(stream, partner, control_share(r, rounds), r + 1, rounds + r + 1),
            "ulp": nudge(stream, r + 1),
        }
        latency = {str(name): runner.run(runs[name]).latency_ns for name in order.permutation(list(runs))}
        unseen.append((latency["repeat"], latency["unseen"]))
        copies.append((latency["repeat"], latency["ulp"]))
    return unseen, copies


def caching_audit(
    runner: AuditRunner, stream: Stream, partners: Sequence[Stream], causality: CausalityConfig
) -> CheckResult:
    """The caching check: :func:`caching_rounds` judged on the unseen controls, the one-ulp copies
    reported beside the verdict."""
    unseen, copies = caching_rounds(runner, stream, partners, causality)
    return judge_caching(
        unseen,
        causality.caching_ratio,
        stream.stream_id,
        causality.caching_alpha,
        causality.caching_quantile,
        ulp_copies=copies,
    )
