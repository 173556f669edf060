"""The causality checks' stream variants (harness/runs/causality/checks.py): the caching control
(``nudge``) differs from the stream in every numeric payload."""

from __future__ import annotations

import numpy as np

from streambench.adapters.contract import Frame, Stream
from streambench.harness.runs.causality.checks import nudge
from tests.protocols.test_causality import CLASSES


def test_the_caching_control_differs_from_the_stream_in_every_numeric_payload() -> None:
    """The audit is blind if the control has the stream's bytes (a byte-keyed cache would hit it too):
    every float payload moves by exactly ``ulps`` units in the last place in its own dtype, every integer
    payload by ``ulps`` (down at the top of its range), shapes and dtypes kept."""
    payloads = {
        "f32": np.array([0.0, 1.0, -2.5, 3e38], dtype=np.float32),
        "f64": np.array([1e-300, 1.0], dtype=np.float64),
        "i16": np.array([0, -3, np.iinfo(np.int16).max], dtype=np.int16),
    }
    frames = [Frame(0, 0.04, payloads)]
    stream = Stream(
        stream_id="s",
        classes=CLASSES,
        modalities=tuple(payloads),
        frame_times=np.array([0.04]),
        labels=np.zeros((1, len(CLASSES)), dtype=bool),
        frame_source=lambda: frames,
    )
    for ulps in (1, 3):
        moved = next(iter(nudge(stream, ulps).frames())).inputs
        for name, original in payloads.items():
            got = moved[name]
            assert got.dtype == original.dtype and got.shape == original.shape, name
            assert (got != original).all(), name
            if original.dtype.kind == "f":
                expected = original
                for _ in range(ulps):
                    expected = np.nextafter(expected, np.array(np.inf, dtype=original.dtype))
                assert np.array_equal(got, expected), name
        assert (moved["i16"] == np.array([ulps, -3 + ulps, np.iinfo(np.int16).max - ulps])).all()
