"""How long the ``streambench`` command takes before it does anything (issue 17: 4–10 s before, because
``import streambench.harness.cli`` imported torch and scipy.stats).

Opt-in: ``python -m pytest benchmarks -s -k startup``. Each round starts, in a random order, a bare
interpreter (``python -c pass``), ``streambench --help``, ``streambench runs`` (on an empty results
directory) and ``streambench adapters``, each a fresh process from the installed entry point; the medians
over the rounds and each command's cost beyond the bare interpreter are printed. The target: ≤ 0.5 s
beyond the interpreter for each command (the issue's "≤ 0.5 s for --help, runs, show, adapters").
Interleaving the commands in one run means a busy machine slows them alike.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.benchmark

ROUNDS = 15
TARGET_S = 0.5


def _seconds(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - started


def test_cli_startup_against_a_bare_interpreter(tmp_path: Path) -> None:
    entry = str(Path(sys.executable).parent / "streambench")
    (tmp_path / "results").mkdir()
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "streambench --help": [entry, "--help"],
        "streambench runs": [entry, "runs", "--results-dir", str(tmp_path / "results")],
        "streambench adapters": [entry, "adapters"],
    }
    for argv in commands.values():  # page caches warm, .pyc written: what a user's second call sees
        _seconds(argv, tmp_path)
    times: dict[str, list[float]] = {name: [] for name in commands}
    rng = random.Random(0)
    for _ in range(ROUNDS):
        order = list(commands)
        rng.shuffle(order)
        for name in order:
            times[name].append(_seconds(commands[name], tmp_path))
    bare = statistics.median(times["python -c pass"])
    print(f"\nCLI start-up, median of {ROUNDS} interleaved rounds (fresh process each):")
    over = {}
    for name, values in times.items():
        median = statistics.median(values)
        over[name] = median - bare
        print(f"  {name:<22} {median * 1e3:7.0f} ms   ({over[name] * 1e3:+6.0f} ms beyond the interpreter)")
    slow = {name: extra for name, extra in over.items() if extra > TARGET_S}
    assert not slow, f"beyond the interpreter, above {TARGET_S} s: {slow}"
