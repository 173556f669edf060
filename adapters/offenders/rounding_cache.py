"""OFFENDER (caching audit): a cache that forgives small input differences.

:class:`RoundingCacheAdapter` is :class:`~streambench.adapters.offenders.CachingAdapter` with another key: the
payloads rounded to ``decimals`` places (3 by default) before hashing, so a payload a few ulps away from
one already seen is a hit. A control that differs from the repeated stream by one ulp is therefore served
from the cache as fast as the repeat, and a caching audit built on such a control passes it; the audit's
unseen control (other content, :mod:`streambench.harness.runs.causality.caching`) is a miss, and catches it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from streambench.adapters.contract import AdapterOptions
from streambench.adapters.offenders import CachingAdapter, CachingOptions

__all__ = ["RoundingCacheAdapter", "RoundingCacheOptions"]


class RoundingCacheOptions(CachingOptions):
    """Options of :class:`RoundingCacheAdapter`."""

    decimals: int = Field(
        default=3,
        ge=0,
        le=12,
        description="decimal places the payloads are rounded to before they key the cache",
    )


class RoundingCacheAdapter(CachingAdapter):
    """OFFENDER (caching audit): memoises scores per *rounded* payload, across streams and resets.

    Like :class:`~streambench.adapters.offenders.CachingAdapter` (a miss busy-waits ``miss_cost_ms``, a hit
    returns at once, ``reset_state()`` keeps the cache, ``cache_share`` keeps only a share of the keys), but
    the key hashes every numeric payload rounded to ``decimals`` places (names, dtypes and shapes included,
    ``-0`` folded into ``0``): inputs closer than about ``10**-decimals`` share a key. The scores it returns
    on a hit are those of the payload that filled the entry, within that tolerance of the right ones.
    """

    Options: ClassVar[type[AdapterOptions]] = RoundingCacheOptions
    NAME: ClassVar[str] = "offender-rounding-cache"

    def __init__(self, options: RoundingCacheOptions | None = None) -> None:
        opts = options if options is not None else RoundingCacheOptions()
        super().__init__(opts)
        self._decimals = int(opts.decimals)

    def _key(self, inputs: Mapping[str, Any]) -> bytes:  # type: ignore[override]
        digest = hashlib.blake2b(digest_size=16)
        for name in sorted(inputs):
            payload = inputs[name]
            digest.update(name.encode("utf-8") + b"\0")
            if payload is None:
                digest.update(b"<none>")
                continue
            array = np.ascontiguousarray(payload)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            if array.dtype.kind in "fc":
                wide = array.astype(np.complex128 if array.dtype.kind == "c" else np.float64)
                array = np.round(wide, self._decimals) + 0.0  # + 0.0: -0.0 becomes 0.0
            digest.update(array.tobytes())
        return digest.digest()
