"""What each data set kind is, for ``streambench data`` and docs/data.md: its modalities and payload
shapes, frame rate, classes, label format, default streams and every option.

Kinds the harness generates (``synthetic``, ``synthetic_spoof``) are described from a stream built from
their default configuration (its first frame: a few milliseconds of numpy), so every figure is what the
data set produces. Kinds read from files (``audio_files``, ``ave``, ``llp``, ``feature_arrays``,
``video_files``) are described from their modules' declarations (class lists, segment counts) and their
configurations' defaults; nothing is read, and a payload shape is the one the released files (or the
default framing) give, or none where the files decide it.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from streambench.harness.datasets import ave, llp, spoof, synthetic
from streambench.harness.datasets.audio_files import AudioFilesConfig
from streambench.harness.datasets.catalog import KINDS, make_streams
from streambench.harness.datasets.feature_arrays import FeatureArraysConfig
from streambench.harness.datasets.video_files import VideoFilesConfig

__all__ = [
    "CONFIGS",
    "DataOption",
    "DataSetDescription",
    "Payload",
    "UnknownDataSetError",
    "describe",
    "describe_all",
    "option_rows",
    "type_name",
]

CONFIGS: dict[str, type[BaseModel]] = {
    "synthetic": synthetic.SyntheticConfig,
    "audio_files": AudioFilesConfig,
    "ave": ave.AveConfig,
    "llp": llp.LlpConfig,
    "synthetic_spoof": spoof.SpoofConfig,
    "feature_arrays": FeatureArraysConfig,
    "video_files": VideoFilesConfig,
}
"""The configuration model of each kind (``RunConfig.data``, selected by ``kind``)."""


class UnknownDataSetError(LookupError):
    """No data set kind of that name; the message offers the close names and lists the kinds."""


class Payload(BaseModel):
    """One modality's payload in ``Frame.inputs``: its shape (``None``: it depends on the files) and dtype."""

    modality: str
    shape: list[int] | None
    dtype: str = "float32"
    note: str = ""


class DataOption(BaseModel):
    """One field of the kind's configuration, as ``streambench data KIND`` lists it."""

    option: str
    type: str
    default: str
    description: str


class DataSetDescription(BaseModel):
    """Everything ``streambench data KIND`` prints (``--json``: this model)."""

    kind: str
    summary: str
    source: Literal["generated", "files"]
    described_from: str = Field(description="a built stream, or the module's declarations")
    modalities: list[str]
    payloads: list[Payload]
    frame_rate_hz: float | None = Field(
        description="frames per second of the default configuration; None: the files' (or their timestamps)"
    )
    segment_length_s: float | None = Field(description="unit of the segment-level figures")
    num_classes: int | None = Field(description="None: read from the files")
    classes: list[str] | None
    classes_note: str
    labels: str = Field(description="how frames are labelled, and from what")
    default_streams: str
    num_streams: int | None = Field(
        description="scored streams of the default configuration; None: the files'"
    )
    stream_duration_s: float | None = Field(description="seconds per stream by default; None: the files'")
    options: list[DataOption]


# --------------------------------------------------------------------------------------------------
# options


def type_name(annotation: Any) -> str:
    """A readable type: ``tuple[str, ...] | None``, ``'mix' | 'first' | 'all'``, ``Path``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_name(a) for a in args)
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if annotation is type(None):
        return "None"
    if origin is not None:
        shown = [("..." if a is Ellipsis else type_name(a)) for a in args]
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(shown)}]"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _default_text(value: Any) -> str:
    if isinstance(value, BaseModel):
        return ", ".join(f"{k}={v!r}" for k, v in value.model_dump().items())
    if isinstance(value, Path):
        return str(value)
    return repr(value)


def option_rows(model: type[BaseModel]) -> list[DataOption]:
    """Every field of a data set configuration but its ``kind``: type, default and description."""
    rows = []
    for name, field in model.model_fields.items():
        if name == "kind":
            continue
        default = (
            "(required)"
            if field.is_required()
            else _default_text(field.get_default(call_default_factory=True))
        )
        rows.append(
            DataOption(
                option=name,
                type=type_name(field.annotation),
                default=default,
                description=field.description or "",
            )
        )
    return rows


def _default(model: type[BaseModel], name: str) -> Any:
    return model.model_fields[name].get_default(call_default_factory=True)


# --------------------------------------------------------------------------------------------------
# the kinds


def _generated(
    kind: str, model: type[BaseModel], config: Any, described_from: str, payload_note: str
) -> tuple[dict[str, Any], Any]:
    """What a generated kind's description reads off the first stream built from ``config`` (its
    payloads, each with ``payload_note``; frame rate, duration and classes), as :func:`_feature_set` gives
    a feature set's; and that stream."""
    stream = make_streams(config)[0]
    frame = next(iter(stream.frames()))
    payloads = [
        Payload(modality=m, shape=list(np.shape(v)), dtype=str(np.asarray(v).dtype), note=payload_note)
        for m, v in frame.inputs.items()
        if v is not None
    ]
    classes = list(stream.classes)
    fields = {
        "kind": kind,
        "source": "generated",
        "described_from": described_from,
        "modalities": list(stream.modalities),
        "payloads": payloads,
        "frame_rate_hz": 1.0 / float(stream.frame_times[1] - stream.frame_times[0]),
        "segment_length_s": stream.segment_length_s,
        "num_classes": len(classes),
        "classes": classes,
        "stream_duration_s": stream.duration_s,
        "options": option_rows(model),
    }
    return fields, stream


