"""Test helpers of the sweep tests: a small sweep file, and adapters that fail once, then behave.

Each once-failing adapter records its first attempt in a marker file (an option), so the retry — in this
process, a fresh worker process or another Ray worker — finds the marker and runs honestly.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from streambench.adapters.contract import Frame, PredictOutput
from streambench.adapters.faulty import EXIT_CODE, FaultyAdapter, FaultyOptions

EXIT_AT_FRAME = 5
"""The frame of the first scored stream at which :class:`ExitOnceAdapter` kills its process."""


class OnceOptions(FaultyOptions):
    marker: str = ""


def _first_time(marker: str) -> bool:
    """True exactly once per marker path: the file is created atomically (O_EXCL)."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


class ExitOnceAdapter(FaultyAdapter):
    """Ends its own process (``os._exit``) mid-run on the first attempt: a worker lost mid-run."""

    Options = OnceOptions
    NAME = "exit-once"

    def predict(self, frame: Frame) -> PredictOutput:
        options = self.options
        assert isinstance(options, OnceOptions)
        if self.streams_seen >= 2 and frame.index == EXIT_AT_FRAME and _first_time(options.marker):
            os._exit(EXIT_CODE)  # no clean-up, no exception: the process is gone
        return super().predict(frame)


class RaiseOnceAdapter(FaultyAdapter):
    """Raises when built on the first attempt (a run that fails as a whole, not one stream)."""

    Options = OnceOptions
    NAME = "raise-once"

    def __init__(self, options: OnceOptions | None = None) -> None:
        super().__init__(options)
        assert isinstance(self.options, OnceOptions)
        if _first_time(self.options.marker):
            raise RuntimeError("planted failure of the first attempt")


class AlwaysBrokenAdapter(FaultyAdapter):
    """Raises whenever it is built: a run that fails every attempt (the sweep file itself is valid)."""

    NAME = "always-broken"

    def __init__(self, options: FaultyOptions | None = None) -> None:
        raise RuntimeError("AlwaysBrokenAdapter: planted failure of every attempt")


SMALL_RUN: dict[str, Any] = {
    "data": {"kind": "synthetic", "num_streams": 3, "duration_s": 5.0, "seed": 0},
    "engine": {"warmup_frames": 5},
}


def small_sweep(output_dir: Path, **changes: Any) -> dict[str, Any]:
    """2 adapters × 2 protocols (online, robustness) × 3 perturbation points, as a sweep-file tree."""
    tree: dict[str, Any] = {
        "sweep": {"name": "small", "output_dir": str(output_dir), "retries": 2, "baseline": "reference"},
        "run": SMALL_RUN,
        "adapters": [{"adapter": "reference"}, {"adapter": "faulty"}],
        "protocols": {
            "online": {},
            "robustness": {
                "points": [
                    {"axis": "missing", "value": 30},
                    {"axis": "audio_delay", "value": 100},
                    {"axis": "jitter", "value": 20},
                ]
            },
        },
    }
    tree.update(changes)
    return tree
