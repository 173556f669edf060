"""The run's event log: every finished stream (or failure) is on disk before the next stream starts.

``results/<run_id>/events.jsonl``, one JSON object per line, appended, flushed and ``fsync``-ed per
event (DESIGN.md "Results"), so a run that is interrupted or killed
loses at most the stream it was in. Events:

* ``start``: the run id, the :class:`~streambench.harness.runner.RunConfig` (as JSON) and the planned streams
  with
  their roles, written once when the run directory is created; ``--resume`` reads the configuration
  back from it, so a resumed run has the same configuration and seeds (the data set's seed included,
  a secret one too: the configuration holds the seed drawn for the run, ``dataset_seed_kind`` says so).
* ``stream``: one finished stream: its id, role, and its recording as a base64 ``.npz`` of
  :func:`streambench.protocols.recording.to_arrays` (exact bytes, read back with ``allow_pickle=False``).
* ``failure``: a stream the adapter failed on: stream, frame, the error type and message, traceback.
* ``session``: a new session of the same run began (the first run, or a resume), with the streams
  already done.

One process writes a run directory: :class:`RunLock` holds ``<run_dir>/.lock`` (an exclusive ``flock``)
for a run and for each resume, so a second writer fails at once instead of appending the same streams
again; :func:`read_events` counts a stream logged twice (a log written before the lock) once.

:func:`read_events` tolerates a torn last line (the process died mid-write: the line has no newline
and is reported, not read); any other malformed line is an error naming the file and line.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import io
import json
import os
import socket
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from streambench.harness.io.store_layout import check_run_dir
from streambench.protocols.recording import StreamRecording, StreamRole, from_arrays, to_arrays

__all__ = [
    "EVENTS_FILE",
    "LOCK_FILE",
    "EventLog",
    "EventLogError",
    "FailureEvent",
    "RunLock",
    "RunLockedError",
    "RunLog",
    "SessionEvent",
    "StartEvent",
    "StreamEvent",
    "decode_recording",
    "drop_torn_tail",
    "encode_recording",
    "read_events",
]

EVENTS_FILE = "events.jsonl"
LOCK_FILE = ".lock"


class EventLogError(ValueError):
    """The event log could not be read; names the file and line."""


class StartEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["start"] = "start"
    run_id: str
    created_at: datetime
    config: dict[str, Any] = Field(description="the RunConfig, as JSON")
    plan: list[tuple[str, StreamRole]] = Field(description="(stream id, role) in the order they run")
    fingerprint: str | None = Field(None, description="the environment fingerprint the run started in")
    data_hash: str | None = Field(None, description="the hash of the data it started on")
    dataset_seed_kind: Literal["secret", "public"] | None = Field(
        None,
        description="secret: config.data.seed was drawn for this run (a resume reuses it, and it stays "
        "secret); public: the configuration gave it; null: no seed, or a log written before seed kinds",
    )


class SessionEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["session"] = "session"
    started_at: datetime
    resumed: bool
    streams_done: int
    isolated: bool = False


class StreamEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["stream"] = "stream"
    stream_id: str
    role: StreamRole
    recording_npz_b64: str


class FailureEvent(BaseModel):
    """A stream the adapter failed on (the rest of that stream is skipped)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["failure"] = "failure"
    stream_id: str
    role: StreamRole = "test"
    frame: int | None = Field(description="the frame it failed at; None when before the first frame")
    error_type: str
    message: str
    traceback: str = ""


Event = Annotated[StartEvent | SessionEvent | StreamEvent | FailureEvent, Field(discriminator="kind")]
_EVENT: TypeAdapter[Event] = TypeAdapter(Event)


def encode_recording(recording: StreamRecording) -> str:
    buffer = io.BytesIO()
    np.savez(buffer, **to_arrays([recording]))  # type: ignore[arg-type]
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def decode_recording(data: str) -> StreamRecording:
    with np.load(io.BytesIO(base64.b64decode(data, validate=True)), allow_pickle=False) as arrays:
        (recording,) = from_arrays(arrays)
    return recording


