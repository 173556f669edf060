"""The rounding cache offender (adapters/offenders/rounding_cache.py; issue 24, item 4)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from streambench.adapters.contract import Adapter, Frame
from streambench.adapters.offenders import (
    CachingAdapter,
    CachingOptions,
)
from streambench.adapters.offenders.rounding_cache import RoundingCacheAdapter, RoundingCacheOptions
from streambench.adapters.registry import create_adapter


def test_rounding_cache_forgives_a_few_ulps_where_the_exact_cache_does_not() -> None:
    """The offender of issue 24, item 4: its key is the payload rounded to ``decimals`` places, so a copy
    moved by a few ulps is a hit (for the exact CachingAdapter a miss); a change above the rounding is a
    miss; the cache survives resets, hands out copies, and the adapter is registered."""
    rng = np.random.default_rng(0)
    values = [rng.standard_normal(8).astype(np.float32) for _ in range(20)]
    stream = [Frame(index=i, t=0.1 * (i + 1), inputs={"a": v, "b": None}) for i, v in enumerate(values)]

    def moved(ulps: int) -> list[Frame]:
        out = []
        for f in stream:
            payload = f.inputs["a"]
            for _ in range(ulps):
                payload = np.nextafter(payload, np.float32(np.inf))
            out.append(Frame(index=f.index, t=f.t, inputs={"a": payload, "b": None}))
        return out

    rounding = RoundingCacheAdapter(RoundingCacheOptions(miss_cost_ms=0.0))
    exact = CachingAdapter(CachingOptions(miss_cost_ms=0.0))
    for adapter in (rounding, exact):
        first = [adapter.predict(f).scores for f in stream]
        adapter.reset_state()
        again = [adapter.predict(f).scores for f in moved(3)]
        for a, b in zip(first, again, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-3)
    assert (rounding.misses, rounding.hits) == (20, 20)  # a few ulps away: served from the cache
    assert (exact.misses, exact.hits) == (40, 0)
    # values 0.01 apart are other keys at 3 decimals, and -0.0 is 0.0
    shifted = Frame(index=0, t=0.1, inputs={"a": values[0] + np.float32(0.01), "b": None})
    rounding.predict(shifted)
    assert rounding.misses == 21
    zero = RoundingCacheAdapter(RoundingCacheOptions(miss_cost_ms=0.0, decimals=2))
    zero.predict(Frame(index=0, t=0.1, inputs={"a": np.array([0.001], dtype=np.float32)}))
    zero.predict(Frame(index=0, t=0.1, inputs={"a": np.array([-0.001], dtype=np.float32)}))
    assert (zero.misses, zero.hits) == (1, 1)
    with pytest.raises(ValidationError):
        RoundingCacheOptions(decimals=-1)
    registered = create_adapter("offender-rounding-cache", data_bound={"classes": ("bg", "x")})
    assert isinstance(registered, RoundingCacheAdapter) and registered.info.name == "offender-rounding-cache"
    assert isinstance(registered, Adapter)
