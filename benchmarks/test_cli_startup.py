"""How long the ``streambench`` command takes before it does anything, against an interpreter that imports
numpy (the floor every command of a numpy harness pays; ``python -c pass`` is printed beside it).

Opt-in: ``python -m pytest benchmarks -s -k startup``. A run (2 synthetic streams of 1 s) is written first,
so that ``runs`` lists an indexed run and ``show`` has one to show. Each round then starts, in a random
order, ``python -c pass``, ``python -c "import numpy"``, ``streambench --help``, ``streambench runs``,
``streambench show <run>``, ``streambench adapters`` and ``streambench data``, each a fresh process from the
installed entry point; the medians over the rounds and each command's cost beyond ``import numpy`` are
printed. The target: ≤ 0.5 s beyond ``import numpy`` for each command. Interleaving the commands in one
run means a busy machine slows them alike. Which modules a command imports (no torch, no engine) is a
test of the default tier: tests/harness/cli/test_startup_imports.py.
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
FLOOR = 'python -c "import numpy"'


def _seconds(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - started


def test_cli_startup_against_an_interpreter_that_imports_numpy(tmp_path: Path) -> None:
    entry = str(Path(sys.executable).parent / "streambench")
    results = tmp_path / "results"
    run = ["run", "-n", "2", "--duration", "1", "--warmup-frames", "10", "--seed", "0", "--run-id", "bench"]
    done = subprocess.run(
        [entry, *run, "--output-dir", str(results)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )  # exit 1 on a loaded machine at times (an audit that failed there): the run is written all the same
    assert (results / "bench" / "result.json").is_file(), done.stdout + done.stderr
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        FLOOR: [sys.executable, "-c", "import numpy"],
        "streambench --help": [entry, "--help"],
        "streambench runs": [entry, "runs", "--results-dir", str(results)],
        "streambench show bench": [entry, "show", "bench", "--results-dir", str(results)],
        "streambench adapters": [entry, "adapters"],
        "streambench data": [entry, "data"],
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
    floor = statistics.median(times[FLOOR])
    print(f"\nCLI start-up, median of {ROUNDS} interleaved rounds (fresh process each):")
    over = {}
    for name, values in times.items():
        median = statistics.median(values)
        over[name] = median - floor
        print(f"  {name:<28} {median * 1e3:7.0f} ms   ({over[name] * 1e3:+6.0f} ms beyond import numpy)")
    slow = {name: round(extra, 3) for name, extra in over.items() if extra > TARGET_S}
    assert not slow, f"beyond {FLOOR}, above {TARGET_S} s: {slow}"
