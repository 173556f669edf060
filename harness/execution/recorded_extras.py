"""``Prediction.features`` / ``.weights`` gathered after a stream into ``[P, K]`` arrays, checked.

The engine keeps a copy of each kept prediction's features and weights when ``EngineConfig.record`` asks (the
stability protocol, seed 000; the router protocol, seed 001) and calls :func:`gather_extras` after the
timed loop, so the checks cost nothing per frame. Every prediction must carry the field, as a 1-D array
of real numbers (or booleans) of one shape for the whole stream; otherwise the error names the frame.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from streambench.adapters.contract import Prediction

__all__ = ["Extras", "extras_of", "gather_extras"]

Extras = tuple[np.ndarray | None, np.ndarray | None]
"""Copies of one prediction's ``(features, weights)``: an adapter may reuse its output buffers."""

_INDEX = {"features": 0, "weights": 1}


def extras_of(prediction: Prediction) -> Extras:
    features, weights = prediction.features, prediction.weights
    return (
        None if features is None else np.array(features, copy=True),
        None if weights is None else np.array(weights, copy=True),
    )


def gather_extras(
    outputs: Sequence[Extras] | None,
    record: Sequence[str],
    emitted_at: np.ndarray,
    error: Callable[[str, int, str], Exception],
    stream_id: str,
) -> dict[str, np.ndarray]:
    """``{"features": [P, K], "weights": [P, M]}`` for the names in ``record`` (empty if not recording)."""
    if outputs is None:
        return {}
    gathered: dict[str, np.ndarray] = {}
    for name in record:
        rows: list[np.ndarray] = []
        for k, extras in enumerate(outputs):
            value = extras[_INDEX[name]]
            frame = int(emitted_at[k])
            if value is None:
                raise error(stream_id, frame, f"Prediction.{name} is missing (this protocol records it)")
            row = np.asarray(value)
            if row.ndim != 1 or row.dtype.kind not in "biuf":
                got = f"{row.dtype} {row.shape}"
                raise error(stream_id, frame, f"Prediction.{name} must be a 1-D array of numbers, got {got}")
            if rows and row.shape != rows[0].shape:
                raise error(
                    stream_id, frame, f"Prediction.{name} has shape {row.shape}, earlier ones {rows[0].shape}"
                )
            rows.append(row)
        gathered[name] = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)
    return gathered