def _synthetic() -> DataSetDescription:
    model = synthetic.SyntheticConfig
    fields, stream = _generated(
        "synthetic",
        model,
        model(num_streams=1, seed=0),  # any seed: the shapes are the same
        "the first stream of the default configuration, seed 0",
        "class signature + Gaussian noise",
    )
    n = _default(model, "num_streams")
    return DataSetDescription(
        summary="seeded audio-visual event streams shaped like AVE (the default; no download)",
        classes_note="'background' first, then the event classes (AVE's 28 category names by default)",
        labels="one class per frame, constant over each 1 s segment: an event (1-2 per stream, 2-5 "
        "segments each) or background; meta: visibility per frame (audio_visual, audio_only, visual_only), "
        "events",
        default_streams=f"{n} streams x {stream.duration_s:g} s ({stream.num_frames} frames each)",
        num_streams=n,
        **fields,
    )


def _spoof() -> DataSetDescription:
    model = spoof.SpoofConfig
    fields, stream = _generated(
        "synthetic_spoof",
        model,
        model(num_utterances=2, seed=0),
        "the first utterance of the default configuration, seed 0",
        "frame_samples audio samples in [-1, 1]",
    )
    n, cut = _default(model, "num_utterances"), _default(model, "cut_length_s")
    share = _default(model, "real_fraction")
    return DataSetDescription(
        summary="seeded speech-like real and fake utterances (the detection protocol's default data)",
        classes_note="one label per utterance on every frame; meta utterance_label: 1 real, 0 fake",
        labels="every frame carries its utterance's class (real or fake); fakes hold a faint tone at "
        "artefact_hz in bursts",
        default_streams=f"{n} utterances x {stream.duration_s:g} s (cut_length_s = {cut:g}), "
        f"{share:.0%} real",
        num_streams=n,
        **fields,
    )


def _audio_files() -> DataSetDescription:
    model = AudioFilesConfig
    rate_hz, frame = _default(model, "sample_rate_hz"), _default(model, "frame_samples")
    return DataSetDescription(
        kind="audio_files",
        summary="WAV recordings with Audacity (.txt, .labels) or CSV label files, framed into frame_samples",
        source="files",
        described_from="the configuration's defaults (nothing read)",
        modalities=["audio"],
        payloads=[
            Payload(
                modality="audio",
                shape=[frame],
                note="frame_samples samples at sample_rate_hz ([channels, frame_samples] with "
                "channels = all); the last frame zero-padded",
            )
        ],
        frame_rate_hz=rate_hz / frame,
        segment_length_s=_default(model, "segment_length_s"),
        num_classes=None,
        classes=None,
        classes_note="background_class first, then the labels found in the files, sorted (or classes)",
        labels="a frame gets a label when at least min_overlap of it lies inside that label's spans; "
        "otherwise background_class (labels: START<TAB>END<TAB>LABEL or onset,offset,label)",
        default_streams="one stream per recording (files, or every *.wav of directory), its length",
        num_streams=None,
        stream_duration_s=None,
        options=option_rows(model),
    )


def _feature_set(kind: str, module: Any, model: type[BaseModel]) -> dict[str, Any]:
    classes = list(module.AVE_CLASSES if kind == "ave" else module.LLP_CLASSES)
    return {
        "kind": kind,
        "source": "files",
        "described_from": "the module's declarations and the released files' layout (nothing read)",
        "modalities": ["audio", "visual"],
        "frame_rate_hz": 1.0,
        "segment_length_s": 1.0,
        "num_classes": len(classes),
        "classes": classes,
        "stream_duration_s": float(module.NUM_SEGMENTS),
        "num_streams": None,
        "options": option_rows(model),
    }


