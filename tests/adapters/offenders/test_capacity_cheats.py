"""The capacity offenders and their honest twins (adapters/offenders/capacity_cheats.py): each twin is the
same model at the same cost; the shedder answers background when behind, the cache answers a payload it
has seen from the cache. What the capacity protocol makes of them: tests/harness/runs/
test_capacity_offenders.py and tests/harness/execution/test_capacity_search_sources.py."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.adapters.contract import Frame, Prediction
from streambench.adapters.offenders import capacity_cheats
from streambench.adapters.offenders.capacity_cheats import (
    HITS,
    CapacityCheatOptions,
    LoadShedderAdapter,
    LoadShedderTwinAdapter,
    SessionCacheAdapter,
    SessionCacheTwinAdapter,
)

CLASSES = ("background", "dog", "cat")
DIMS = {"audio": 8}


def _frames(seed: int, n: int) -> list[Frame]:
    rng = np.random.default_rng(seed)
    return [
        Frame(index=i, t=(i + 1) / 25, inputs={"audio": rng.normal(size=8).astype(np.float32)})
        for i in range(n)
    ]


def _options(**extra: object) -> CapacityCheatOptions:
    return CapacityCheatOptions.model_validate(
        {"classes": CLASSES, "input_dims": DIMS, "cost_ms": 0, **extra}
    )


def _scores(adapter: LoadShedderAdapter | SessionCacheAdapter, frames: list[Frame]) -> np.ndarray:
    adapter.reset_state()
    out = [adapter.predict(f) for f in frames]
    return np.stack([o.scores for o in out if isinstance(o, Prediction)])


def test_the_model_is_the_reference_models_matched_filter_integrated() -> None:
    """One frame: softmax(sign * W x / temperature), W the codebook's signatures (background negated)."""
    frame = _frames(0, 1)[0]
    scores = _scores(LoadShedderTwinAdapter(_options()), [frame])[0]
    from streambench.adapters.codebook import class_signature

    w = np.stack([class_signature(c, 8, "audio") for c in range(3)])
    logits = w @ frame.inputs["audio"]
    expected = np.exp(logits / 0.1 - (logits / 0.1).max())
    np.testing.assert_allclose(scores, expected / expected.sum(), rtol=1e-5)


def test_the_shedder_answers_background_when_behind_and_as_its_twin_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frames = _frames(1, 6)
    twin = _scores(LoadShedderTwinAdapter(_options()), frames)
    clock = iter([0, 40_000_000, 80_000_000, 200_000_000, 240_000_000, 500_000_000])  # wall ns per frame
    monkeypatch.setattr(capacity_cheats.time, "perf_counter_ns", lambda: next(clock, 0))
    monkeypatch.setattr(capacity_cheats, "busy_wait_ms", lambda ms: None)
    shedder = LoadShedderAdapter(_options(behind_ms=5))
    shed = _scores(shedder, frames)
    # frames arrive every 40 ms; served at 0, 40, 80 ms (on time), then 200 ms for frame 3 (due 120: behind)
    np.testing.assert_allclose(shed[:3], twin[:3], rtol=1e-6)
    assert (shed[3] == np.array([1, 0, 0], dtype=np.float32)).all() and shedder.shed_frames >= 1
    twin_again = LoadShedderTwinAdapter(_options(behind_ms=5))
    clock = iter([0, 40_000_000, 80_000_000, 200_000_000, 240_000_000, 500_000_000])
    np.testing.assert_allclose(_scores(twin_again, frames), twin, rtol=1e-6)
    assert twin_again.shed_frames == 0


def test_the_cache_answers_a_seen_payload_from_the_cache_and_the_twin_never() -> None:
    frames = _frames(2, 5)
    before = HITS[0]
    cache = SessionCacheAdapter(_options())
    first = _scores(cache, frames)
    assert HITS[0] == before  # new payloads: all misses
    again = _scores(SessionCacheAdapter(_options()), frames)  # another instance, another session
    assert HITS[0] == before + 5
    np.testing.assert_allclose(again, first, rtol=1e-6)  # right answers: only the cost fell
    twin = SessionCacheTwinAdapter(_options())
    np.testing.assert_allclose(_scores(twin, frames), first, rtol=1e-6)
    assert HITS[0] == before + 5
