"""What every protocol shares: the plan it hands the harness and the executor it is handed.

A protocol is pure (``../shared/DESIGN.md``, "Layout"): it decides *what* to run (a :class:`Plan`)
and scores the recordings it gets back. The harness implements :class:`Executor`, the only thing that
calls a model; a protocol's ``run(config, executor)`` never sees the model itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from streambench.protocols.recording import StreamRecording, StreamRole


class PlannedStream(BaseModel):
    """One stream of a plan and the part it plays (scored ``test`` or threshold-fitting ``validation``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    stream_id: str
    role: StreamRole


class Plan(BaseModel):
    """The streams to run, in order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    streams: tuple[PlannedStream, ...]

    def ids(self, role: StreamRole) -> list[str]:
        return [s.stream_id for s in self.streams if s.role == role]


class Executor(Protocol):
    """Runs a plan through the engine and returns one recording per planned stream, in plan order."""

    def execute(self, plan: Plan) -> Sequence[StreamRecording]: ...
