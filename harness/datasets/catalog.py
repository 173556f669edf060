"""Every data set the harness reads, behind one configuration type and two functions.

``RunConfig.data`` is a :data:`DataConfig`: a tagged union on ``kind`` — ``"synthetic"`` (the default,
also when ``kind`` is left out), ``"audio_files"`` (WAV + label files), ``"ave"`` (seed 004 §6.1.1),
``"llp"`` (seed 004 §6.1.2), ``"synthetic_spoof"`` (real/fake utterances, seed 002), ``"feature_arrays"``
(per-frame arrays from .npy / .npz / HDF5) or ``"video_files"`` (video decoded at its own frame rate).
:func:`make_streams` gives the scored streams, :func:`make_warmup_stream` the unscored warm-up stream (at
least ``num_frames`` frames), whatever the kind.

The generated kinds (``synthetic``, ``synthetic_spoof``) are public functions of their seed, so the seed
decides who can rebuild the test set. :func:`seeded` fixes it once per run, in the process
that runs the harness: a seed the configuration gives is **public** (anyone, a model's author included,
can rebuild those streams); an unset one becomes a **secret** seed drawn there from the operating
system's generator (:func:`secrets.randbits`), written to the run's result only after scoring.
:func:`withheld` is the configuration with the seed taken out, for a process that needs no data.

:func:`check_sample_streams` is the contract check between a data set framed in samples and an adapter
that declares the rate and frame size it needs (``AdapterInfo.sample_rate_hz`` / ``frame_samples``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Tag, TypeAdapter, ValidationError

from streambench.adapters.contract import AdapterInfo, Stream
from streambench.harness.datasets import audio_files, ave, feature_arrays, llp, spoof, synthetic, video_files
from streambench.harness.datasets.audio_files import AudioFilesConfig
from streambench.harness.datasets.ave import AveConfig
from streambench.harness.datasets.feature_arrays import FeatureArraysConfig
from streambench.harness.datasets.llp import LlpConfig
from streambench.harness.datasets.spoof import SpoofConfig
from streambench.harness.datasets.synthetic import SyntheticConfig
from streambench.harness.datasets.video_files import VideoFilesConfig

__all__ = [
    "KINDS",
    "SECRET_SEED_BITS",
    "DataConfig",
    "SeedKind",
    "background_class_of",
    "check_sample_streams",
    "given_seed_kind",
    "make_streams",
    "make_warmup_stream",
    "seeded",
    "segment_origin",
    "withheld",
]


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "synthetic"))
    return str(getattr(value, "kind", "synthetic"))


DataConfig = Annotated[
    Annotated[SyntheticConfig, Tag("synthetic")]
    | Annotated[AudioFilesConfig, Tag("audio_files")]
    | Annotated[AveConfig, Tag("ave")]
    | Annotated[LlpConfig, Tag("llp")]
    | Annotated[SpoofConfig, Tag("synthetic_spoof")]
    | Annotated[FeatureArraysConfig, Tag("feature_arrays")]
    | Annotated[VideoFilesConfig, Tag("video_files")],
    Discriminator(_kind),
]
"""The configuration of any data set; ``kind`` selects it (default ``"synthetic"``)."""
_DATA: TypeAdapter[DataConfig] = TypeAdapter(DataConfig)

_LOADERS: dict[str, tuple[Callable[[Any], list[Stream]], Callable[[Any, int], Stream]]] = {
    "synthetic": (synthetic.make_streams, synthetic.make_warmup_stream),
    "audio_files": (audio_files.streams, audio_files.warmup_stream),
    "ave": (ave.streams, ave.warmup_stream),
    "llp": (llp.streams, llp.warmup_stream),
    "synthetic_spoof": (spoof.streams, spoof.warmup_stream),
    "feature_arrays": (feature_arrays.streams, feature_arrays.warmup_stream),
    "video_files": (video_files.streams, video_files.warmup_stream),
}
KINDS: tuple[str, ...] = tuple(_LOADERS)
"""Every data set kind ``RunConfig.data.kind`` accepts, the default (``"synthetic"``) first."""


def background_class_of(config: DataConfig) -> str | None:
    """The "no event" class the data set names (the ``background_class`` of ``audio_files``,
    ``feature_arrays`` and ``video_files``, e.g. non-speech); None for a kind that names none, where the
    online protocol looks for a class called "background" (protocols/online_events.py
    ``background_class``). Every protocol's F1 binds it the same way."""
    named = getattr(config, "background_class", None)
    return named if isinstance(named, str) else None


