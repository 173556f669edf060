"""The signature codebook the synthetic data set and the reference models share (DESIGN.md "The data
contract"): class names, modality codes and each class's fixed signature vector. numpy only, so the data
set (and every CLI command that plans one) does not import torch.
"""

from __future__ import annotations

import functools
import zlib

import numpy as np

__all__ = [
    "AVE_EVENT_CLASSES",
    "CODEBOOK_SEED",
    "DEFAULT_INPUT_DIMS",
    "MODALITY_CODES",
    "class_signature",
    "default_classes",
    "modality_code",
]

CODEBOOK_SEED = 40_042_018
"""Root seed of the signature codebook shared by the synthetic data set and the reference models."""

MODALITY_CODES: dict[str, int] = {"audio": 1, "visual": 2}
"""Stable integer code per modality name (other names: ``1000 + crc32(name)``, never ``hash()``)."""

DEFAULT_INPUT_DIMS: dict[str, int] = {"audio": 64, "visual": 128}
"""Payload size per modality of the default synthetic data set."""

AVE_EVENT_CLASSES: tuple[str, ...] = (
    "Church bell", "Male speech", "Bark", "Fixed-wing aircraft", "Race car", "Female speech",
    "Helicopter", "Violin", "Flute", "Ukulele", "Frying (food)", "Truck", "Shofar", "Motorcycle",
    "Acoustic guitar", "Train horn", "Clock", "Banjo", "Goat", "Baby cry", "Bus", "Chainsaw", "Cat",
    "Horse", "Toilet flush", "Rodents", "Accordion", "Mandolin",
)  # fmt: skip
"""The 28 event categories of AVE (seed 004 §6.1.1; Tian et al., ECCV 2018)."""


def default_classes(num_event_classes: int = 28) -> tuple[str, ...]:
    """Class names of the synthetic data set: ``("background", *events)``.

    With 28 event classes the events are AVE's categories (seed 004 §6.1.1); with any other count
    they are named ``event_00``, ``event_01``, ...
    """
    if num_event_classes < 1:
        raise ValueError(f"num_event_classes must be >= 1, got {num_event_classes}")
    if num_event_classes == len(AVE_EVENT_CLASSES):
        return ("background", *AVE_EVENT_CLASSES)
    return ("background", *(f"event_{i:02d}" for i in range(num_event_classes)))


def modality_code(modality: str) -> int:
    """Stable integer code of a modality name (the same in every process and Python version)."""
    code = MODALITY_CODES.get(modality)
    return code if code is not None else 1000 + zlib.crc32(modality.encode("utf-8"))


@functools.lru_cache(maxsize=8192)
def _signature(class_index: int, dim: int, code: int) -> np.ndarray:
    vector = np.random.default_rng([CODEBOOK_SEED, code, class_index]).standard_normal(dim)
    vector /= np.linalg.norm(vector)
    out = vector.astype(np.float32)
    out.setflags(write=False)
    return out


def class_signature(class_index: int, dim: int, modality: str) -> np.ndarray:
    """The fixed unit-length ``float32[dim]`` signature of class ``class_index`` in ``modality``.

    Drawn from ``numpy.random.default_rng([CODEBOOK_SEED, modality_code(modality), class_index])``
    and normalised: deterministic, and independent of how many classes there are. The synthetic data
    set renders payloads with it; the reference models use it as their matched-filter weights.
    """
    if class_index < 0:
        raise ValueError(f"class_index must be >= 0, got {class_index}")
    if dim < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
    return _signature(int(class_index), int(dim), modality_code(modality)).copy()
