"""What the data of a run was, as the model received it.

- :func:`source_files`: per stream read from an audio file, the file, its own sample rate and channels,
  and what the loader did to it (resampled to the rate the adapter needs, channels mixed or one taken;
  :mod:`streambench.harness.datasets.audio_files`). The run records it in its environment manifest
  (``data_sources``) and :func:`conversion_warnings` names every conversion in the run's warnings: a
  model measured on resampled or down-mixed audio is not measured on the recordings as they are.
- :func:`framing_of`: the framing of a data set's streams — frames per second and, for audio framed in
  samples, the samples per frame and the sample rate — from its configuration. Per-frame latency, FPS
  and energy per frame only compare between runs whose frames hold the same amount of signal:
  :mod:`streambench.harness.results.framing` checks two runs' (``compare``, ``ab``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

if TYPE_CHECKING:
    from streambench.adapters.contract import Stream

__all__ = ["Framing", "conversion_warnings", "framing_of", "source_files"]

_SHOWN = 3
"""Stream ids named in a warning before "and N more"."""

_SAMPLE_FRAMED = {
    "audio_files": "streambench.harness.datasets.audio_files:AudioFilesConfig",
    "synthetic_spoof": "streambench.harness.datasets.spoof:SpoofConfig",
}
"""Kinds framed in samples, and their configuration (imported by :func:`framing_of`: a run's headline holds
a :class:`Framing` and reads none of them)."""
_SEGMENT_KINDS = ("ave", "llp")
"""Kinds with one frame per 1 s segment (seed 004 §6.1: AVE and LLP clips of ten 1 s segments)."""


def source_files(streams: Sequence[Stream]) -> dict[str, JsonValue]:
    """``{stream id: {file, sample_rate_hz, channels, resampled_to_hz, channels_taken}}`` for every
    stream read from an audio file (the loader's ``meta``); ``resampled_to_hz`` is None when the file was
    read at its own rate. Empty for generated data and features."""
    found: dict[str, JsonValue] = {}
    for stream in streams:
        meta = stream.meta
        if "source_sample_rate_hz" not in meta:
            continue
        found[stream.stream_id] = {
            "file": str(meta.get("source")),
            "sample_rate_hz": int(meta["source_sample_rate_hz"]),
            "channels": int(meta.get("source_channels", 1)),
            "resampled_to_hz": int(meta["sample_rate_hz"]) if meta.get("resampled") else None,
            "channels_taken": str(meta.get("channels", "mix")),
        }
    return found


def _named(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    return shown + (f" and {len(ids) - _SHOWN} more" if len(ids) > _SHOWN else "")


def conversion_warnings(sources: object) -> list[str]:
    """One warning per kind of conversion in a ``data_sources`` record (:func:`source_files`): files
    resampled (grouped by their own rate), multi-channel files mixed to mono or cut to one channel. Empty
    when nothing was converted or nothing is recorded (``sources`` not a mapping: an older run)."""
    if not isinstance(sources, Mapping):
        return []
    files = {str(k): v for k, v in sources.items() if isinstance(v, Mapping)}
    total = len(files)
    warnings = []
    by_rate: dict[tuple[int, int], list[str]] = {}
    for stream_id, entry in files.items():
        target = entry.get("resampled_to_hz")
        if isinstance(target, int):
            by_rate.setdefault((int(entry.get("sample_rate_hz", 0)), target), []).append(stream_id)
    for (source_hz, target_hz), ids in sorted(by_rate.items()):
        warnings.append(
            f"{len(ids)} of {total} audio files resampled from {source_hz} Hz to {target_hz} Hz "
            f"({_named(ids)}; scipy.signal.resample_poly): the model heard converted audio "
            "(data.resample = false refuses a file at another rate)"
        )
    for taken, what in (("mix", "mixed to mono (the mean of the channels)"), ("first", "cut to channel 0")):
        ids = [
            stream_id
            for stream_id, entry in files.items()
            if entry.get("channels_taken") == taken and int(entry.get("channels", 1)) > 1
        ]
        if ids:
            counts = sorted({int(files[i].get("channels", 1)) for i in ids})
            warnings.append(
                f"{len(ids)} of {total} audio files {what} from {'/'.join(map(str, counts))} channels "
                f"({_named(ids)}; data.channels = {taken!r}; 'all' passes every channel)"
            )
    return warnings


class Framing(BaseModel):
    """How a data set's streams are framed: frames per second, and for audio framed in samples the
    samples per frame and the sample rate (``frame_rate_hz = sample_rate_hz / frame_samples``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    frame_rate_hz: float = Field(gt=0, description="frames per second of stream time")
    frame_samples: int | None = Field(None, description="samples per frame (audio framed in samples)")
    sample_rate_hz: int | None = Field(None, description="the audio's sample rate (audio framed in samples)")

    def describe(self) -> str:
        period_ms = 1000.0 / self.frame_rate_hz
        if self.frame_samples is not None and self.sample_rate_hz is not None:
            return f"{self.frame_samples} samples at {self.sample_rate_hz} Hz ({period_ms:.4g} ms frames)"
        return f"{self.frame_rate_hz:.4g} frames/s ({period_ms:.4g} ms frames)"


def framing_of(data: BaseModel | Mapping[str, Any]) -> Framing | None:
    """The framing of a data set from its configuration (a model or its JSON form, defaults filled in);
    None for a kind this module does not know."""
    tree = data.model_dump(mode="json") if isinstance(data, BaseModel) else dict(data)
    kind = str(tree.get("kind", "synthetic"))
    if kind in _SAMPLE_FRAMED:
        module, _, name = _SAMPLE_FRAMED[kind].partition(":")
        fields = getattr(importlib.import_module(module), name).model_fields
        rate = int(tree.get("sample_rate_hz") or fields["sample_rate_hz"].default)
        samples = int(tree.get("frame_samples") or fields["frame_samples"].default)
        return Framing(frame_rate_hz=rate / samples, frame_samples=samples, sample_rate_hz=rate)
    if kind == "synthetic":
        from streambench.harness.datasets.synthetic import SyntheticConfig

        return Framing(frame_rate_hz=float(tree.get("fps") or SyntheticConfig.model_fields["fps"].default))
    if kind in _SEGMENT_KINDS:
        return Framing(frame_rate_hz=1.0)
    if kind == "feature_arrays" and tree.get("frame_rate_hz"):  # else each file's timestamps
        return Framing(frame_rate_hz=float(tree["frame_rate_hz"]))
    return None
