"""What every protocol shares: the plan it hands the harness.

A protocol is pure (``../shared/DESIGN.md``, "Layout"): it decides *what* to run (a :class:`Plan`)
and scores the recordings the harness gets back; it never sees the model itself.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from streambench.protocols.recording import StreamRole


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