class EventLog:
    """Appends events to ``<run_dir>/events.jsonl``; each append is flushed and fsynced before it returns."""

    def __init__(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self.path = run_dir / EVENTS_FILE
        self._file = self.path.open("ab")

    def append(self, event: BaseModel) -> None:
        self._file.write(event.model_dump_json().encode() + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RunLockedError(ValueError):
    """Another process holds the run directory (it is running or resuming that run); names the holder."""


class RunLock:
    """One process writes a run directory: an exclusive ``flock`` on ``<run_dir>/.lock``, held
    from before the run checks the directory until its result is written. A second writer (another
    ``streambench run --run-id`` of the same id, a second ``--resume``) fails at once with
    :class:`RunLockedError` naming the holder (pid, host, start time, command), which the lock file
    records. The kernel releases the lock when the holder's process ends, however it ends (a ``kill -9``
    leaves no stale lock). The lock file stays, unless the directory holds nothing else (a run that
    failed before its first event leaves no directory behind, as before). A run directory that is a
    symbolic link is refused before anything is written."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> RunLock:
        check_run_dir(self.run_dir)  # a symbolic link would send the run outside the store
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise RunLockedError(
                f"{self.run_dir}: the run directory is held by another streambench process ({holder}); "
                "two writers would mix their streams in one run. Wait for it to end, or use another "
                "--run-id"
            ) from None
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": " ".join(sys.argv),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):  # nothing else in it: the run never began; leave no trace
            if [p.name for p in self.run_dir.iterdir()] == [LOCK_FILE]:
                self.path.unlink()
                self.run_dir.rmdir()
        os.close(fd)  # releases the lock

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(fd: int) -> str:
    """The holder recorded in a lock file, as words ("unknown" while it has not written it yet)."""
    try:
        record = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {record['pid']} on {record['host']}, started {record['started_at']}: {record['command']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown: it is just starting"


def drop_torn_tail(run_dir: Path) -> int:
    """Cut a last line that was cut off mid-write (no newline) so appended events start on a line of
    their own; returns the bytes dropped. Everything before the last newline is kept as it is."""
    path = run_dir / EVENTS_FILE
    with path.open("r+b") as handle:
        data = handle.read()
        keep = data.rfind(b"\n") + 1
        if keep == len(data):
            return 0
        handle.truncate(keep)
        handle.flush()
        os.fsync(handle.fileno())
    return len(data) - keep


class RunLog(BaseModel):
    """What an event log says: the start record, the finished streams (in order), the failures."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    start: StartEvent
    sessions: list[SessionEvent]
    recordings: list[Any] = Field(description="StreamRecording of every finished stream, in order")
    failures: list[FailureEvent]
    torn_tail: bool = Field(description="the last line was cut off mid-write (ignored)")
    duplicates: int = Field(0, description="events of a stream logged before (ignored: a stream counts once)")

    def done(self) -> set[str]:
        """Streams that need no rerun: finished or failed."""
        return {r.stream_id for r in self.recordings} | {f.stream_id for f in self.failures}


def read_events(path: Path) -> RunLog:
    """Read an event log (or the run directory holding one)."""
    if path.is_dir():
        path = path / EVENTS_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise EventLogError(f"{path}: no such event log (was the run started by this streambench?)") from None
    lines = raw.split(b"\n")
    torn = lines[-1] != b""
    body: Sequence[bytes] = lines[:-1]
    start: StartEvent | None = None
    sessions: list[SessionEvent] = []
    recordings: list[StreamRecording] = []
    failures: list[FailureEvent] = []
    seen: set[str] = set()
    duplicates = 0
    for number, line in enumerate(body, start=1):
        try:
            event = _EVENT.validate_python(json.loads(line))
            if isinstance(event, StreamEvent | FailureEvent) and event.stream_id in seen:
                duplicates += 1  # two writers before the lock existed: a stream counts once, as first logged
                continue
            if isinstance(event, StreamEvent):
                recordings.append(decode_recording(event.recording_npz_b64))
                seen.add(event.stream_id)
        except Exception as exc:  # a parse boundary: JSON, the schema, base64, the npz inside (zip, zlib)
            problem = f"{type(exc).__name__}: {exc}"
            raise EventLogError(f"{path}: line {number}: not a valid event ({problem})") from None
        if isinstance(event, StartEvent):
            if start is not None:
                raise EventLogError(f"{path}: line {number}: a second start event")
            start = event
        elif start is None:
            raise EventLogError(f"{path}: line {number}: an event before the start event")
        elif isinstance(event, SessionEvent):
            sessions.append(event)
        elif isinstance(event, FailureEvent):
            failures.append(event)
            seen.add(event.stream_id)
    if start is None:
        raise EventLogError(f"{path}: no start event")
    return RunLog(
        start=start,
        sessions=sessions,
        recordings=recordings,
        failures=failures,
        torn_tail=torn,
        duplicates=duplicates,
    )
