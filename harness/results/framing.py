"""Do two measurements frame the same signal?

A frame's latency, the frames per second and the energy per frame are figures *per frame*: between two
runs whose frames hold different amounts of signal (512 against 256 samples, 25 against 50 frames/s) they
change with the framing, not with the model — halving the frame roughly halves the work per frame and
doubles the FPS. RTF (processing time over stream time) stays comparable. So:

- :func:`framing_note` says how two runs' framing differs (``compare``: the note is printed, and a change
  of a per-frame figure, :data:`PER_FRAME_KEYS`, is not called a regression unless forced);
- :func:`side_differences` says how the two sides of an A/B job differ in their data (its framing, or
  any other setting): an A/B comparison of per-frame latency needs both sides to run the same frames.

The framing of a data set comes from its configuration
(:func:`streambench.harness.datasets.provenance.framing_of`).
"""

from __future__ import annotations

from streambench.harness.datasets.provenance import Framing, framing_of
from streambench.harness.execution.config import RunConfig
from streambench.harness.results.headline import RunHeadline

__all__ = ["PER_FRAME_KEYS", "framing_note", "side_differences"]

PER_FRAME_KEYS = frozenset({"mean", "p50", "p95", "p99", "fps", "energy"})
"""Headline figures measured per frame: they compare only between runs of the same framing."""


def _differs(base: Framing, head: Framing) -> bool:
    if (base.frame_samples, base.sample_rate_hz) != (head.frame_samples, head.sample_rate_hz):
        return True
    return abs(base.frame_rate_hz - head.frame_rate_hz) > 1e-9 * max(base.frame_rate_hz, head.frame_rate_hz)


def _consequence(base: Framing, head: Framing) -> str:
    ratio = head.frame_rate_hz / base.frame_rate_hz
    if abs(ratio - 1.0) > 1e-9:
        what = f"{ratio:.3g}x the frames per second"
    else:
        what = f"the same frame period, {base.frame_samples} against {head.frame_samples} samples a frame"
    return (
        f"per-frame latency, FPS and energy per frame measure frames of different signal ({what}), not "
        "only the models; RTF compares"
    )


def framing_note(base: RunHeadline, head: RunHeadline) -> str | None:
    """How the two runs' frames differ (size, sample rate or frame rate), None when they are the same or
    either run does not record its framing (an index entry written before framing was recorded)."""
    if base.data is None or head.data is None or base.data.framing is None or head.data.framing is None:
        return None
    b, h = base.data.framing, head.data.framing
    if not _differs(b, h):
        return None
    return (
        f"the frames differ: {base.run} has {b.describe()}, {head.run} {h.describe()}: {_consequence(b, h)}"
    )


def side_differences(
    base: RunConfig, head: RunConfig, labels: tuple[str, str] = ("base", "head")
) -> str | None:
    """How the data of the two sides of an A/B job differ — their framing first, else any other setting
    of the data set (kind, files, seed, ...) — or None when both run the same data. For ``streambench ab``
    and the pytest fixture: a job whose sides differ here compares frames of different signal."""
    b, h = framing_of(base.data), framing_of(head.data)
    if b is not None and h is not None and _differs(b, h):
        return (
            f"the frames differ: {labels[0]} has {b.describe()}, {labels[1]} {h.describe()}: "
            f"{_consequence(b, h)}"
        )
    base_tree, head_tree = base.data.model_dump(mode="json"), head.data.model_dump(mode="json")
    if base_tree == head_tree:
        return None
    keys = sorted(k for k in set(base_tree) | set(head_tree) if base_tree.get(k) != head_tree.get(k))
    shown = ", ".join(f"data.{k} {base_tree.get(k)!r} vs {head_tree.get(k)!r}" for k in keys[:3])
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return (
        f"{labels[0]} and {labels[1]} run different data ({shown}{more}): the gate would compare the "
        "models on different streams"
    )
