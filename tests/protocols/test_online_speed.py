"""The speed side's served-model figures (protocols/online_speed.py ``served_figures``) on hand-computed
cases: over the frames whose reply carried the server's figure, end to end, model-only and their
difference per frame; frames the pacer dropped are not measurements."""

from __future__ import annotations

import numpy as np
import pytest

from streambench.protocols.online_speed import served_figures
from streambench.protocols.recording import StreamRecording

MS = 1_000_000


def _recording(
    latency_ms: list[float], server_ms: list[float] | None, paced: list[int] | None = None
) -> StreamRecording:
    n = len(latency_ms)
    return StreamRecording(
        stream_id="s",
        role="test",
        t0_ns=0,
        segment_length_ns=None,
        frame_times_ns=np.arange(1, n + 1, dtype=np.int64) * 40 * MS,
        labels=np.zeros((n, 2), dtype=bool),
        latency_ns=(np.asarray(latency_ms) * MS).astype(np.int64),
        emitted_at=np.arange(n, dtype=np.int64),
        refers_to=np.arange(n, dtype=np.int64),
        scores=np.zeros((n, 2), dtype=np.float32),
        server_ns=None
        if server_ms is None
        else np.where(np.asarray(server_ms) < 0, -1, np.asarray(server_ms) * MS).astype(np.int64),
        paced_start_ns=None if paced is None else np.asarray(paced, dtype=np.int64),
    )


def test_over_the_frames_with_a_figure_end_to_end_model_only_and_the_overhead() -> None:
    # frames with a figure: (5, 2), (9, 4), (8, 7), (6, 1): overheads 3, 5, 1, 5 ms
    recs = [_recording([5, 7, 9], [2, -1, 4]), _recording([8, 6], [7, 1])]
    served = served_figures(recs)
    assert served is not None
    assert (served.frames, served.frames_with_figure) == (5, 4)
    assert served.end_to_end is not None and served.model_only is not None
    assert served.end_to_end.mean_ms == pytest.approx((5 + 9 + 8 + 6) / 4)
    assert served.model_only.p50_ms == pytest.approx(3.0)  # median of 1, 2, 4, 7
    assert served.overhead_mean_ms == pytest.approx(3.5)
    assert served.overhead_p50_ms == pytest.approx(4.0)  # median of 1, 3, 5, 5
    assert served.overhead_p95_ms == pytest.approx(5.0)
    assert served.model_above_end_to_end == 0


def test_a_server_figure_above_the_round_trip_is_counted() -> None:
    served = served_figures([_recording([5, 3], [2, 4])])
    assert served is not None and served.model_above_end_to_end == 1
    assert served.overhead_mean_ms == pytest.approx((3 - 1) / 2)


def test_a_dropped_frame_is_no_measurement_and_no_figure_no_model_only() -> None:
    served = served_figures([_recording([5, 0, 6], [1, -1, 2], paced=[0, -1, 80 * MS])])
    assert served is not None and (served.frames, served.frames_with_figure) == (2, 2)
    none = served_figures([_recording([5, 6], [-1, -1])])
    assert (
        none is not None and none.model_only is None and none.reason is not None and "model_ns" in none.reason
    )
    assert served_figures([_recording([5, 6], None)]) is None  # not a served model
