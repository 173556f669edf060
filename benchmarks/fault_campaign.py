"""A fault campaign against streambench, the way outside testers ran one: scenarios the project's tests do
not plant, each run the way a user reaches it, each outcome classed automatically.

Opt-in, and not a test module (pytest does not collect it). Run it from the checkout, its virtual
environment active (the machine's other jobs make it slow: 20-40 minutes on 2 shared cores)::

    python benchmarks/fault_campaign.py                      # every scenario; the tally at the end
    python benchmarks/fault_campaign.py --list               # the scenarios, by area
    python benchmarks/fault_campaign.py -k capacity_ -k ab_  # those whose name contains either string
    python benchmarks/fault_campaign.py --rerun OUT/outcomes.jsonl   # again, those that did not survive
    python benchmarks/fault_campaign.py --tally OUT/outcomes.jsonl   # the tally of each scenario's latest
    python benchmarks/fault_campaign.py --jobs 2             # two scenarios at a time (more load: more hung)

Each scenario gets a fresh directory under ``--out`` (default ``/tmp/fault_campaign``) holding a copy of
the campaign's own misbehaving model (benchmarks/fault_campaign_models.py, as ``campaign_models.py``) and
whatever data files it needs, and runs there in a new session as one of

- ``cli``: ``streambench ...`` as a subprocess (with a wall-clock timeout);
- ``api``: ``python -c`` calling ``streambench.run`` / ``streambench.ab``, which prints what it got back
  (or the exception it caught: type and message) as one line ``CAMPAIGN {json}``;
- ``pytest``: a test file using the ``streambench_latency`` / ``streambench_ab`` fixtures, run by
  ``python -m pytest`` in a subprocess (as pytest's own ``pytester.runpytest_subprocess`` does).

Some scenarios act while it runs (a signal after a delay, SIGKILL or SIGSTOP of a worker process, the
store remounted read-only: scenarios that mount run in a private mount namespace, ``unshare -m``, and need
root or user namespaces; without them they are skipped).

The outcome classes are the outside testers': ``survived`` (a clear, recorded failure or a correct result),
``lost``  (measured data not kept), ``traceback`` (a Python traceback through streambench's own code shown
to the user, or an undocumented exception type from the Python API), ``hung`` (the timeout ended it),
``wrong`` (an exit code or a result that is wrong or unclear), ``orphan`` (a process of the run's session,
or started in its directory, left alive 5 s after the command ended), ``escape`` (the model reached what
the sandbox denies: a ``ESCAPE-SUCCEEDED`` mark in the output or files, or a file written outside the run's
directory). Checked in that order of gravity: escape, hung, orphan, traceback, then the scenario's own
checks (a lost or wrong result), then the exit code against the scenario's accepted ones.

Written: ``OUT/outcomes.jsonl`` (one line per scenario: name, area, via, outcome, why, exit code, seconds)
and ``OUT/tally.md`` (counts per outcome and per area). Each scenario's directory keeps its
``stdout.txt`` and ``stderr.txt``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fault_campaign_procs import session_processes

HERE = Path(__file__).resolve().parent
OUTCOMES = ("survived", "lost", "traceback", "hung", "wrong", "orphan", "escape")
MARK = "ESCAPE-SUCCEEDED"
OWN_CODE = ("/harness/", "/protocols/", "/adapters/", "/streambench/")
TRACEBACK = ("Traceback (most recent call last)", "─ Traceback (most recent call last) ─")


@dataclass
class Ctx:
    """What a scenario's checks read: its directory, the command's exit code and output."""

    dir: Path
    rc: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    proc: subprocess.Popen[bytes] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def out(self) -> str:
        return self.stdout + self.stderr

    def runs(self, name: str = "results") -> list[Path]:
        """The run directories the scenario's store holds, oldest first."""
        store = self.dir / name
        if not store.is_dir():
            return []
        return sorted((p for p in store.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)

    def json(self, file: str) -> dict[str, Any] | None:
        """The newest run's ``file`` parsed, or None (absent or unreadable)."""
        for run in reversed(self.runs()):
            path = run / file
            if path.is_file():
                try:
                    return json.loads(path.read_text())
                except (OSError, ValueError):
                    return None
        return None

    def api(self) -> dict[str, Any]:
        """The ``CAMPAIGN {json}`` line an ``api`` scenario printed ({} when none)."""
        for line in self.stdout.splitlines():
            if line.startswith("CAMPAIGN "):
                return json.loads(line[len("CAMPAIGN ") :])
        return {}


Check = Callable[[Ctx], "tuple[str, str] | None"]


@dataclass
class Scenario:
    name: str
    area: str
    via: str  # cli | api | pytest
    argv: list[str]
    ok: tuple[int, ...] = (0, 1)  # exit codes that are a clear outcome
    check: Check | None = None  # the scenario's own judgement: (outcome, why) or None (no objection)
    setup: Callable[[Path], None] | None = None
    during: Callable[[Ctx], None] | None = None
    timeout: float = 240.0
    needs_mount: bool = False
    note: str = ""


def python_code(code: str) -> list[str]:
    return [sys.executable, "-c", code]


# ---------------------------------------------------------------------------------------------- running


def mount_available() -> bool:
    return shutil.which("unshare") is not None and (
        subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0
    )


def harness_traceback(text: str) -> bool:
    """A Python traceback whose frames pass through streambench's own files (a model's own traceback on
    its stderr, whose frames are all its own, is the model's output)."""
    if not any(t in text for t in TRACEBACK):
        return False
    files = [line for line in text.splitlines() if 'File "' in line or ".py:" in line]
    return any(any(own in line for own in OWN_CODE) and "campaign_models" not in line for line in files)


def snapshot(directory: Path, skip: Sequence[str]) -> set[str]:
    """Every file under ``directory`` but those whose first path component is in ``skip``."""
    found = set()
    for root, dirs, files in os.walk(directory):
        rel = os.path.normpath(os.path.relpath(root, directory))
        dirs[:] = [d for d in dirs if os.path.normpath(os.path.join(rel, d)).split(os.sep)[0] not in skip]
        paths = (os.path.normpath(os.path.join(rel, f)) for f in files)
        found.update(path for path in paths if path.split(os.sep)[0] not in skip)
    return found


SKIP = ("results", "stdout.txt", "stderr.txt", "campaign_models.py", "__pycache__", ".pytest_cache",
        "out.html", "a.txt", "afile")  # fmt: skip
"""What the scenarios themselves write: the store, their output, the files a command is told to write."""


def classify(
    sc: Scenario, ctx: Ctx, timed_out: bool, left: dict[int, str], written: set[str]
) -> tuple[str, str]:
    """The scenario's outcome class and why (module docstring: the order of gravity)."""
    texts = [ctx.out]
    for run in ctx.runs():
        for path in run.glob("*"):
            if path.is_file() and path.suffix in (".json", ".jsonl", ".html", ".txt"):
                with contextlib.suppress(OSError):
                    texts.append(path.read_text(errors="replace"))
    if any(MARK in t for t in texts):
        line = next(x for t in texts for x in t.splitlines() if MARK in x)
        return "escape", line.strip()[:200]
    if written:
        return "escape", f"files written outside the run's directory: {sorted(written)[:5]}"
    if timed_out:
        return "hung", f"no end within {sc.timeout:.0f} s"
    if left:
        return "orphan", "; ".join(f"pid {p}: {c}" for p, c in left.items())[:300]
    if harness_traceback(ctx.out):
        start = max(ctx.out.rfind(t) for t in TRACEBACK)
        tail = [x for x in ctx.out[start:].splitlines() if x.strip()]
        return "traceback", " | ".join(tail[-2:])[:300]
    if sc.check is not None:  # the scenario's own judgement; ("survived", why) accepts any exit code
        judged = sc.check(ctx)
        if judged is not None:
            return judged
    if ctx.rc not in sc.ok:
        last = [x for x in ctx.out.splitlines() if x.strip()][-2:]
        return "wrong", f"exit {ctx.rc} (expected {'/'.join(map(str, sc.ok))}): {' | '.join(last)[:250]}"
    return "survived", f"exit {ctx.rc}"


def run_scenario(sc: Scenario, base: Path, env: dict[str, str]) -> dict[str, Any]:
    directory = base / sc.name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    shutil.copy(HERE / "fault_campaign_models.py", directory / "campaign_models.py")
    if sc.setup is not None:
        sc.setup(directory)
    before = snapshot(directory, SKIP)
    ctx = Ctx(dir=directory)
    argv = [a.replace("{dir}", str(directory)) for a in sc.argv]
    with open(directory / "stdout.txt", "wb") as out, open(directory / "stderr.txt", "wb") as err:
        start = time.monotonic()
        ctx.proc = subprocess.Popen(
            argv, cwd=directory, stdout=out, stderr=err, env=env, start_new_session=True
        )
        helper = None
        if sc.during is not None:
            helper = threading.Thread(target=sc.during, args=(ctx,), daemon=True)
            helper.start()
        timed_out = False
        try:
            ctx.rc = ctx.proc.wait(timeout=sc.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(OSError):
                os.killpg(ctx.proc.pid, signal.SIGKILL)
            ctx.rc = ctx.proc.wait()
        ctx.seconds = time.monotonic() - start
        if helper is not None:
            helper.join(timeout=5)
    ctx.stdout = (directory / "stdout.txt").read_text(errors="replace")
    ctx.stderr = (directory / "stderr.txt").read_text(errors="replace")
    left = {}
    for _ in range(50):  # the workers end by the parent-death signal or their watchdog: give them 5 s
        left = session_processes(ctx.proc.pid, directory)
        if not left:
            break
        time.sleep(0.1)
    for pid in left:  # only processes this scenario started: its session, or its directory
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    written = snapshot(directory, SKIP) - before
    outcome, why = classify(sc, ctx, timed_out, left, written)
    if ctx.notes:
        why = f"{why} [{'; '.join(ctx.notes)}]"
    return {
        "name": sc.name, "area": sc.area, "via": sc.via, "outcome": outcome, "why": why,
        "exit": ctx.rc, "seconds": round(ctx.seconds, 1), "note": sc.note,
    }  # fmt: skip


def tally(rows: Sequence[dict[str, Any]]) -> str:
    areas = sorted({r["area"] for r in rows})
    counts = Counter((r["area"], r["outcome"]) for r in rows)
    head = "| area | scenarios | " + " | ".join(OUTCOMES) + " |"
    lines = [head, "|" + " --- |" * (len(OUTCOMES) + 2)]
    for area in [*areas, "all"]:
        cells = [sum(counts[(a, o)] for a in (areas if area == "all" else [area])) for o in OUTCOMES]
        lines.append(f"| {area} | {sum(cells)} | " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def all_scenarios() -> list[Scenario]:
    sys.path.insert(0, str(HERE))
    import fault_campaign_api
    import fault_campaign_data
    import fault_campaign_fixtures
    import fault_campaign_sealed
    import fault_campaign_serving
    import fault_campaign_store

    found = [
        *fault_campaign_sealed.scenarios(),
        *fault_campaign_serving.scenarios(),
        *fault_campaign_api.scenarios(),
        *fault_campaign_store.scenarios(),
        *fault_campaign_data.scenarios(),
        *fault_campaign_fixtures.scenarios(),
    ]
    names = Counter(s.name for s in found)
    assert all(n == 1 for n in names.values()), [n for n, c in names.items() if c > 1]
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/fault_campaign"))
    parser.add_argument("-k", action="append", default=[], help="run scenarios whose name contains this")
    parser.add_argument("--rerun", type=Path, help="an outcomes.jsonl: run again those that did not survive")
    parser.add_argument("--tally", type=Path, help="an outcomes.jsonl: print its tally (latest per scenario)")
    parser.add_argument("--jobs", type=int, default=1, help="scenarios run at the same time (default 1)")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.tally:
        print(tally(list(latest_rows(args.tally).values())))
        return 0
    chosen = all_scenarios()
    if args.k:
        chosen = [s for s in chosen if any(k in s.name for k in args.k)]
    if args.rerun:
        again = {name for name, row in latest_rows(args.rerun).items() if row["outcome"] != "survived"}
        chosen = [s for s in chosen if s.name in again]
    if args.list:
        for s in chosen:
            print(f"{s.area:9} {s.via:6} {s.name}  {s.note}")
        print(f"{len(chosen)} scenarios")
        return 0
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # a background job's (nohup, cmd &): the
        signal.signal(signal.SIGINT, signal.default_int_handler)  # scenarios' commands must see Ctrl-C
    args.out.mkdir(parents=True, exist_ok=True)
    rows = run_all(chosen, args.out, max(args.jobs, 1))
    ran = [r for r in rows if r["outcome"] != "skipped"]
    table = tally(ran)
    (args.out / "tally.md").write_text(table + "\n")
    print(table)
    return 0


def run_all(chosen: Sequence[Scenario], out: Path, jobs: int) -> list[dict[str, Any]]:
    """Each scenario, ``jobs`` at a time; each outcome appended to ``out/outcomes.jsonl`` and printed as it
    ends."""
    mounts = mount_available()
    env = dict(os.environ, COLUMNS="160", PYTHONUNBUFFERED="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    os.environ["PATH"] = env["PATH"]  # the setups' own commands (the store's template runs) find it too
    rows: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one(sc: Scenario) -> None:
        row = {"name": sc.name, "area": sc.area, "via": sc.via, "outcome": "skipped"}
        if sc.needs_mount and not mounts:
            row["why"] = "no unshare -m"
        else:
            try:
                row = run_scenario(sc, out, env)
            except Exception as exc:  # the campaign's own failure (a setup): named, the others go on
                row["why"] = f"the campaign failed to run it: {type(exc).__name__}: {exc}"
        with lock:
            rows.append(row)
            log.write(json.dumps(row) + "\n")
            log.flush()
            shown = f"{row['outcome']:9} {sc.area:9} {sc.name}: {row['why'][:150]}"
            print(f"[{len(rows)}/{len(chosen)}] {shown}", flush=True)

    with open(out / "outcomes.jsonl", "a") as log, ThreadPoolExecutor(jobs) as pool:
        for future in [pool.submit(one, sc) for sc in chosen]:
            future.result()
    return rows


def latest_rows(outcomes: Path) -> dict[str, dict[str, Any]]:
    """Each scenario's latest line in ``outcomes`` (an outcomes.jsonl), skipped ones left out."""
    latest = {}
    for line in outcomes.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            if row["outcome"] != "skipped":
                latest[row["name"]] = row
    return latest


if __name__ == "__main__":
    sys.exit(main())
