"""The perturbations a protocol can ask for, as data (seed 004 §6.2.2 (3); DESIGN.md "Perturbations").

Missing-Rate@p%, Audio-Delay@Δt and Jitter@±δ as validated, frozen configs with a ``kind``
discriminator and a ``seed``. Protocols plan with them; harness/datasets/perturb.py applies them to streams.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = ["AudioDelay", "Jitter", "MissingModality", "Perturbation", "describe", "parse_perturbations"]


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MissingModality(_Config):
    """Missing-Rate@p%: ``rate`` of the steps (exactly ``round(rate * T)``) lose ``modality``."""

    kind: Literal["missing"] = "missing"
    modality: str
    rate: float = Field(ge=0.0, le=1.0)
    mode: Literal["zero", "none"] = "none"
    seed: int = Field(default=0, ge=0)


class AudioDelay(_Config):
    """Audio-Delay@Δt: ``modality`` lags the others by ``delay_ms`` (rounded to whole frames)."""

    kind: Literal["audio_delay"] = "audio_delay"
    delay_ms: float = Field(ge=0.0)
    modality: str = "audio"
    seed: int = Field(default=0, ge=0)


class Jitter(_Config):
    """Jitter@±δ: per-modality capture times displaced by ``U(-delta_ms, delta_ms)`` per frame."""

    kind: Literal["jitter"] = "jitter"
    delta_ms: float = Field(ge=0.0)
    modalities: tuple[str, ...] | None = None  # None: every modality of the stream
    seed: int = Field(default=0, ge=0)


Perturbation = Annotated[MissingModality | AudioDelay | Jitter, Field(discriminator="kind")]

_LIST_ADAPTER: TypeAdapter[list[Perturbation]] = TypeAdapter(list[Perturbation])


def parse_perturbations(data: Iterable[Mapping[str, Any] | BaseModel]) -> list[Perturbation]:
    """Validate a list of configs (dicts with a ``kind``, or config objects)."""
    items = [d.model_dump() if isinstance(d, BaseModel) else dict(d) for d in data]
    return _LIST_ADAPTER.validate_python(items)


def _label(p: MissingModality | AudioDelay | Jitter) -> str:
    if isinstance(p, MissingModality):
        return f"Missing-Rate@{p.rate * 100:g}% ({p.modality}, {p.mode})"
    if isinstance(p, AudioDelay):
        suffix = "" if p.modality == "audio" else f" ({p.modality})"
        return f"Audio-Delay@{p.delay_ms:g}ms{suffix}"
    suffix = "" if p.modalities is None else f" ({', '.join(p.modalities)})"
    return f"Jitter@±{p.delta_ms:g}ms{suffix}"


def describe(perturbations: MissingModality | AudioDelay | Jitter | Sequence[Perturbation]) -> str:
    """Short label for tables: ``"Missing-Rate@30% (visual, none) + Audio-Delay@100ms"``; ``"clean"``."""
    if isinstance(perturbations, BaseModel):
        return _label(perturbations)
    if not perturbations:
        return "clean"
    return " + ".join(_label(p) for p in perturbations)
