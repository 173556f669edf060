"""The run's event log (harness/execution/event_log.py): exact round trip of recordings, a torn last line
tolerated, any other bad input an EventLogError naming the file and line."""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streambench.harness.execution.event_log import (
    EVENTS_FILE,
    EventLog,
    EventLogError,
    FailureEvent,
    SessionEvent,
    StartEvent,
    StreamEvent,
    decode_recording,
    encode_recording,
    read_events,
)
from streambench.protocols.recording import StreamRecording


def recording(stream_id: str = "s", n: int = 6, classes: int = 3) -> StreamRecording:
    rng = np.random.default_rng(len(stream_id))
    return StreamRecording(
        stream_id=stream_id,
        role="test",
        t0_ns=0,
        segment_length_ns=1_000_000_000,
        frame_times_ns=np.arange(1, n + 1, dtype=np.int64) * 40_000_000,
        labels=rng.random((n, classes)) > 0.5,
        latency_ns=rng.integers(1, 10**6, n),
        emitted_at=np.arange(n, dtype=np.int64),
        refers_to=np.arange(n, dtype=np.int64),
        scores=rng.random((n, classes)).astype(np.float32),
        stage_ns={"fusion": 123},
    )


def write_log(run_dir: Path) -> list[StreamRecording]:
    recs = [recording("a"), recording("bb")]
    with EventLog(run_dir) as log:
        log.append(
            StartEvent(run_id="r", created_at=datetime.now(timezone.utc), config={}, plan=[("a", "test")])
        )
        log.append(SessionEvent(started_at=datetime.now(timezone.utc), resumed=False, streams_done=0))
        for rec in recs:
            encoded = encode_recording(rec)
            log.append(StreamEvent(stream_id=rec.stream_id, role="test", recording_npz_b64=encoded))
        log.append(FailureEvent(stream_id="c", frame=3, error_type="AdapterCallError", message="boom"))
    return recs


def test_round_trip_is_exact(tmp_path: Path) -> None:
    recs = write_log(tmp_path)
    log = read_events(tmp_path)
    assert not log.torn_tail and log.start.run_id == "r" and len(log.sessions) == 1
    assert log.done() == {"a", "bb", "c"}
    for got, want in zip(log.recordings, recs, strict=True):
        for name in ("scores", "labels", "latency_ns", "frame_times_ns", "refers_to"):
            assert getattr(got, name).tobytes() == getattr(want, name).tobytes()
        assert got.stage_ns == want.stage_ns and got.stream_id == want.stream_id
    assert decode_recording(encode_recording(recs[0])).scores.dtype == np.float32


def test_a_torn_last_line_is_ignored_and_reported(tmp_path: Path) -> None:
    write_log(tmp_path)
    path = tmp_path / EVENTS_FILE
    path.write_bytes(path.read_bytes() + b'{"kind": "stream", "stream_id": "d", "rec')  # died mid-write
    log = read_events(tmp_path)
    assert log.torn_tail and log.done() == {"a", "bb", "c"}


def test_bad_lines_name_the_file_and_line(tmp_path: Path) -> None:
    write_log(tmp_path)
    path = tmp_path / EVENTS_FILE
    lines = path.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"recording_npz_b64":"', b'"recording_npz_b64":"AAAA')
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(EventLogError, match=r"events\.jsonl: line 3: not a valid event"):
        read_events(tmp_path)
    path.write_bytes(
        b'{"kind": "session", "started_at": "2026-01-01T00:00:00Z", "resumed": false, "streams_done": 0}\n'
    )
    with pytest.raises(EventLogError, match="line 1: an event before the start event"):
        read_events(tmp_path)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 10_000))
def test_fuzzed_logs_parse_or_raise_event_log_error(noise: bytes, cut: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp)
        write_log(run_dir)
        path = run_dir / EVENTS_FILE
        good = path.read_bytes()
        for data in (noise, good[: cut % (len(good) + 1)], good[:cut] + noise + good[cut:]):
            path.write_bytes(data)
            try:
                read_events(run_dir)
            except EventLogError as exc:
                assert str(exc).startswith(str(path))
