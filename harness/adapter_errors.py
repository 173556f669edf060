"""What goes wrong in or with an adapter, named with the adapter, the stream and the frame.

Raised by the engine (harness/engine.py); the CLI reports them without a traceback.
"""

from __future__ import annotations

__all__ = ["AdapterCallError", "AdapterError", "AdapterOutputError"]


class AdapterError(Exception):
    """Something went wrong in or with an adapter; names the adapter, the stream and the frame."""

    def __init__(self, adapter: str, stream_id: str, frame: int, problem: str) -> None:
        super().__init__(f"adapter {adapter!r}, stream {stream_id!r}, frame {frame}: {problem}")
        self.adapter = adapter
        self.stream_id = stream_id
        self.frame = frame
        self.problem = problem


class AdapterOutputError(AdapterError, ValueError):
    """An adapter broke the data contract (its output failed validation)."""


class AdapterCallError(AdapterError, RuntimeError):
    """An adapter's ``predict()`` or ``reset_state()`` raised; the original exception is the cause."""
