"""What a capacity search records besides its curve (protocols/capacity_score.py's ``CapacityScore``): the
adapter failure that ended it, as ``run`` records one (harness/results/files.py ``FailureRecord``: the
stream, the frame, the error, the traceback), and what bounded the figure (protocols/capacity_load.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["CapacityFailure", "Interference"]


class CapacityFailure(BaseModel):
    """An adapter failure that ended the search, as ``run`` records one (the stream, the frame, the error,
    the worker's traceback); the points decided before it are kept."""

    streams: int = Field(description="N of the point it happened in")
    phase: Literal["point", "unloaded replay", "between points"]
    kind: Literal["error", "died", "timeout"]
    stream: int | None = Field(description="the live stream (0-based), None: no frame concerned")
    source: str | None = Field(description="the data-set stream its session played")
    frame: int | None = Field(description="the frame's index in that stream")
    batch: list[str] = Field(default_factory=list, description="every frame of the batch concerned")
    worker: int | None = Field(None, description="the serving worker (0-based), its pid in the message")
    error_type: str
    message: str
    traceback: str = ""

    def where(self) -> str:
        """``N = 4, stream 2 (syn-0003) frame 17`` (or the phase when no frame is concerned)."""
        at = f"N = {self.streams}"
        if self.stream is not None:
            at += f", stream {self.stream} ({self.source}) frame {self.frame}"
            if len(self.batch) > 1:
                at += f" (a batch of {len(self.batch)})"
        return at if self.phase == "point" else f"{at}, {self.phase}"


class Interference(BaseModel):
    """The machine's load during the search (as ``streambench selftest`` judges it): the busy-wait probe
    before and after the search, and what bounded the figure."""

    probe: list[str] = Field(default_factory=list, description="the 1 ms busy-wait probe's verdicts")
    bound_by: Literal["model", "machine load", "undecided"] | None = Field(
        None, description="what bounded the capacity: the model (its workers saturated) or the machine's load"
    )
    reason: str | None = None