def segment_origin(config: DataConfig | Mapping[str, Any]) -> str | None:
    """Where the data's segment length (the unit of the segment figures) comes from, in words: the kind's
    ``segment_length_s`` as set, or its default (1 s, AVE's segment: seed 004 §6.1.1), or the kind's own
    fixed 1 s segments (AVE and LLP clips, real/fake utterances). ``config`` may be a result's
    ``dataset_config``; None when it is not a data set's configuration."""
    if isinstance(config, Mapping):
        try:
            config = _DATA.validate_python(dict(config))
        except ValidationError:
            return None
    field = type(config).model_fields.get("segment_length_s")
    if field is None:
        return f"the {config.kind} data's 1 s segments"
    value = getattr(config, "segment_length_s")  # noqa: B009
    if value == field.default:
        return f"data.segment_length_s = {value:g} s, the default: AVE's segment length, seed 004 §6.1.1"
    return f"data.segment_length_s = {value:g} s, as set"


SeedKind = Literal["secret", "public"]
"""Where a data set's seed came from: drawn for the run and kept from the model until scored
(``secret``), or given by the configuration (``public``: the test set can be rebuilt from it)."""

SECRET_SEED_BITS = 63
"""Size of a drawn seed: too many to try (each try renders frames), and it fits SQLite's integer."""


def given_seed_kind(config: DataConfig) -> SeedKind | None:
    """``public`` for a data set whose configuration gives a seed, None for one without a seed (files)
    or with it unset (the run will draw it)."""
    return "public" if getattr(config, "seed", None) is not None else None


def seeded(config: DataConfig, secret: int | None = None) -> tuple[DataConfig, SeedKind | None]:
    """The data set with its seed fixed, and the kind of that seed (:data:`SeedKind`).

    A seed the configuration gives is kept (``public``); an unset one becomes ``secret``: ``secret`` if
    given (the same draw for several jobs, e.g. both sides of an A/B job), else drawn here. Data read
    from files has no seed: the configuration as is, None."""
    if not hasattr(config, "seed"):
        return config, None
    if config.seed is not None:
        return config, "public"
    value = secret if secret is not None else secrets.randbits(SECRET_SEED_BITS)
    if value < 0:
        raise ValueError(f"a data set's seed is >= 0, got {value}")
    return config.model_copy(update={"seed": value}), "secret"


def withheld(config: DataConfig) -> DataConfig:
    """The configuration with its seed unset: what a process that builds no streams (a sealed worker)
    may be told of the data set."""
    return config.model_copy(update={"seed": None}) if hasattr(config, "seed") else config


def make_streams(config: DataConfig) -> list[Stream]:
    """The scored streams of the data set, in a fixed order."""
    streams = _LOADERS[config.kind][0](config)
    if not streams:
        raise ValueError(f"data set {config.kind!r}: no streams (check its files)")
    return streams


def make_warmup_stream(config: DataConfig, num_frames: int) -> Stream:
    """An unscored stream of at least ``num_frames`` frames, shaped like the scored ones."""
    return _LOADERS[config.kind][1](config, num_frames)


def check_sample_streams(info: AdapterInfo, streams: Sequence[Stream]) -> None:
    """A model that declares a sample rate or frame size must get streams framed that way: a clear error
    naming both otherwise (the audio loader resamples and frames to ``data.sample_rate_hz`` /
    ``data.frame_samples``)."""
    for stream in streams[:1]:
        for field in ("sample_rate_hz", "frame_samples"):
            setting = f"data.{field}"
            needed = getattr(info, field)
            given = stream.meta.get(field)
            if needed is not None and given != needed:
                raise ValueError(
                    f"adapter {info.name!r} needs {field} = {needed}, the data set's stream "
                    f"{stream.stream_id!r} has {given if given is not None else 'no such framing'}; "
                    f"set {setting} = {needed}"
                )