def _ave() -> DataSetDescription:
    return DataSetDescription(
        summary="AVE from its released features (Annotations.txt, audio_feature.h5, visual_feature.h5)",
        payloads=[
            Payload(modality="audio", shape=[128], note="one VGGish vector per 1 s segment (D of the file)"),
            Payload(
                modality="visual", shape=[512], note="the 7x7 mean of VGG-19 pool5; [25088] with flatten"
            ),
        ],
        classes_note="'background' first, then the 28 AVE categories in the authors' order",
        labels="one class per 1 s segment: the sample's category for StartTime <= s < EndTime, else "
        "background (Category&VideoID&Quality&StartTime&EndTime)",
        default_streams=f"one stream per annotated sample (or split line): {ave.NUM_SEGMENTS} frames x 1 s",
        **_feature_set("ave", ave, ave.AveConfig),
    )


def _llp() -> DataSetDescription:
    return DataSetDescription(
        summary="LLP's AVVP evaluation labels per modality, with optional per-video .npy features",
        payloads=[
            Payload(modality="audio", shape=[128], note="VGGish; None (missing) without audio_features"),
            Payload(
                modality="visual",
                shape=[2048],
                note="ResNet-152 averaged per segment, + 512 R(2+1)D with st_features; None without features",
            ),
        ],
        classes_note="'background' first, then the 25 LLP events in the authors' order",
        labels="per 1 s segment, the union of the audio and the visual labels (filename, onset, offset, "
        "event_labels); meta labels_audio and labels_visual keep each modality's own",
        default_streams=f"one stream per clip named in either file: {llp.NUM_SEGMENTS} frames x 1 s",
        **_feature_set("llp", llp, llp.LlpConfig),
    )


_FROM_FILES = "classes when given, else background_class then the labels of the event lists, sorted"
_LABELS = (
    "an event list per stream (.txt/.labels Audacity, .csv onset,offset,label: a frame gets a label when at "
    "least min_overlap of its capture interval lies inside), or per-frame arrays ([T] class indices or "
    "[T, C] multi-hot; classes required)"
)


def _file_kind(
    kind: str, model: type[BaseModel], summary: str, payload: Payload, labels: str, streams: str
) -> DataSetDescription:
    return DataSetDescription(
        kind=kind,
        summary=summary,
        source="files",
        described_from="the configuration's defaults (nothing read)",
        modalities=[payload.modality],
        payloads=[payload],
        frame_rate_hz=None,
        segment_length_s=_default(model, "segment_length_s"),
        num_classes=None,
        classes=None,
        classes_note=_FROM_FILES,
        labels=labels,
        default_streams=streams,
        num_streams=None,
        stream_duration_s=None,
        options=option_rows(model),
    )


def _feature_arrays() -> DataSetDescription:
    note = "row i of each [T, ...] array, float32; .npz keys / HDF5 datasets are the modalities"
    return _file_kind(
        "feature_arrays",
        FeatureArraysConfig,
        "per-frame arrays (.npy, .npz, HDF5) at frame_rate_hz or each file's timestamps, with labels",
        Payload(modality=_default(FeatureArraysConfig, "modality"), shape=None, note=note),
        _LABELS + " in the file (labels_key) or beside it",
        "one stream per file (an HDF5 file of groups: per group), its length",
    )


def _video_files() -> DataSetDescription:
    note = "[H, W, 3] rgb24 ([H, W] gray), scaled to width x height if set; float32 in [0, 1] with dtype"
    return _file_kind(
        "video_files",
        VideoFilesConfig,
        "video files decoded by PyAV at their own frame rate (variable: by timestamps), with labels",
        Payload(modality=_default(VideoFilesConfig, "modality"), shape=None, dtype="uint8", note=note),
        _LABELS + ", one per video (same stem)",
        "one stream per video file, every frame",
    )


_DESCRIBERS: dict[str, Callable[[], DataSetDescription]] = {
    "synthetic": _synthetic,
    "audio_files": _audio_files,
    "ave": _ave,
    "llp": _llp,
    "synthetic_spoof": _spoof,
    "feature_arrays": _feature_arrays,
    "video_files": _video_files,
}


def describe(kind: str) -> DataSetDescription:
    """The description of one data set kind; :class:`UnknownDataSetError` (with a did-you-mean) otherwise."""
    describer = _DESCRIBERS.get(kind)
    if describer is None:
        close = difflib.get_close_matches(kind, KINDS, n=2, cutoff=0.5)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownDataSetError(f"unknown data set kind {kind!r}.{hint} The kinds: {', '.join(KINDS)}")
    return describer()


def describe_all() -> list[DataSetDescription]:
    """Every kind, in :data:`~streambench.harness.datasets.catalog.KINDS` order."""
    return [describe(kind) for kind in KINDS]
