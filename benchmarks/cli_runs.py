"""One ``streambench`` command run the way a user runs it, for the benchmarks that count verdicts over many
runs (test_trust_under_hogs.py, test_capacity_twins_under_hogs.py): the command line in a fresh interpreter,
its result file read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["run_streambench"]


def run_streambench(
    workdir: Path, argv: list[str], result_file: Path, pythonpath: str | None = None, timeout_s: float = 600
) -> dict[str, Any]:
    """``streambench ARGV`` in ``workdir`` (``pythonpath``: the harness of another checkout, else this
    environment's), and the JSON of ``result_file``; AssertionError with the exit code and stderr's end
    when the command wrote none."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    command = [sys.executable, "-c", "from streambench.harness.cli import main; main()", *argv]
    done = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if not result_file.exists():
        shown = " ".join(argv[:6])
        raise AssertionError(f"{shown}: no result (exit {done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(result_file.read_text())
    return result
